package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/relay"
)

// encoder is the relay.Encoder of one /v1/messages answer: a JSON chat
// completion becomes a message, a chat-completions stream becomes the
// Messages API's event sequence (see the package doc). It holds the open
// content block and the tool calls seen, never the text: a stream is
// translated in constant memory however long it runs.
type encoder struct {
	id, model string
	stops     []string // the request's stop_sequences

	started  bool        // message_start was sent
	open     int         // index of the open content block, -1 for none
	openText bool        // the open block is a text block
	next     int         // index of the next content block
	calls    map[int]int // upstream tool call index -> its tool_use block
	tools    bool        // a tool_use block was sent
	finish   string      // the upstream's finish_reason
	matched  json.RawMessage
	usage    usage
}

var _ relay.Encoder = (*encoder)(nil)

func newEncoder(id, model string, stops []string) *encoder {
	return &encoder{id: id, model: model, stops: stops, open: -1, calls: map[int]int{}}
}

// Completion translates a JSON chat completion into a message.
func (e *encoder) Completion(b []byte) ([]byte, error) {
	return completion(b, e.id, e.model, e.stops)
}

// The data of the stream's events, in the order of their members on the
// wire.
type (
	messageStart struct {
		Type    string       `json:"type"`
		Message startMessage `json:"message"`
	}
	startMessage struct {
		ID           string  `json:"id"`
		Type         string  `json:"type"`
		Role         string  `json:"role"`
		Model        string  `json:"model"`
		Content      []any   `json:"content"`
		StopReason   *string `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
		Usage        usage   `json:"usage"`
	}
	blockStart struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock any    `json:"content_block"` // textContent or toolUseContent
	}
	blockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta any    `json:"delta"` // textDelta or jsonDelta
	}
	textDelta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	jsonDelta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
	blockStop struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	messageDelta struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage usage `json:"usage"`
	}
	noticeEvent struct {
		Type   string       `json:"type"`
		Notice relay.Notice `json:"gw_notice"`
	}
	typeOnly struct {
		Type string `json:"type"`
	}
)

// event returns the event named name whose data is v, whose "type" is name
// as in every event of the Messages API.
func event(name string, v any) relay.Event {
	b, err := json.Marshal(v)
	if err != nil { // this package's own types of strings and numbers
		b = []byte(`{"type":"` + name + `"}`)
	}
	return relay.Event{Name: name, Data: string(b)}
}

// Chunk translates one upstream chunk: the first sends message_start; text
// deltas go to a text block, each tool call to a tool_use block whose
// arguments are input_json_delta events; a block is stopped when the next
// one starts or the choice finishes. The finish reason and the usage are
// kept for message_delta; data that is not a chunk is skipped. Deltas of a tool call whose block was stopped
// (a server interleaving calls) cannot be sent any more: upstream_error.
func (e *encoder) Chunk(evs []relay.Event, data string) ([]relay.Event, error) {
	var a upAnswer
	if json.Unmarshal([]byte(data), &a) != nil {
		// Data that is not a chunk carries nothing to translate: it is
		// skipped, as the relay's Capture skips it.
		return evs, nil
	}
	evs = e.start(evs)
	if !isNull(a.Usage) {
		e.usage = usageOf(a.Usage)
	}
	c := a.first()
	if c == nil {
		return evs, nil
	}
	if d := c.Delta.Content; d != nil && *d != "" {
		if !e.openText {
			evs = e.stop(evs)
			e.open, e.openText = e.next, true
			e.next++
			evs = append(evs, event("content_block_start", blockStart{Type: "content_block_start", Index: e.open,
				ContentBlock: textContent{Type: "text", Text: ""}}))
		}
		evs = append(evs, event("content_block_delta", blockDelta{Type: "content_block_delta", Index: e.open,
			Delta: textDelta{Type: "text_delta", Text: *d}}))
	}
	for _, d := range c.Delta.ToolCalls {
		if d.Index < 0 {
			continue
		}
		idx, seen := e.calls[d.Index]
		switch {
		case !seen:
			evs = e.stop(evs)
			idx = e.next
			e.calls[d.Index], e.open, e.tools = idx, idx, true
			e.next++
			id := d.ID
			if id == "" {
				id = fmt.Sprintf("toolu_%s_%d", e.id, d.Index)
			}
			evs = append(evs, event("content_block_start", blockStart{Type: "content_block_start", Index: idx,
				ContentBlock: toolUseContent{Type: "tool_use", ID: id, Name: d.Function.Name, Input: json.RawMessage("{}")}}))
		case idx != e.open:
			return evs, errcat.New(errcat.UpstreamError, "",
				"The model streamed its tool calls interleaved; the Messages API streams one content block at a time.")
		}
		if d.Function.Arguments != "" {
			evs = append(evs, event("content_block_delta", blockDelta{Type: "content_block_delta", Index: idx,
				Delta: jsonDelta{Type: "input_json_delta", PartialJSON: d.Function.Arguments}}))
		}
	}
	if c.FinishReason != nil && *c.FinishReason != "" {
		e.finish, e.matched = *c.FinishReason, c.StopReason
		evs = e.stop(evs)
	}
	return evs, nil
}

// start sends message_start, once. Its usage is zero: the upstream tells
// the tokens at the end, which message_delta carries.
func (e *encoder) start(evs []relay.Event) []relay.Event {
	if e.started {
		return evs
	}
	e.started = true
	return append(evs, event("message_start", messageStart{Type: "message_start", Message: startMessage{
		ID: e.id, Type: "message", Role: "assistant", Model: e.model, Content: []any{},
	}}))
}

// stop sends content_block_stop for the open block, if any.
func (e *encoder) stop(evs []relay.Event) []relay.Event {
	if e.open < 0 {
		return evs
	}
	evs = append(evs, event("content_block_stop", blockStop{Type: "content_block_stop", Index: e.open}))
	e.open, e.openText = -1, false
	return evs
}

// End sends message_delta with the stop reason and the usage, the notices
// as gw.notice events, and message_stop (the Messages API's end of a
// complete stream, as data: [DONE] is OpenAI's).
func (e *encoder) End(evs []relay.Event, notices []relay.Notice) []relay.Event {
	evs = e.stop(e.start(evs))
	md := messageDelta{Type: "message_delta", Usage: e.usage}
	md.Delta.StopReason, md.Delta.StopSequence = stopReason(e.finish, e.tools, e.matched, e.stops)
	evs = append(evs, event("message_delta", md))
	for _, n := range notices {
		evs = append(evs, event("gw.notice", noticeEvent{Type: "gw.notice", Notice: n}))
	}
	return append(evs, event("message_stop", typeOnly{Type: "message_stop"}))
}

// Error sends e as the Messages API's error event, which Anthropic's
// clients raise as an API error; the stream ends without message_stop.
func (e *encoder) Error(evs []relay.Event, err *errcat.Error) []relay.Event {
	p, _ := errcat.PublicOf(err)
	return append(evs, relay.Event{Name: "error", Data: string(ErrorBody(p))})
}

// Keepalive is Anthropic's own keepalive, the ping event, which its
// clients skip.
func (e *encoder) Keepalive() (relay.Event, bool) {
	return relay.Event{Name: "ping", Data: `{"type":"ping"}`}, true
}
