package wire

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Request is a chat completions request the gateway makes itself: a /c1 turn
// or an agent's round. Messages are whole messages, verbatim; the members a
// /c1 client gives (tools, tool_choice, response_format, attachments) are
// its values verbatim, and a member left nil or zero is not sent (but model,
// messages and stream, which are always). The pre-flight checks read and
// rewrite the marshalled body as they do a /v1 client's.
type Request struct {
	Model         string            `json:"model"`
	Messages      []json.RawMessage `json:"messages"`
	Stream        bool              `json:"stream"`
	StreamOptions *StreamOptions    `json:"stream_options,omitempty"`
	MaxTokens     *int32            `json:"max_tokens,omitempty"`
	Temperature   *float64          `json:"temperature,omitempty"`
	// TopP and Stop are the sampling members a request translated from
	// another client API carries (Anthropic's top_p and stop_sequences).
	TopP *float64 `json:"top_p,omitempty"`
	Stop []string `json:"stop,omitempty"`
	// Tools is the array of tool definitions (Tool values, marshalled).
	Tools          json.RawMessage `json:"tools,omitempty"`
	ToolChoice     json.RawMessage `json:"tool_choice,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// ParallelToolCalls, when set, says whether the model may call several
	// tools at once (OpenAI's parallel_tool_calls; send it only with Tools).
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
	// Attachments is the gateway's own additive member, which the pre-flight
	// checks turn into parts of the last user message.
	Attachments json.RawMessage `json:"attachments,omitempty"`
}

// Marshal is json.Marshal(r) but for the messages, which it copies as they
// are instead of having encoding/json validate, compact and HTML-escape each
// one again: they are the gateway's own (stored or built), and on a /c1 turn
// with a long history that walk was a few percent of the turn's CPU. A
// message that is not JSON makes an invalid body, which the caller must
// check (preflight.CheckBuilt walks it next).
func (r *Request) Marshal() ([]byte, error) {
	if r.Messages == nil {
		return json.Marshal(r) // "messages":null, as json.Marshal has it
	}
	rest := *r
	rest.Messages = []json.RawMessage{}
	b, err := json.Marshal(&rest)
	if err != nil {
		return nil, err
	}
	// model comes first and messages second (the struct's order), and the
	// quotes inside model's string are escaped, so the first
	// `,"messages":[]` is the member's: the messages go inside its brackets.
	at := bytes.Index(b, emptyMessages)
	if at < 0 {
		return nil, errors.New("wire: marshalled request has no messages member")
	}
	at += len(emptyMessages) - 1 // before the array's ]
	n := len(b)
	for _, m := range r.Messages {
		n += len(m) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, b[:at]...)
	for i, m := range r.Messages {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
	}
	return append(out, b[at:]...), nil
}

var emptyMessages = []byte(`,"messages":[]`)

// StreamOptions is the stream_options of a request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Tool is a function tool offered to the model.
type Tool struct {
	Type     string   `json:"type"` // "function"
	Function Function `json:"function"`
}

// Function is the function of a Tool: Parameters is its JSON Schema.
// Strict, when set, is chat completions' function.strict (a request
// translated from the Responses API carries its tools' strict); nil sends
// none.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict,omitempty"`
}
