package openai

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/upstream"
)

// ChatCompletions serves POST /v1/chat/completions (see the package doc).
func (s *Service) ChatCompletions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	body, err := httpx.ReadBody(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	req := &preflight.Request{
		Body:         body,
		Tenant:       p.Tenant,
		Catalog:      s.catalog,
		CloudConsent: strings.Join(r.Header.Values(preflight.HeaderCloudConsent), ","),
		Consents:     s.consents,
		System:       preflight.Injector(s.inject, p.Tenant.ID, httpx.UserID(r)),
		Guard:        &preflight.Guard{Classifier: s.guard, User: httpx.UserID(r)},
	}
	pf, err := preflight.Check(ctx, req)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}

	// The output cap after flooring plus the prompt estimate.
	ticket, err := s.quota.Admit(ctx, p.Tenant, pf.Model, quota.Reserve(pf.Model, pf.PromptTokens, pf.MaxOutputTokens))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	// The relay settles the ticket to the answer's usage, capturing only the
	// usage (a /v1 stream is relayed in constant memory however long it runs).
	// The first of Settle and Cancel ends a ticket, so this Cancel releases it
	// only when there is no answer to relay: the upstream call failed.
	defer ticket.Cancel(ctx)

	info := httpx.InfoFrom(ctx)
	resp, err := s.up.Do(ctx, &upstream.Request{
		Alias:     pf.Model.Alias,
		Path:      "/chat/completions",
		Body:      pf.Body,
		Stream:    pf.Stream,
		RequestID: info.RequestID,
	})
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	var notices []relay.Notice
	if resp.Fallback {
		notices = append(notices, relay.BackendFallback(resp))
	}
	res := relay.Response(w, r, resp, relay.Options{
		Stream:    pf.Stream,
		Notices:   notices,
		Applied:   pf.Applied(),
		Ticket:    ticket,
		Keepalive: s.keepalive,
		Model:     pf.Model.Alias,
		Clock:     s.clock,
		MaxBytes:  s.maxBytes,
	})
	if !res.Complete {
		info.Logger.LogAttrs(ctx, slog.LevelInfo, "chat completion not completed",
			slog.Bool("stream", res.Stream), slog.Bool("started", res.Started), slog.String("error", redact.Error(res.Err)))
	}
}
