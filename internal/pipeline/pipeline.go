// Package pipeline is the one pipeline of the gateway's stateless chat
// endpoints, whatever API their clients speak: POST /v1/chat/completions
// (OpenAI Chat Completions), POST /v1/messages (Anthropic's Messages API) and
// POST /v1/responses (OpenAI's Responses API, which stores its answers in
// Answer.Commit), and the next client API after them. "The local backend
// and the cloud hosts stay OpenAI Chat-Completions backends: the gateway
// translates at its edge, and every rule of the spec applies to these routes
// exactly as to /v1/chat/completions" (issue 17): a family decodes its
// client's request into a chat-completions body and encodes the answer
// (relay.Encoder); what lies between is this package, the same steps in the
// same order for every one of them:
//
//  1. Check: the pre-flight checks and rewrites (internal/preflight): the
//     model allowlist, max_tokens flooring, images, the memory and
//     system-prompt injection for a GW-User-Id, the context window, the
//     content guard, cloud consent.
//  2. Forward: admission against the tenant's daily quota (a ticket
//     reserving the output cap plus the prompt estimate), the upstream call
//     with its fallback before the first byte (and the backend_fallback
//     notice), and the relay of the answer, which settles the ticket, sends
//     keepalives, bounds what it holds and ends the stream on shutdown.
//
// Each step hands the next what it computed (the checked body and its
// estimate), so that nothing is parsed twice. Errors are written with
// httpx.WriteError, in the route's error shape.
//
// /c1 and agent chat run the same preflight and relay, with the history,
// storage and tool loop of their own around them.
package pipeline

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
)

// Chat is the pipeline of the stateless chat endpoints of one gateway. A
// family builds it from its Config with New; it is safe for concurrent use.
type Chat struct {
	// Upstream sends the model calls. Required.
	Upstream upstream.Upstream
	// Catalog is the model catalog with backend statuses. Required.
	Catalog *upstream.Catalog
	// Consents keeps the persisted cloud-consent grants; nil persists none
	// (;persist is ignored and only the header grants consent).
	Consents preflight.Consents
	// Inject returns the system message to put first in a chat of userID in
	// tenantID (memory and prompts); called only for a request with a
	// GW-User-Id header ("Without it, per-user memory injection is
	// skipped"). Nil injects nothing.
	Inject func(ctx context.Context, tenantID, userID string) (string, error)
	// Classifier is the content guard of audit and block tenants; nil means
	// the gateway has none (preflight.Guard).
	Classifier guard.Classifier
	// Quota keeps the tenants' daily budgets; nil means no quotas.
	Quota *quota.Accountant
	// Clock gives the created time of notices of an empty stream; nil is the
	// wall clock.
	Clock clock.Clock
	// Keepalive is relay.Options.Keepalive: 0 is relay.DefaultKeepalive.
	Keepalive time.Duration
	// MaxBytes is relay.Options.MaxBytes: 0 is relay.DefaultMaxBytes.
	MaxBytes int64
}

// New returns c, the fields a chat family's Config gives (openai's,
// anthropic's and responses' Configs each have them, public and with the
// same meaning; the gateway gives the three the same values), with their
// defaults: a nil Clock is clock.Wall, and Consents keeps the tenants'
// persisted cloud-consent grants in st (bucket consent/grants, shared by
// /v1 and /c1), a nil st persisting none. It is the one place a family's
// Config becomes the pipeline, so that the families build the same one.
func New(c Chat, st store.Store) *Chat {
	if c.Clock == nil {
		c.Clock = clock.Wall{}
	}
	if st != nil {
		c.Consents = preflight.NewStoreConsents(st, c.Clock)
	}
	return &c
}

// request is the pre-flight request of body for r's caller p.
func (c *Chat) request(r *http.Request, p *auth.Principal, body []byte) *preflight.Request {
	user := httpx.UserID(r)
	return &preflight.Request{
		Body:         body,
		Tenant:       p.Tenant,
		Catalog:      c.Catalog,
		CloudConsent: preflight.CloudConsent(r.Header),
		Consents:     c.Consents,
		System:       preflight.Injector(c.Inject, p.Tenant.ID, user),
		Guard:        &preflight.Guard{Classifier: c.Classifier, User: user},
	}
}

// Check runs the pre-flight checks of body, a chat-completions request (the
// client's own on /v1/chat/completions, or one the gateway translated from
// another API), for r's caller p: step 1 of the package doc. The params of
// its errors are the chat-completions field names (preflight.Request with
// no ParamPrefix); a family whose client named them otherwise renames them.
func (c *Chat) Check(r *http.Request, p *auth.Principal, body []byte) (*preflight.Result, error) {
	return preflight.Check(r.Context(), c.request(r, p, body))
}

// CheckRequest is how a stateless chat handler starts, before Forward: it
// finds r's caller (httpx.Principal), has the family read r into the
// chat-completions body it becomes (read, given the caller: the family's
// own decoding and translation, with its own errors), and runs Check on
// that body, the params of Check's errors renamed for the client's API by
// names (ClientError; nil keeps them). It returns the caller and Check's
// result; on the first failure it writes the error to w and returns a nil
// result.
func (c *Chat) CheckRequest(w http.ResponseWriter, r *http.Request, names map[string]string,
	read func(*auth.Principal) ([]byte, error)) (*auth.Principal, *preflight.Result) {
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return nil, nil
	}
	body, err := read(p)
	if err != nil {
		httpx.WriteError(w, r, err)
		return nil, nil
	}
	pf, err := c.Check(r, p, body)
	if err != nil {
		httpx.WriteError(w, r, ClientError(err, names))
		return nil, nil
	}
	return p, pf
}

// ClientError returns err, an error of Check or Count, with its param
// renamed by names, from the chat-completions field the pre-flight checks
// name to the field of the API the client speaks
// ("messages[].content[].image_url.url" to Anthropic's
// "messages[].content[].source"); err as it is when names has no entry for
// its param.
func ClientError(err error, names map[string]string) error {
	e := errcat.As(err)
	p, ok := names[e.Param]
	if !ok {
		return err
	}
	renamed := *e
	renamed.Param = p
	return &renamed
}

// Count returns the prompt estimate of body for r's caller p, the injected
// system message included, after the checks about the request itself
// (preflight.Count): what Check would put in Result.PromptTokens, without
// sending anything.
func (c *Chat) Count(r *http.Request, p *auth.Principal, body []byte) (int, error) {
	return preflight.Count(r.Context(), c.request(r, p, body))
}

// Answer says how Forward answers a request: in which client API, and what
// the family keeps of the answer. The zero Answer relays the
// chat-completions answer as it is and keeps nothing.
type Answer struct {
	// Encoder writes the answer in the client's API (relay.Options.Encoder:
	// Anthropic's Messages API, the Responses API); nil relays the upstream's
	// chat-completions answer as it is.
	Encoder relay.Encoder
	// Capture and Commit are relay.Options': a family that stores the answer
	// (a stored response) captures it and stores it in Commit, before the
	// client's answer is acknowledged. Nil keeps nothing.
	Capture *relay.Capture
	Commit  func(ctx context.Context) error
}

// Forward admits pf, a request that passed Check, against p's tenant's
// quota, sends it upstream and relays the answer to w as a says: step 2 of
// the package doc. Every failure is written to w. It returns how the relay
// ended; an upstream call that failed (or a quota refusal) is a Result that
// did not start, with its error.
func (c *Chat) Forward(w http.ResponseWriter, r *http.Request, p *auth.Principal, pf *preflight.Result, a Answer) relay.Result {
	ctx := r.Context()
	// The output cap after flooring plus the prompt estimate.
	ticket, err := c.Quota.Admit(ctx, p.Tenant, pf.Model, quota.Reserve(pf.Model, pf.PromptTokens, pf.MaxOutputTokens))
	if err != nil {
		httpx.WriteError(w, r, err)
		return relay.Result{Err: err}
	}
	// The relay settles the ticket to the answer's usage, capturing only the
	// usage without an Answer.Capture (a stream is then relayed in constant
	// memory however long it runs).
	// The first of Settle and Cancel ends a ticket, so this Cancel releases it
	// only when there is no answer to relay: the upstream call failed.
	defer ticket.Cancel(ctx)

	info := httpx.InfoFrom(ctx)
	resp, err := c.Upstream.Do(ctx, &upstream.Request{
		Alias:     pf.Model.Alias,
		Path:      "/chat/completions",
		Body:      pf.Body,
		Stream:    pf.Stream,
		RequestID: info.RequestID,
	})
	if err != nil {
		httpx.WriteError(w, r, err)
		return relay.Result{Err: err}
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
		Keepalive: c.Keepalive,
		Model:     pf.Model.Alias,
		Clock:     c.Clock,
		MaxBytes:  c.MaxBytes,
		Encoder:   a.Encoder,
		Capture:   a.Capture,
		Commit:    a.Commit,
	})
	if !res.Complete {
		info.Logger.LogAttrs(ctx, slog.LevelInfo, "chat completion not completed",
			slog.Bool("stream", res.Stream), slog.Bool("started", res.Started), slog.String("error", redact.Error(res.Err)))
	}
	return res
}
