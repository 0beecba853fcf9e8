package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/sseread"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/tools"
	"github.com/chatgw/gateway/upstream"
)

// maxEventSize bounds one upstream SSE event read by the tool loop (as the
// relay does).
const maxEventSize = 1 << 20

// run is one agent chat: who asks, at which depth, and what it produced.
type run struct {
	agent     *Agent
	principal *auth.Principal
	user      string
	depth     int
	stream    bool
	requestID string
	consent   string // GW-Cloud-Consent of the request, or ""
	// session is set on a session message: the history is stored and was
	// classified when it was written, so the guard classifies only the new
	// message.
	session bool

	notices  []relay.Notice
	fallback *upstream.Response // the last round answered by a fallback backend
	applied  string
	alias    string

	// model is the catalog entry of alias and prompt the prompt estimate of
	// the next upstream call, for the quota reservation.
	model  *upstream.ModelInfo
	prompt int
}

// final is the answer of the last round, to relay to the client.
type final struct {
	// resp is the upstream answer; its Body replays what the loop already read
	// followed by the rest of the upstream body.
	resp *upstream.Response
	// text is the reply's content when the loop read the whole answer (every
	// non-streaming chat), "" otherwise.
	text string
	// ticket is the round's quota ticket while its usage is still to come
	// (a stream handed over), nil when the round was settled already or has
	// no budget. Whoever consumes resp settles it (relay, close).
	ticket *quota.Ticket
}

// close closes the answer unread and settles its ticket, if still open, to
// the whole reservation: the usage was not read. Settle needs no request
// context: it writes even after the client went away.
func (f *final) close() {
	f.resp.Body.Close()
	f.ticket.Settle(context.Background(), -1)
}

// converse runs the agent's tool loop over msgs (OpenAI chat messages without
// the agent's system prompt) and returns the last round's answer. Every error
// is an *errcat.Error: the pre-flight checks' (on the first round's body), or
// an upstream failure mapped as on /v1.
func (s *Service) converse(ctx context.Context, rn *run, msgs []json.RawMessage) (*final, error) {
	defs, err := s.toolDefs(rn.agent)
	if err != nil {
		return nil, errcat.Internal(err)
	}
	history, err := s.check(ctx, rn, msgs, defs)
	if err != nil {
		return nil, err
	}
	loop := toolLoop{agent: rn.agent, offered: len(defs) > 0, stripped: map[string]bool{}}
	for {
		ans, err := s.round(ctx, rn, history, loop.withTools(rn), defs)
		if err != nil {
			return nil, err
		}
		if ans.final != nil {
			return ans.final, nil
		}
		kept := loop.keep(rn, ans.calls)
		if len(kept) == 0 {
			// Only calls of tools the agent does not list: ask again without
			// tools, so that the model answers in text.
			loop.forceFinal = true
			continue
		}
		loop.rounds++
		history = s.runTools(ctx, rn, history, ans.content, kept, loop.rounds)
	}
}

// check runs the pre-flight checks on the first round (the agent's system
// prompt, msgs and the tool definitions), records on rn what they resolved,
// and returns the checked history the loop continues from.
func (s *Service) check(ctx context.Context, rn *run, msgs []json.RawMessage, defs json.RawMessage) ([]json.RawMessage, error) {
	a := rn.agent
	var first []json.RawMessage
	if sp := a.systemPrompt(); sp != "" {
		first = append(first, wire.TextMessage("system", sp))
	}
	first = append(first, msgs...)
	pf, err := preflight.CheckBuilt(ctx, &wire.Request{Model: a.Model, Messages: first, Stream: rn.stream, Tools: defs}, &preflight.Request{
		Tenant:       rn.principal.Tenant,
		Catalog:      s.catalog,
		CloudConsent: rn.consent,
		System:       preflight.Injector(s.inject, rn.principal.Tenant.ID, rn.user),
		Guard:        &preflight.Guard{Classifier: s.guard, NewOnly: rn.session, User: rn.user},
	})
	if err != nil {
		return nil, err
	}
	rn.applied, rn.alias = pf.Applied(), pf.Model.Alias
	rn.model, rn.prompt = pf.Model, pf.PromptTokens
	history, err := pf.Messages()
	if err != nil {
		return nil, errcat.Internal(fmt.Errorf("agents: %w", err))
	}
	return history, nil
}

// toolLoop is the state of an agent's tool loop between rounds.
type toolLoop struct {
	agent      *Agent
	offered    bool            // the agent has tools
	rounds     int             // rounds whose tool calls ran
	forceFinal bool            // the last calls were all stripped: answer in text
	stripped   map[string]bool // names of the tools stripped so far
}

// withTools reports whether the next round offers the tools: not once the
// loop hit the agent's cap (which adds the tool_loop_capped notice), nor
// after a round whose calls were all stripped.
func (l *toolLoop) withTools(rn *run) bool {
	if !l.offered || l.forceFinal {
		return false
	}
	if limit := l.agent.maxRounds(); l.rounds >= limit {
		rn.notices = append(rn.notices, relay.Notice{Code: relay.NoticeToolLoopCapped, Message: fmt.Sprintf(
			"The tool loop of agent %s reached its cap of %d rounds; the answer was made without further tool calls.", l.agent.Name, limit)})
		return false
	}
	return true
}

// keep returns the calls of tools the agent lists; the others are stripped,
// which the tool_call_stripped notice reports (once, naming them all).
func (l *toolLoop) keep(rn *run, calls []wire.ToolCall) []wire.ToolCall {
	var kept []wire.ToolCall
	for _, c := range calls {
		if l.agent.hasTool(c.Function.Name) {
			kept = append(kept, c)
			continue
		}
		if !l.stripped[c.Function.Name] {
			if len(l.stripped) == 0 {
				rn.notices = append(rn.notices, relay.Notice{Code: relay.NoticeToolCallStripped})
			}
			l.stripped[c.Function.Name] = true
		}
	}
	if len(l.stripped) > 0 {
		rn.notices[indexOf(rn.notices, relay.NoticeToolCallStripped)].Message = strippedMessage(l.agent.Name, l.stripped)
	}
	return kept
}

// runTools executes the kept calls of round and returns history with the
// assistant's tool-call message and the tool results appended; the prompt
// estimate grows by what was appended.
func (s *Service) runTools(ctx context.Context, rn *run, history []json.RawMessage, content string, kept []wire.ToolCall, round int) []json.RawMessage {
	for i := range kept {
		if kept[i].ID == "" {
			kept[i].ID = fmt.Sprintf("call_%d_%d", round, i)
		}
		kept[i].Type = "function"
	}
	results := make([]json.RawMessage, len(kept))
	for i, c := range kept {
		results[i] = s.execute(ctx, rn, c)
		if strings.TrimSpace(c.Function.Arguments) == "" || !validArgs(c.Function.Arguments) {
			// Strict backends reject a replayed call whose arguments are
			// not a JSON object; the tool result reports the error.
			kept[i].Function.Arguments = "{}"
		}
	}
	history = append(history, wire.AssistantMessage(content, kept))
	history = append(history, results...)
	for _, m := range history[len(history)-len(results)-1:] {
		rn.prompt += messageTokens(m)
	}
	return history
}

// strippedMessage is the message of the tool_call_stripped notice.
func strippedMessage(agent string, names map[string]bool) string {
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	slices.Sort(list)
	return fmt.Sprintf("The model called %s, which agent %s does not list; those calls were not executed.",
		strings.Join(list, ", "), agent)
}

func indexOf(ns []relay.Notice, code string) int {
	for i, n := range ns {
		if n.Code == code {
			return i
		}
	}
	return -1
}

// toolDefs returns the agent's registered tools as the tools member of a
// request, OpenAI tool definitions in the agent's order, or nil when it has
// none.
func (s *Service) toolDefs(a *Agent) (json.RawMessage, error) {
	var defs []wire.Tool
	for _, name := range a.Tools {
		t, ok := s.tools.Lookup(name)
		if !ok {
			continue
		}
		params := t.Parameters
		if params == nil {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		defs = append(defs, wire.Tool{Type: "function", Function: wire.Function{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	if len(defs) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(defs)
	if err != nil {
		return nil, fmt.Errorf("agents: tool definitions: %w", err)
	}
	return b, nil
}

// answer is the outcome of one round: a final answer to relay, or the tool
// calls of the model with the text that came with them.
type answer struct {
	final   *final
	content string
	calls   []wire.ToolCall
}

// round makes one upstream call. Without tools, a streaming round is final at
// once and relayed live. Otherwise the answer is read until it is known to be
// a tool call (read whole) or a text answer (handed over, with what was read
// replayed first).
//
// The call is admitted against the tenant's quota first (a refusal is
// returned before the upstream is called). Its ticket is cancelled when the
// upstream call fails, settled here to the usage of an answer read whole (or
// to the whole reservation when it had none or failed while being read), and
// left on the final answer when the stream was handed over.
func (s *Service) round(ctx context.Context, rn *run, history []json.RawMessage, withTools bool, defs json.RawMessage) (*answer, error) {
	// StreamOptions asks a streamed round for its usage (quota settlement).
	b := wire.Request{Model: rn.alias, Messages: history, Stream: rn.stream, StreamOptions: relay.UsageOptions(rn.stream)}
	if withTools {
		b.Tools = defs
	}
	body, err := json.Marshal(b)
	if err != nil {
		return nil, errcat.Internal(err)
	}
	ticket, err := s.admit(ctx, rn)
	if err != nil {
		return nil, err
	}
	resp, err := s.upstream.Do(ctx, &upstream.Request{
		Alias:     rn.alias,
		Path:      "/chat/completions",
		Body:      body,
		Stream:    rn.stream,
		RequestID: rn.requestID,
	})
	if err != nil {
		ticket.Cancel(ctx)
		return nil, err
	}
	if resp.Fallback {
		rn.fallback = resp
	}
	if relay.IsStream(resp.Header, rn.stream) {
		if !withTools {
			return &answer{final: &final{resp: resp, ticket: ticket}}, nil
		}
		ans, used, err := peekStream(resp, s.maxResponseBytes(), httpx.MeterOf(ctx))
		if err == nil && ans.final != nil {
			ans.final.ticket = ticket // the usage comes with the rest of the stream
		} else {
			ticket.Settle(ctx, used)
		}
		return ans, err
	}
	ans, used, err := readJSON(resp, withTools, s.maxResponseBytes(), httpx.MeterOf(ctx))
	ticket.Settle(ctx, used)
	return ans, err
}

// maxResponseBytes is the most of one upstream answer a round holds.
func (s *Service) maxResponseBytes() int64 {
	if s.maxBytes > 0 {
		return s.maxBytes
	}
	return relay.DefaultMaxBytes
}

// readJSON reads a whole JSON answer of at most limit bytes; used is its usage
// (-1: unknown).
// It reports the usage to meter, for the request's usage record.
func readJSON(resp *upstream.Response, withTools bool, limit int64, meter *httpx.Meter) (ans *answer, used int64, err error) {
	b, err := io.ReadAll(relay.LimitReader(resp.Body, limit))
	resp.Body.Close()
	switch {
	case err != nil:
		return nil, -1, relay.ReadFailure(err)
	case !json.Valid(b):
		return nil, -1, relay.ReadFailure(errors.New("agents: upstream answer is not JSON"))
	case relay.IsErrorObject(b):
		return nil, -1, relay.ReadFailure(fmt.Errorf("agents: upstream answered an error object: %s", redact.Body(b)))
	}
	var cp wire.Completion
	_ = json.Unmarshal(b, &cp)
	used = wire.UsedTokens(cp.Usage)
	meter.Report(cp.Usage)
	var msg wire.CompletionChoice
	for _, c := range cp.Choices {
		if c.Index == 0 {
			msg = c
		}
	}
	content := wire.ContentText(msg.Message.Content)
	if withTools && len(msg.Message.ToolCalls) > 0 {
		return &answer{content: content, calls: msg.Message.ToolCalls}, used, nil
	}
	replay := *resp
	replay.Body = io.NopCloser(bytes.NewReader(b))
	return &answer{final: &final{resp: &replay, text: content}}, used, nil
}

// peekStream reads a streamed answer until its first content or tool-call
// delta. Content first: the answer is final, and the stream is handed over
// with the bytes read so far replayed. A tool call: the stream is read to its
// end and the calls returned. Nothing reached the client yet, so a failure is
// still an ordinary error answer. used is the usage of a stream read to its
// end (its usage chunk, asked for with stream_options), -1 when unknown; a
// stream handed over leaves it to the relay. At most limit bytes are read here
// (the relay bounds what it captures of the rest).
// It reports the usage it read to meter, for the request's usage record.
func peekStream(resp *upstream.Response, limit int64, meter *httpx.Meter) (ans *answer, used int64, err error) {
	var rec bytes.Buffer
	limited := relay.LimitReader(resp.Body, limit)
	tee := io.TeeReader(limited, &rec)
	var (
		acc    wire.ToolCalls
		text   strings.Builder
		isTool bool
		done   bool
		usage  json.RawMessage
	)
	defer func() { meter.Report(usage) }()
	events := sseread.NewReader(tee, maxEventSize)
	for {
		ev, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			resp.Body.Close()
			if e := limited.Exceeded(); e != nil {
				err = e // the SSE parser reports its own error for it
			}
			return nil, wire.UsedTokens(usage), relay.ReadFailure(err)
		}
		if ev.Type != "" || ev.Data == "" {
			continue
		}
		if ev.Data == "[DONE]" {
			done = true
			break
		}
		if relay.IsErrorObject(ev.Data) {
			resp.Body.Close()
			return nil, wire.UsedTokens(usage), relay.ReadFailure(fmt.Errorf("agents: upstream sent an error event: %s", redact.Body([]byte(ev.Data))))
		}
		var ch wire.Chunk
		if json.Unmarshal([]byte(ev.Data), &ch) != nil {
			continue
		}
		if !wire.IsNull(ch.Usage) {
			usage = ch.Usage
		}
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue
			}
			if len(c.Delta.ToolCalls) > 0 {
				isTool = true
				acc.Add(c.Delta.ToolCalls)
			}
			if c.Delta.Content != nil {
				if !isTool && *c.Delta.Content != "" {
					return &answer{final: &final{resp: handOver(resp, rec.Bytes())}}, -1, nil
				}
				text.WriteString(*c.Delta.Content)
			}
		}
	}
	if !done {
		resp.Body.Close()
		return nil, wire.UsedTokens(usage), relay.ReadFailure(errors.New("agents: upstream stream ended without [DONE]"))
	}
	if isTool {
		resp.Body.Close()
		return &answer{content: text.String(), calls: acc.Calls()}, wire.UsedTokens(usage), nil
	}
	// An answer without content or tool calls: relay it as it came (the relay
	// reads its usage again).
	return &answer{final: &final{resp: handOver(resp, rec.Bytes())}}, -1, nil
}

// handOver returns resp with a body that replays read, then the rest of the
// upstream body; closing it closes the upstream body.
func handOver(resp *upstream.Response, read []byte) *upstream.Response {
	out := *resp
	out.Body = replayBody{Reader: io.MultiReader(bytes.NewReader(read), resp.Body), c: resp.Body}
	return &out
}

type replayBody struct {
	io.Reader
	c io.Closer
}

func (b replayBody) Close() error { return b.c.Close() }

// execute runs one tool call through the registry and returns the tool
// message answering it: the tool's result as JSON text, or {"error":{...}}.
func (s *Service) execute(ctx context.Context, rn *run, c wire.ToolCall) json.RawMessage {
	var result any
	var err error
	if !validArgs(c.Function.Arguments) {
		err = errcat.New(errcat.InvalidField, "arguments", "The arguments must be one JSON object.")
	} else {
		args := json.RawMessage(strings.TrimSpace(c.Function.Arguments))
		result, err = s.tools.Run(WithCallerDepth(ctx, rn.depth), c.Function.Name, tools.Call{
			TenantID:  rn.principal.Tenant.ID,
			UserID:    rn.user,
			Principal: rn.principal,
			Arguments: args,
		})
	}
	var content []byte
	if err != nil {
		e := errcat.As(err)
		msg := e.Message
		if msg == "" || e.Code == errcat.InternalError || e.Code == errcat.StorageError {
			msg = errcat.Lookup(e.Code).Title
		}
		content, _ = json.Marshal(map[string]any{"error": map[string]string{"code": string(e.Code), "message": msg, "param": e.Param}})
	} else if content, err = json.Marshal(result); err != nil {
		content = []byte(`{"error":{"code":"internal_error","message":"The tool's result could not be encoded."}}`)
	}
	return wire.ToolMessage(c.ID, string(content))
}

// validArgs reports whether a tool call's arguments are empty or one JSON
// object.
func validArgs(args string) bool {
	t := strings.TrimSpace(args)
	if t == "" {
		return true
	}
	var obj map[string]json.RawMessage
	return json.Unmarshal([]byte(t), &obj) == nil && obj != nil
}
