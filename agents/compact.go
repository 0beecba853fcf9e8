package agents

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/wire"
)

// summaryInstructions is the system message of the summarisation call.
const summaryInstructions = "You summarise conversations between a user and an assistant so that the " +
	"assistant can continue them without the full transcript. Write a concise summary that keeps every " +
	"fact, decision, name, number and open question the rest of the conversation may need. If an earlier " +
	"summary is given, fold it into the new one. Answer with the summary only."

// Compact serves POST /a1/agents/{name}/sessions/{sid}/compact (no body, or
// {}): the session is archived and 200 answers its new live successor, which
// holds the last compact_keep_last_n messages and a summary of the session's
// earlier turns (and of its own summary) written by the agent's model. A
// session with compact_keep_last_n or fewer messages, or already archived, is
// 409 session_compact_conflict. When the summarisation call fails its error is
// answered and nothing changes.
func (s *Service) Compact(w http.ResponseWriter, r *http.Request) {
	t, err := s.writeTarget(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	var empty struct{}
	if err := decodeOptional(r, &empty); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	ctx, tenant, sid := r.Context(), t.tenant(), httpx.Param(r, "sid")
	rec, msgs, err := s.loadLive(ctx, tenant, t.user, t.agent, sid)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	n := rec.CompactKeepLastN
	if len(msgs) <= n {
		httpx.WriteError(w, r, errcat.Newf(errcat.SessionCompactConflict, "session_id",
			"Session %s has %d messages; compaction needs more than compact_keep_last_n (%d).", sid, len(msgs), n))
		return
	}
	rn := &run{agent: t.agent, principal: t.principal, user: t.user, requestID: httpx.InfoFrom(ctx).RequestID}
	summary, err := s.summarise(ctx, rn, rec.Summary, msgs[:len(msgs)-n])
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	// The successor sorts as newer than its predecessor even when the clock
	// did not move.
	now := max(s.clock.Now().UnixNano(), rec.CreatedAt+1)
	succ := &sessionRecord{
		ID: newSessionID(), AgentName: t.agent.Name, UserID: rec.UserID, Status: StatusLive,
		CompactKeepLastN: n, PredecessorID: rec.ID, Summary: summary,
		CreatedAt: now, UpdatedAt: now,
	}
	kept, err := (sessionStore{s.store}).compact(ctx, tenant, rec.ID, rec.NextSeq, n, succ)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, toJSON(succ, kept, true))
}

// summarise asks the agent's model, without tools, for a summary of older
// (and of the earlier summary prev). Errors are the pre-flight checks' and the
// upstream's, as on agent chat.
func (s *Service) summarise(ctx context.Context, rn *run, prev string, older []json.RawMessage) (string, error) {
	var t strings.Builder
	if prev != "" {
		t.WriteString("Earlier summary:\n")
		t.WriteString(prev)
		t.WriteString("\n\n")
	}
	t.WriteString("Conversation:\n")
	for _, m := range older {
		var msg wire.Message
		_ = json.Unmarshal(m, &msg)
		t.WriteString(msg.Role)
		t.WriteString(": ")
		t.WriteString(transcriptText(msg.Content))
		t.WriteString("\n")
	}
	msgs := []json.RawMessage{wire.TextMessage("system", summaryInstructions), wire.TextMessage("user", t.String())}
	pf, err := preflight.CheckBuilt(ctx, &wire.Request{Model: rn.agent.Model, Messages: msgs},
		&preflight.Request{Tenant: rn.principal.Tenant, Catalog: s.catalog})
	if err != nil {
		return "", err
	}
	rn.alias, rn.model, rn.prompt = pf.Model.Alias, pf.Model, pf.PromptTokens
	ans, err := s.round(ctx, rn, msgs, false, nil)
	if err != nil {
		return "", err
	}
	defer ans.final.close()
	return strings.TrimSpace(ans.final.text), nil
}

// transcriptText renders a message content for the summary transcript: text
// as it is, parts as their text with [image] for each image.
func transcriptText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []wire.ContentPart
	_ = json.Unmarshal(raw, &parts) // what decoded is rendered
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString(" ")
		}
		if p.Type == "text" {
			b.WriteString(p.Text)
		} else {
			b.WriteString("[" + p.Type + "]")
		}
	}
	return b.String()
}
