package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/tenantconfig"
)

// Page-size limits of GET /a1/agents/{name}/sessions (as /c1/conversations).
const (
	DefaultLimit = httpx.DefaultPageLimit
	MaxLimit     = httpx.MaxPageLimit
)

// sessionJSON is a session on the wire. Messages is set only when the session
// is returned whole (create, get, compact).
type sessionJSON struct {
	ID                   string             `json:"id"`
	AgentName            string             `json:"agent_name"`
	UserID               string             `json:"user_id"`
	Status               string             `json:"status"`
	CompactKeepLastN     int                `json:"compact_keep_last_n"`
	SuccessorSessionID   *string            `json:"successor_session_id"`
	PredecessorSessionID *string            `json:"predecessor_session_id"`
	Summary              *string            `json:"summary"`
	MessageCount         int                `json:"message_count"`
	CreatedAt            string             `json:"created_at"`
	UpdatedAt            string             `json:"updated_at"`
	Messages             *[]json.RawMessage `json:"messages,omitempty"`
}

func toJSON(rec *sessionRecord, msgs []json.RawMessage, withMessages bool) sessionJSON {
	out := sessionJSON{
		ID: rec.ID, AgentName: rec.AgentName, UserID: rec.UserID, Status: rec.Status,
		CompactKeepLastN:     rec.CompactKeepLastN,
		SuccessorSessionID:   optional(rec.SuccessorID),
		PredecessorSessionID: optional(rec.PredecessorID),
		Summary:              optional(rec.Summary),
		MessageCount:         rec.MessageCount,
		CreatedAt:            stamp(rec.CreatedAt),
		UpdatedAt:            stamp(rec.UpdatedAt),
	}
	if withMessages {
		if msgs == nil {
			msgs = []json.RawMessage{}
		}
		out.Messages = &msgs
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func stamp(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339) }

// createRequest is the body of POST /a1/agents/{name}/sessions.
type createRequest struct {
	CompactKeepLastN *int `json:"compact_keep_last_n"`
}

// CreateSession serves POST /a1/agents/{name}/sessions: 201 with the new live
// session (messages []).
func (s *Service) CreateSession(w http.ResponseWriter, r *http.Request) {
	t, err := s.writeTarget(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	var q createRequest
	if err := decodeOptional(r, &q); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	cfg, err := tenantconfig.Load(r.Context(), s.store, t.principal.Tenant)
	if err != nil {
		httpx.WriteError(w, r, errcat.Storage(err))
		return
	}
	n := cfg.CompactKeepLastN
	if q.CompactKeepLastN != nil {
		n = *q.CompactKeepLastN
		if hi := tenantconfig.Cap(t.principal.Tenant, tenantconfig.KeyCompactKeepLastN); n < 1 || n > hi {
			httpx.WriteError(w, r, errcat.Newf(errcat.InvalidField, "body.compact_keep_last_n",
				"compact_keep_last_n must be an integer from 1 to %d.", hi))
			return
		}
	}
	now := s.clock.Now().UnixNano()
	rec := &sessionRecord{
		ID: newSessionID(), AgentName: t.agent.Name, UserID: t.user, Status: StatusLive,
		CompactKeepLastN: n, CreatedAt: now, UpdatedAt: now,
	}
	if err := (sessionStore{s.store}).create(r.Context(), t.tenant(), rec); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, toJSON(rec, nil, true))
}

// ListSessions serves GET /a1/agents/{name}/sessions?limit=&offset=: the
// caller's sessions of the agent (a tenant admin without GW-User-Id: every
// user's), newest first, as {"object":"list","data":[session without
// messages...],"limit","offset","has_more"}.
func (s *Service) ListSessions(w http.ResponseWriter, r *http.Request) {
	httpx.HandleList(w, r, s.readTarget, func(ctx context.Context, t target, pg httpx.Page) ([]sessionJSON, bool, error) {
		page, more, err := (sessionStore{s.store}).list(ctx, t.tenant(), t.user, t.agent.Name, pg)
		if err != nil {
			return nil, false, err
		}
		data := make([]sessionJSON, len(page))
		for i, rec := range page {
			data[i] = toJSON(rec, nil, false)
		}
		return data, more, nil
	})
}

// GetSession serves GET /a1/agents/{name}/sessions/{sid}: the session with its
// summary and messages.
func (s *Service) GetSession(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, s.readTarget, func(ctx context.Context, t target) (sessionJSON, error) {
		rec, msgs, err := s.loadSession(ctx, t.tenant(), t.user, t.agent, httpx.Param(r, "sid"), true)
		if err != nil {
			return sessionJSON{}, err
		}
		return toJSON(rec, msgs, true), nil
	})
}

// Lineage serves GET /a1/agents/{name}/sessions/{sid}/lineage:
// {"sessions":[{"id","status","successor_session_id"}...]}, the whole chain
// of compactions sid belongs to, oldest first.
func (s *Service) Lineage(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, s.readTarget, func(ctx context.Context, t target) (map[string][]lineageLink, error) {
		sid := httpx.Param(r, "sid")
		if _, _, err := s.loadSession(ctx, t.tenant(), t.user, t.agent, sid, false); err != nil {
			return nil, err
		}
		chain, err := (sessionStore{s.store}).lineage(ctx, t.tenant(), sid)
		if err != nil {
			return nil, err
		}
		out := make([]lineageLink, len(chain))
		for i, rec := range chain {
			out[i] = lineageLink{ID: rec.ID, Status: rec.Status, SuccessorSessionID: optional(rec.SuccessorID)}
		}
		return map[string][]lineageLink{"sessions": out}, nil
	})
}

// lineageLink is one session of a lineage.
type lineageLink struct {
	ID                 string  `json:"id"`
	Status             string  `json:"status"`
	SuccessorSessionID *string `json:"successor_session_id"`
}

// messageRequest is the body of POST /a1/agents/{name}/sessions/{sid}/messages.
type messageRequest struct {
	Message json.RawMessage `json:"message"`
	Stream  *bool           `json:"stream"`
}

// PostMessage serves POST /a1/agents/{name}/sessions/{sid}/messages: the
// agent's answer to the session's history plus message, relayed as on
// POST /a1/agents/{name}/chat; the user message and the reply are stored in
// one transaction before the answer is acknowledged.
func (s *Service) PostMessage(w http.ResponseWriter, r *http.Request) {
	rn, err := s.newRun(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	if rn.user, err = requireUser(r); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	var q messageRequest
	if err := httpx.Decode(r, &q); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	userMsg, err := userMessage(q.Message)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	rn.stream, rn.session = q.Stream != nil && *q.Stream, true
	tenant, sid := rn.principal.Tenant.ID, httpx.Param(r, "sid")
	rec, stored, err := s.loadLive(r.Context(), tenant, rn.user, rn.agent, sid)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	if err := s.checkTools(rn.agent); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	msgs := make([]json.RawMessage, 0, len(stored)+2)
	if rec.Summary != "" {
		msgs = append(msgs, summaryMessage(rec.Summary))
	}
	msgs = append(append(msgs, stored...), userMsg)
	fin, err := s.converse(r.Context(), rn, msgs)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	w.Header().Set(HeaderSessionID, rec.ID)
	capture := new(relay.Capture)
	s.relay(w, r, rn, fin, capture, func(ctx context.Context) error {
		reply := wire.TextMessage("assistant", capture.Content)
		return (sessionStore{s.store}).appendTurn(ctx, tenant, rec.ID, []json.RawMessage{userMsg, reply}, s.clock.Now().UnixNano())
	})
}

// HeaderSessionID names the session on the answer of a session message.
const HeaderSessionID = "GW-Session-Id"

// summaryMessage is the system message that carries a session's summary
// upstream, after the agent's system prompt and before the kept messages.
func summaryMessage(summary string) json.RawMessage {
	return wire.TextMessage("system", "Summary of the earlier conversation:\n"+summary)
}

// userMessage checks the message of a session turn, a string or a non-empty
// array of content parts, and returns it as a user message.
func userMessage(raw json.RawMessage) (json.RawMessage, error) {
	if wire.IsNull(raw) {
		return nil, errcat.New(errcat.MissingField, "body.message", "message is required.")
	}
	switch raw[0] {
	case '"':
	case '[':
		var parts []json.RawMessage
		if json.Unmarshal(raw, &parts) != nil || len(parts) == 0 {
			return nil, errcat.New(errcat.InvalidField, "body.message", "message must be a string or a non-empty array of content parts.")
		}
		for i, p := range parts {
			if wire.IsNull(p) || p[0] != '{' {
				return nil, errcat.Newf(errcat.InvalidField, fmt.Sprintf("body.message[%d]", i), "Each content part must be an object.")
			}
		}
	default:
		return nil, errcat.New(errcat.InvalidField, "body.message", "message must be a string or an array of content parts.")
	}
	b, err := wire.UserMessage(raw)
	if err != nil {
		return nil, errcat.Internal(err)
	}
	return b, nil
}

// target is what a session request acts on: who calls, the agent of the
// path, and the user (GW-User-Id; "" for a tenant admin's tenant-wide read).
type target struct {
	principal *auth.Principal
	agent     *Agent
	user      string
}

// tenant is the ID of the caller's tenant.
func (t target) tenant() string { return t.principal.Tenant.ID }

// writeTarget resolves the target of a session write, whose user is
// required.
func (s *Service) writeTarget(r *http.Request) (target, error) { return s.target(r, false) }

// readTarget resolves the target of a session read, where a tenant admin may
// omit GW-User-Id for the tenant-wide view (user "").
func (s *Service) readTarget(r *http.Request) (target, error) { return s.target(r, true) }

// target resolves, in this order, the principal, the agent and the user of a
// session request (read: see readTarget).
func (s *Service) target(r *http.Request, read bool) (target, error) {
	p, err := httpx.Principal(r)
	if err != nil {
		return target{}, err
	}
	a, err := s.agent(httpx.Param(r, "name"))
	if err != nil {
		return target{}, err
	}
	user := httpx.UserID(r)
	if user == "" && !(read && p.Role == auth.RoleTenantAdmin) {
		_, err := requireUser(r) // user is "": its missing_field
		return target{}, err
	}
	return target{principal: p, agent: a, user: user}, nil
}

// loadLive is loadSession with the messages, for a write: an archived
// session is 409 session_compact_conflict naming its successor (errArchived).
func (s *Service) loadLive(ctx context.Context, tenant, user string, a *Agent, sid string) (*sessionRecord, []json.RawMessage, error) {
	rec, msgs, err := s.loadSession(ctx, tenant, user, a, sid, true)
	if err != nil {
		return nil, nil, err
	}
	if rec.Status != StatusLive {
		return nil, nil, errArchived(rec)
	}
	return rec, msgs, nil
}

// loadSession returns session sid as user (any user of the tenant when user
// is "") sees it: absent, or another user's, is 404 session_not_found; a
// session of another agent is 400 session_agent_mismatch.
func (s *Service) loadSession(ctx context.Context, tenant, user string, a *Agent, sid string, withMessages bool) (*sessionRecord, []json.RawMessage, error) {
	rec, msgs, err := (sessionStore{s.store}).get(ctx, tenant, sid, withMessages)
	if err != nil {
		return nil, nil, err
	}
	if rec == nil || (user != "" && rec.UserID != user) {
		return nil, nil, errSessionNotFound(sid)
	}
	if rec.AgentName != a.Name {
		return nil, nil, errcat.Newf(errcat.SessionAgentMismatch, "session_id",
			"Session %s belongs to agent %s, not %s.", sid, rec.AgentName, a.Name)
	}
	return rec, msgs, nil
}

// decodeOptional decodes an optional body: an empty body is {}.
func decodeOptional(r *http.Request, v any) error {
	b, err := httpx.ReadBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	return httpx.DecodeBytes(b, v)
}
