package responses

import (
	"encoding/json"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/wire"
)

// encoder is the relay.Encoder of one /v1/responses answer: a JSON chat
// completion becomes a response object, a chat-completions stream the
// Responses API's event sequence (see the package doc). The event sequence
// repeats the whole text and arguments at its end (the .done events and
// response.completed), so the encoder holds them, bounded by maxBytes.
type encoder struct {
	resp     *response // in progress, then finished (final)
	newID    func(prefix string) string
	now      func() int64
	maxBytes int64

	seq      int  // the next event's sequence_number
	started  bool // response.created and response.in_progress were sent
	finished bool // resp was finished with the output (final)
	items    []*streamItem
	msg      *streamItem         // the message item, nil before any text
	calls    map[int]*streamItem // by the upstream's tool call index
	finish   string              // the upstream's finish_reason
	usage    json.RawMessage
	held     int64
}

// streamItem is an output item being streamed: its text (a message's) or
// arguments (a function call's) so far.
type streamItem struct {
	index int
	it    item
	buf   strings.Builder
}

var _ relay.Encoder = (*encoder)(nil)

func newEncoder(resp *response, newID func(string) string, now func() int64, maxBytes int64) *encoder {
	if maxBytes <= 0 {
		maxBytes = relay.DefaultMaxBytes
	}
	return &encoder{resp: resp, newID: newID, now: now, maxBytes: maxBytes, calls: map[int]*streamItem{}}
}

// Completion translates a JSON chat completion into the response object.
func (e *encoder) Completion(b []byte) ([]byte, error) {
	if err := completion(b, e.resp, e.now(), e.newID); err != nil {
		return nil, err
	}
	e.finished = true
	return json.Marshal(e.resp)
}

// The data of the stream's events; every one has its type and
// sequence_number.
type (
	head struct {
		Type string `json:"type"`
		Seq  int    `json:"sequence_number"`
	}
	responseEvent struct {
		head
		Response *response `json:"response"`
	}
	itemEvent struct {
		head
		OutputIndex int  `json:"output_index"`
		Item        item `json:"item"`
	}
	partEvent struct {
		head
		ItemID       string `json:"item_id"`
		OutputIndex  int    `json:"output_index"`
		ContentIndex int    `json:"content_index"`
		Part         part   `json:"part"`
	}
	textEvent struct {
		head
		ItemID       string  `json:"item_id"`
		OutputIndex  int     `json:"output_index"`
		ContentIndex int     `json:"content_index"`
		Delta        *string `json:"delta,omitempty"`
		Text         *string `json:"text,omitempty"`
		Logprobs     []any   `json:"logprobs"`
	}
	argsEvent struct {
		head
		ItemID      string  `json:"item_id"`
		OutputIndex int     `json:"output_index"`
		Delta       *string `json:"delta,omitempty"`
		Name        string  `json:"name,omitempty"`
		Arguments   *string `json:"arguments,omitempty"`
	}
	errorEvent struct {
		head
		Code    errcat.Code `json:"code"`
		Message string      `json:"message"`
		Param   *string     `json:"param"`
		Error   errorObject `json:"error"`
	}
	// errorObject is the error event's error, the gateway's envelope's
	// error: with it the openai npm client raises an APIError at the event
	// (it raises one for any event whose data has an error member), and the
	// Vercel AI SDK reads it as its nested error chunk.
	errorObject struct {
		Type    errcat.Type `json:"type"`
		Code    errcat.Code `json:"code"`
		Message string      `json:"message"`
		Param   *string     `json:"param"`
	}
	noticeEvent struct {
		head
		Notice relay.Notice `json:"gw_notice"`
	}
)

// emit appends the event of type typ whose data is v (its head is filled
// here), with the next sequence number.
func (e *encoder) emit(evs []relay.Event, typ string, v any, h *head) []relay.Event {
	h.Type, h.Seq = typ, e.seq
	e.seq++
	b, err := json.Marshal(v)
	if err != nil { // this package's own types of strings and numbers
		b = []byte(`{"type":"` + typ + `"}`)
	}
	return append(evs, relay.Event{Name: typ, Data: string(b)})
}

// Chunk translates one upstream chunk: the first sends response.created and
// response.in_progress; text deltas go to one message item, each tool call
// to a function_call item. Items are done at the end (End), when the
// response's output is whole. Data that is not a chunk is skipped.
func (e *encoder) Chunk(evs []relay.Event, data string) ([]relay.Event, error) {
	var ch wire.Chunk
	if json.Unmarshal([]byte(data), &ch) != nil {
		return evs, nil // as the relay's Capture skips it
	}
	evs = e.start(evs)
	if !wire.IsNull(ch.Usage) {
		e.usage = ch.Usage
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue
		}
		var err error
		if d := c.Delta.Content; d != nil && *d != "" {
			if evs, err = e.text(evs, *d); err != nil {
				return evs, err
			}
		}
		for _, d := range c.Delta.ToolCalls {
			if evs, err = e.toolCall(evs, d); err != nil {
				return evs, err
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			e.finish = *c.FinishReason
		}
	}
	return evs, nil
}

// hold counts n more bytes held, failing past the bound.
func (e *encoder) hold(n int) error {
	if e.held += int64(n); e.held > e.maxBytes {
		return relay.TooLarge(e.maxBytes)
	}
	return nil
}

// start sends response.created and response.in_progress, once.
func (e *encoder) start(evs []relay.Event) []relay.Event {
	if e.started {
		return evs
	}
	e.started = true
	for _, typ := range []string{"response.created", "response.in_progress"} {
		ev := responseEvent{Response: e.resp}
		evs = e.emit(evs, typ, &ev, &ev.head)
	}
	return evs
}

// text sends a text delta, opening the message item first.
func (e *encoder) text(evs []relay.Event, d string) ([]relay.Event, error) {
	if err := e.hold(len(d)); err != nil {
		return evs, err
	}
	if e.msg == nil {
		e.msg = e.add(item{ID: e.newID("msg"), Type: "message", Status: "in_progress", Role: "assistant", Content: []part{}})
		ev := itemEvent{OutputIndex: e.msg.index, Item: e.msg.it}
		evs = e.emit(evs, "response.output_item.added", &ev, &ev.head)
		pe := partEvent{ItemID: e.msg.it.ID, OutputIndex: e.msg.index, Part: outputText("")}
		evs = e.emit(evs, "response.content_part.added", &pe, &pe.head)
	}
	e.msg.buf.WriteString(d)
	ev := textEvent{ItemID: e.msg.it.ID, OutputIndex: e.msg.index, Delta: &d, Logprobs: []any{}}
	return e.emit(evs, "response.output_text.delta", &ev, &ev.head), nil
}

// toolCall sends a piece of a tool call, opening its function_call item
// first.
func (e *encoder) toolCall(evs []relay.Event, d wire.ToolCallDelta) ([]relay.Event, error) {
	if d.Index < 0 {
		return evs, nil
	}
	if err := e.hold(len(d.Function.Name) + len(d.Function.Arguments)); err != nil {
		return evs, err
	}
	si, seen := e.calls[d.Index]
	if !seen {
		callID := d.ID
		if callID == "" {
			callID = e.newID("call")
		}
		empty := ""
		si = e.add(item{ID: e.newID("fc"), Type: "function_call", Status: "in_progress", CallID: callID, Name: d.Function.Name, Arguments: &empty})
		e.calls[d.Index] = si
		ev := itemEvent{OutputIndex: si.index, Item: si.it}
		evs = e.emit(evs, "response.output_item.added", &ev, &ev.head)
	} else {
		si.it.Name += d.Function.Name
	}
	if a := d.Function.Arguments; a != "" {
		si.buf.WriteString(a)
		ev := argsEvent{ItemID: si.it.ID, OutputIndex: si.index, Delta: &a}
		evs = e.emit(evs, "response.function_call_arguments.delta", &ev, &ev.head)
	}
	return evs, nil
}

// add appends an output item.
func (e *encoder) add(it item) *streamItem {
	si := &streamItem{index: len(e.items), it: it}
	e.items = append(e.items, si)
	return si
}

// output returns the output items so far, their text and arguments whole,
// with status.
func (e *encoder) output(status string) []item {
	out := make([]item, 0, len(e.items))
	for _, si := range e.items {
		it := si.it
		it.Status = status
		s := si.buf.String()
		if it.Type == "message" {
			it.Content = []part{outputText(s)}
		} else {
			it.Arguments = &s
		}
		out = append(out, it)
	}
	return out
}

// final returns the finished response, finishing it once: the Commit that
// stores it and End both need it.
func (e *encoder) final() *response {
	if !e.finished {
		e.finished = true
		e.resp.finish(e.output("completed"), e.finish, usageOf(e.usage), e.now())
	}
	return e.resp
}

// End sends each item's done events, the notices (gw.notice) and
// response.completed (response.incomplete for an answer cut by
// max_output_tokens or the content filter) with the usage.
func (e *encoder) End(evs []relay.Event, notices []relay.Notice) []relay.Event {
	evs = e.start(evs)
	r := e.final()
	for i, it := range r.Output {
		evs = e.done(evs, i, it)
	}
	for _, n := range notices {
		ev := noticeEvent{Notice: n}
		evs = e.emit(evs, "gw.notice", &ev, &ev.head)
	}
	typ := "response.completed"
	if r.Status == "incomplete" {
		typ = "response.incomplete"
	}
	ev := responseEvent{Response: r}
	return e.emit(evs, typ, &ev, &ev.head)
}

// done sends the events that end output item it at index i.
func (e *encoder) done(evs []relay.Event, i int, it item) []relay.Event {
	if it.Type == "message" {
		p := it.Content[0]
		te := textEvent{ItemID: it.ID, OutputIndex: i, Text: p.Text, Logprobs: []any{}}
		evs = e.emit(evs, "response.output_text.done", &te, &te.head)
		pe := partEvent{ItemID: it.ID, OutputIndex: i, Part: p}
		evs = e.emit(evs, "response.content_part.done", &pe, &pe.head)
	} else {
		ae := argsEvent{ItemID: it.ID, OutputIndex: i, Name: it.Name, Arguments: it.Arguments}
		evs = e.emit(evs, "response.function_call_arguments.done", &ae, &ae.head)
	}
	ie := itemEvent{OutputIndex: i, Item: it}
	return e.emit(evs, "response.output_item.done", &ie, &ie.head)
}

// Error ends a stream cut after it started: response.failed, the response
// with status failed, its error server_error and the output that arrived,
// then the error event with the gateway's code, message and param, at its
// top level (OpenAI's error event) and in its error member, which clients
// raise.
func (e *encoder) Error(evs []relay.Event, err *errcat.Error) []relay.Event {
	evs = e.start(evs)
	p, _ := errcat.PublicOf(err)
	e.resp.fail(e.output("incomplete"), p.Message)
	fe := responseEvent{Response: e.resp}
	evs = e.emit(evs, "response.failed", &fe, &fe.head)
	ee := errorEvent{Code: p.Code, Message: p.Message, Error: errorObject{Type: p.Type, Code: p.Code, Message: p.Message}}
	if p.Param != "" {
		ee.Param, ee.Error.Param = &p.Param, &p.Param
	}
	return e.emit(evs, "error", &ee, &ee.head)
}

// Keepalive has no event of the Responses API: the relay sends the SSE
// comment ": keepalive", which clients skip.
func (e *encoder) Keepalive() (relay.Event, bool) { return relay.Event{}, false }
