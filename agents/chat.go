package agents

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/tools"
)

// chatRequest is the body of POST /a1/agents/{name}/chat.
type chatRequest struct {
	Messages json.RawMessage `json:"messages"`
	Stream   *bool           `json:"stream"`
}

// Chat serves POST /a1/agents/{name}/chat (see the package doc).
func (s *Service) Chat(w http.ResponseWriter, r *http.Request) {
	rn, msgs, err := s.readChat(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	fin, err := s.converse(r.Context(), rn, msgs)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	s.relay(w, r, rn, fin, nil, nil)
}

// readChat decodes and checks a chat request and the agent it names.
func (s *Service) readChat(r *http.Request) (*run, []json.RawMessage, error) {
	rn, err := s.newRun(r)
	if err != nil {
		return nil, nil, err
	}
	var q chatRequest
	if err := httpx.Decode(r, &q); err != nil {
		return nil, nil, err
	}
	msgs, err := decodeMessages(q.Messages)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkTools(rn.agent); err != nil {
		return nil, nil, err
	}
	rn.stream = q.Stream != nil && *q.Stream
	return rn, msgs, nil
}

// newRun resolves the principal, the agent of the path and the caller depth
// of an HTTP request.
func (s *Service) newRun(r *http.Request) (*run, error) {
	p, err := httpx.Principal(r)
	if err != nil {
		return nil, err
	}
	a, err := s.agent(httpx.Param(r, "name"))
	if err != nil {
		return nil, err
	}
	depth, err := headerDepth(r)
	if err != nil {
		return nil, err
	}
	return &run{
		agent:     a,
		principal: p,
		user:      httpx.UserID(r),
		depth:     depth,
		requestID: httpx.InfoFrom(r.Context()).RequestID,
		consent:   preflight.CloudConsent(r.Header),
	}, nil
}

// decodeMessages checks that messages is a non-empty array of objects; the
// pre-flight checks look into each message.
func decodeMessages(raw json.RawMessage) ([]json.RawMessage, error) {
	if wire.IsNull(raw) {
		return nil, errcat.New(errcat.MissingField, "body.messages", "messages is required.")
	}
	var msgs []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &msgs) != nil || len(msgs) == 0 {
		return nil, errcat.New(errcat.InvalidField, "body.messages", "messages must be a non-empty array of chat messages.")
	}
	for _, m := range msgs {
		if wire.IsNull(m) || m[0] != '{' {
			return nil, errcat.New(errcat.InvalidField, "body.messages", "Each message must be an object.")
		}
	}
	return msgs, nil
}

// relay sends the final answer with the run's notices; with commit, the turn
// is stored (through relay.Options.Commit) before it is acknowledged. The
// relay settles the final round's quota ticket, if still open, to the usage it
// saw (the whole reservation without one).
func (s *Service) relay(w http.ResponseWriter, r *http.Request, rn *run, fin *final, capture *relay.Capture, commit func(context.Context) error) {
	notices := rn.notices
	if rn.fallback != nil {
		notices = append(notices, relay.BackendFallback(rn.fallback))
	}
	opts := relay.Options{
		Stream:    rn.stream,
		Notices:   notices,
		Applied:   rn.applied,
		Capture:   capture,
		Ticket:    fin.ticket,
		Keepalive: s.keepalive,
		Model:     rn.alias,
		Clock:     s.clock,
		MaxBytes:  s.maxBytes,
		Commit:    commit,
	}
	res := relay.Response(w, r, fin.resp, opts)
	if !res.Complete {
		level := slog.LevelInfo
		if res.Committed {
			level = slog.LevelWarn
		}
		httpx.InfoFrom(r.Context()).Logger.LogAttrs(r.Context(), level, "agents: answer not completed",
			slog.String("agent", rn.agent.Name), slog.Bool("committed", res.Committed),
			slog.Bool("stream", res.Stream), slog.Bool("started", res.Started), slog.String("error", redact.Error(res.Err)))
	}
}

// callArgs are the arguments of agent_call.
type callArgs struct {
	Agent   *string `json:"agent"`
	Message *string `json:"message"`
}

// CallResult is the answer of agent_call.
type CallResult struct {
	// Agent is the agent that answered.
	Agent string `json:"agent"`
	// Reply is the text of its answer.
	Reply string `json:"reply"`
	// Notices are the codes of the notices its chat produced, if any.
	Notices []string `json:"notices,omitempty"`
}

const callParams = `{"type":"object","properties":{` +
	`"agent":{"type":"string","description":"Name of the agent to ask (GET /a1/agents lists them)."},` +
	`"message":{"type":"string","description":"The message to send it, as a user message."}` +
	`},"required":["agent","message"],"additionalProperties":false}`

// CallTool returns the built-in agent_call tool: arguments {"agent","message"}
// ask another agent in-process, as one user message without history, at the
// caller depth plus one (the depth of the calling agent chat, carried in the
// context; 0 from POST /v1/tools/execute), and answer {"agent","reply",
// "notices"?}. Register it in Config.Tools after New. Its scope is
// agents:write, the scope of POST /a1/agents/{name}/chat. Errors:
// recursion_depth_exceeded at depth MaxDepth or more, agent_not_found (param
// name), agent_tool_not_registered, and the called chat's own errors.
func (s *Service) CallTool() tools.Tool {
	return tools.Tool{
		Name:        CallToolName,
		Description: "Asks another agent of this gateway and returns its reply.",
		Parameters:  json.RawMessage(callParams),
		Scope:       "agents:write",
		Execute:     s.callAgent,
	}
}

func (s *Service) callAgent(ctx context.Context, call tools.Call) (any, error) {
	var args callArgs
	if err := tools.DecodeArgs(call.Arguments, &args); err != nil {
		return nil, err
	}
	switch {
	case args.Agent == nil || *args.Agent == "":
		return nil, tools.MissingArg("agent")
	case args.Message == nil:
		return nil, tools.MissingArg("message")
	}
	depth := CallerDepth(ctx) + 1
	if err := checkDepth(depth); err != nil {
		return nil, err
	}
	p := call.Principal
	if p == nil {
		p = auth.FromContext(ctx)
	}
	if p == nil || p.Tenant == nil || p.Tenant.ID != call.TenantID {
		return nil, errcat.Internal(errors.New("agents: agent_call without the caller's principal"))
	}
	a, err := s.agent(*args.Agent)
	if err != nil {
		return nil, err
	}
	if err := s.checkTools(a); err != nil {
		return nil, err
	}
	rn := &run{
		agent:     a,
		principal: p,
		user:      call.UserID,
		depth:     depth,
		requestID: httpx.InfoFrom(ctx).RequestID,
	}
	fin, err := s.converse(ctx, rn, []json.RawMessage{wire.TextMessage("user", *args.Message)})
	if err != nil {
		return nil, err
	}
	fin.close()
	out := CallResult{Agent: a.Name, Reply: fin.text}
	for _, n := range rn.notices {
		out.Notices = append(out.Notices, n.Code)
	}
	return out, nil
}
