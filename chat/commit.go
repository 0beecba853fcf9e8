package chat

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/upstream"
)

// relay sends the answer and, unless the turn is ephemeral, persists the turn
// before acknowledging it, through relay.Options.Commit: the relay calls the
// commit once the whole answer arrived and opts.Capture holds the reply, before
// it writes a JSON answer's status and body or a stream's notices and
// data: [DONE]. A failed commit answers storage_error instead (the JSON error
// envelope, or a gw.error event ending the stream without [DONE]). An answer
// that does not arrive whole (upstream failure, cut stream, client gone before
// the commit) never reaches the commit and stores nothing.
func (s *Service) relay(w http.ResponseWriter, r *http.Request, resp *upstream.Response, t *turn, opts relay.Options) {
	if !t.ephemeral {
		capture := opts.Capture
		opts.Commit = func(ctx context.Context) error { return s.commit(ctx, t, capture) }
	}
	res := relay.Response(w, r, resp, opts)
	if res.Committed && !res.Complete {
		// The turn is stored, but the client did not get the whole
		// acknowledgement (it went away, or a write failed).
		httpx.InfoFrom(r.Context()).Logger.LogAttrs(r.Context(), slog.LevelWarn,
			"chat: turn committed but the acknowledgement was not delivered", slog.String("error", redact.Error(res.Err)))
	}
}

// commit appends the user message and the captured reply to the conversation
// in one transaction. Its error is an *errcat.Error: conversation_not_found
// when the conversation turned out to be another user's, storage_error
// otherwise.
func (s *Service) commit(ctx context.Context, t *turn, c *relay.Capture) error {
	err := s.history.Append(ctx, t.tenant, t.user, t.id,
		[]json.RawMessage{t.userMsg, assistantMessage(c)}, t.newSystemPrompt, t.seen)
	if err == nil {
		return nil
	}
	e := errcat.As(err)
	if e.Code != errcat.StorageError && e.Code != errcat.ConversationNotFound {
		e = errcat.Storage(err)
	}
	return e
}

// assistantMessage is the captured reply as a stored message: content (a
// string; "" when the reply only called tools) and tool_calls in OpenAI's shape.
func assistantMessage(c *relay.Capture) json.RawMessage {
	return wire.AssistantMessage(c.Content, c.ToolCalls)
}
