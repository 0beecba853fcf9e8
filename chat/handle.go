package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/tenantconfig"
	"github.com/chatgw/gateway/upstream"
)

// turn is one request: its checked body and what it resolved to.
type turn struct {
	principal        *auth.Principal // who calls: looked up once, in readTurn
	q                *chatRequest
	images           []imageRef
	tenant, user, id string
	ephemeral        bool
	stream           bool
	alias            string
	newSystemPrompt  string          // stored with the turn when the conversation is new
	userMsg          json.RawMessage // the current user message, stored with the reply
	seen             []byte          // what read saw of the conversation, for History.Append
	trimmed          bool            // history was left out by keep_last_turns
}

// Chat serves POST /c1/chat.
func (s *Service) Chat(w http.ResponseWriter, r *http.Request) {
	t, err := readTurn(w, r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	pf, err := s.prepare(r, t)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	// The output cap after flooring plus the prompt estimate.
	ticket, err := s.quota.Admit(r.Context(), t.principal.Tenant, pf.Model, quota.Reserve(pf.Model, pf.PromptTokens, pf.MaxOutputTokens))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	// The reply is captured to be stored; the relay settles the ticket to its
	// usage (capturing only the usage of an ephemeral turn, which stores
	// nothing). The first of Settle and Cancel ends a ticket, so this Cancel
	// releases it only when there is no answer to relay: the upstream call
	// failed.
	var capture *relay.Capture
	if !t.ephemeral {
		capture = new(relay.Capture)
	}
	defer ticket.Cancel(r.Context())
	resp, err := s.upstream.Do(r.Context(), &upstream.Request{
		Alias:     t.alias,
		Path:      "/chat/completions",
		Body:      pf.Body,
		Stream:    t.stream,
		RequestID: httpx.InfoFrom(r.Context()).RequestID,
		// Traced as gen_ai.conversation.id.
		ConversationID: t.id,
	})
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	var notices []relay.Notice
	if t.trimmed {
		notices = append(notices, relay.Notice{Code: relay.NoticeHistoryTrimmed, Message: fmt.Sprintf(
			"Only the last %d turns of the conversation's history were sent to the model (keep_last_turns); the full history is kept.", *t.q.KeepLastTurns)})
	}
	if resp.Fallback {
		notices = append(notices, relay.BackendFallback(resp))
	}
	s.relay(w, r, resp, t, relay.Options{
		Stream:    t.stream,
		Notices:   notices,
		Applied:   pf.Applied(),
		Capture:   capture,
		Ticket:    ticket,
		Model:     t.alias,
		Clock:     s.clock,
		Keepalive: s.keepalive,
		MaxBytes:  s.maxReplyBytes(t, pf.Model.Window()),
	})
}

// maxReplyBytes is the most of a reply the turn holds: the configured cap,
// and for a stored turn no more than the model's context window holds by the pre-flight estimate
// (preflight.BytesPerToken), because a stored reply that alone overflows the
// window would make every later turn of the conversation answer
// context_window_exceeded.
func (s *Service) maxReplyBytes(t *turn, window int) int64 {
	limit := s.maxBytes
	if limit <= 0 {
		limit = relay.DefaultMaxBytes
	}
	if window > 0 && !t.ephemeral {
		limit = min(limit, int64(window)*preflight.BytesPerToken)
	}
	return limit
}

// readTurn decodes and checks the request and settles the conversation id,
// which it sends back in the response headers as soon as it is known.
func readTurn(w http.ResponseWriter, r *http.Request) (*turn, error) {
	p, err := httpx.Principal(r)
	if err != nil {
		return nil, err
	}
	t := &turn{principal: p, tenant: p.Tenant.ID, user: httpx.UserID(r)}
	if t.user == "" {
		// The root's route rule answers this before the handler runs; checked
		// again because a conversation must have an owner.
		return nil, errcat.New(errcat.MissingField, "headers.gw-user-id", "The GW-User-Id header is required.")
	}
	if hid, err := headerConversationID(r); err == nil && hid != "" {
		setConversationHeaders(w, hid)
	}
	if t.q, err = decodeRequest(r); err != nil {
		return nil, err
	}
	if t.id, err = conversationID(r, t.q.ConversationID); err != nil {
		return nil, err
	}
	if t.id != "" {
		setConversationHeaders(w, t.id)
	}
	if t.images, err = t.q.validate(); err != nil {
		return nil, err
	}
	if t.id == "" {
		t.id = newUUID()
		setConversationHeaders(w, t.id)
	}
	t.ephemeral = t.q.Ephemeral != nil && *t.q.Ephemeral
	t.stream = t.q.Stream == nil || *t.q.Stream
	return t, nil
}

// prepare resolves the alias, loads the history and builds the upstream body,
// checked and rewritten by the shared pre-flight checks.
func (s *Service) prepare(r *http.Request, t *turn) (*preflight.Result, error) {
	ctx := r.Context()
	st, err := s.read(ctx, t)
	if err != nil {
		return nil, err
	}
	q := t.q
	t.alias = resolveAlias(q.Model, q.Provider, st.cfg.DefaultModel)
	t.seen = st.seen
	history := st.history
	if len(history) == 0 && q.SystemPrompt != nil && *q.SystemPrompt != "" {
		t.newSystemPrompt = *q.SystemPrompt
		history = []json.RawMessage{systemMessage(t.newSystemPrompt)}
	}
	var sent []json.RawMessage
	sent, t.trimmed = trimHistory(history, q.KeepLastTurns)
	sent = replayHistory(sent)
	if t.userMsg, err = userMessage(q.Message, t.images); err != nil {
		return nil, errcat.Internal(err)
	}
	pf, err := preflight.CheckBuilt(ctx, &wire.Request{
		Model:          t.alias,
		Messages:       append(sent[:len(sent):len(sent)], t.userMsg),
		Stream:         t.stream,
		StreamOptions:  relay.UsageOptions(t.stream),
		MaxTokens:      q.MaxTokens,
		Temperature:    q.Temperature,
		Tools:          nonNull(q.Tools),
		ToolChoice:     nonNull(q.ToolChoice),
		ResponseFormat: nonNull(q.ResponseFormat),
		Attachments:    nonNull(q.Attachments),
	}, &preflight.Request{
		Tenant:       t.principal.Tenant,
		Catalog:      s.catalog,
		System:       func(context.Context) (string, error) { return st.system, nil },
		CloudConsent: preflight.CloudConsent(r.Header),
		Consents:     s.consents,
		Guard:        &preflight.Guard{Classifier: s.guard, NewOnly: true, User: t.user},
	})
	if err != nil {
		return nil, err
	}
	if !wire.IsNull(q.Attachments) {
		// The attachments became parts of the current user message: store the
		// message as the model saw it.
		msgs, err := pf.Messages()
		if err != nil {
			return nil, errcat.Internal(err)
		}
		t.userMsg = msgs[len(msgs)-1]
	}
	return pf, nil
}

// stored is what a turn reads of the store before calling upstream.
type stored struct {
	cfg     tenantconfig.Config
	history []json.RawMessage
	seen    []byte // History.LoadTx's, for Append
	system  string // the injected system text, "" for none
}

// read reads the tenant's config, the conversation's history and the
// injected prompts and memory in one read transaction, a consistent view of
// the three; on a store that reads ahead (store.Prefetcher) their reads go
// out together, in one round trip to a database server.
func (s *Service) read(ctx context.Context, t *turn) (stored, error) {
	var st stored
	err := s.store.View(ctx, func(tx store.Tx) error {
		if pf, ok := tx.(store.Prefetcher); ok {
			pf.Prefetch(s.reads(t)...)
		}
		var err error
		if st.cfg, err = tenantconfig.LoadTx(tx, t.principal.Tenant); err != nil {
			return errcat.Storage(fmt.Errorf("chat: tenant config: %w", err))
		}
		if st.history, st.seen, err = s.history.LoadTx(tx, t.tenant, t.user, t.id); err != nil {
			return err
		}
		if s.inject == nil {
			return nil
		}
		if st.system, err = s.inject(tx, t.tenant, t.user); err != nil {
			return errcat.As(err) // an error the injector did not catalogue is internal
		}
		return nil
	})
	return st, errcat.FromStore(err)
}

// reads are the first reads of read's transaction, which do not depend on
// one another: a store that reads ahead fetches them in one round trip.
func (s *Service) reads(t *turn) []store.Read {
	r := make([]store.Read, 0, 8)
	r = tenantconfig.AppendReads(r, t.principal.Tenant)
	r = s.history.AppendReads(r, t.tenant, t.id)
	if s.inject != nil && s.injectRds != nil {
		r = s.injectRds(r, t.tenant, t.user)
	}
	return r
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if wire.IsNull(raw) {
		return nil
	}
	return raw
}
