package responses

import (
	"encoding/json"
	"strconv"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/wire"
)

// request is a Responses API request, decoded and checked: the
// chat-completions request it becomes (without its messages, which need the
// stored items of previous_response_id and item_reference) and what the
// response repeats of it.
type request struct {
	chat         wire.Request
	input        input
	instructions *string
	previous     string
	store        bool
	metadata     map[string]string
	tools        []functionTool  // as the response repeats them
	toolChoice   json.RawMessage // as the response repeats it: "auto" when absent
	format       json.RawMessage // text.format as the response repeats it
	parallel     bool
}

// honoured are the members the gateway translates or checks; ignored are
// those it accepts and leaves out because leaving them out changes nothing
// the client can observe (see the package doc). Any other member answers
// 400 invalid_field naming it.
var (
	honoured = []string{"background", "include", "input", "instructions", "max_output_tokens", "metadata", "model",
		"parallel_tool_calls", "previous_response_id", "reasoning", "store", "stream", "temperature", "text",
		"tool_choice", "tools", "top_p", "truncation"}
	ignored = []string{"prompt_cache_key", "prompt_cache_retention", "safety_identifier", "service_tier", "stream_options", "user"}
)

// unsupported explains the members the gateway cannot honour; another
// member is named as unknown.
var unsupported = map[string]string{
	"conversation":   "conversations are OpenAI's Conversations API, which the gateway does not have; continue with previous_response_id",
	"prompt":         "prompt templates live on OpenAI's servers",
	"top_logprobs":   "the gateway does not translate log probabilities",
	"max_tool_calls": "built-in tool calls run on OpenAI's servers",
}

// decodeRequest decodes body, a Responses API request. Its errors are
// *errcat.Error values whose params name the Responses API's fields: the
// first unsupported member (in name order), then model, input and the
// members' own shapes.
func decodeRequest(body []byte) (*request, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, &errcat.Error{Code: errcat.InvalidJSON, Message: "The request body must be one JSON object.", Cause: err}
	}
	if err := httpx.RefuseUnknown(top, "the Responses API", unsupported, honoured, ignored); err != nil {
		return nil, err
	}
	q := &request{store: true, parallel: true, toolChoice: json.RawMessage(`"auto"`), format: json.RawMessage(`{"type":"text"}`)}
	switch {
	case isNull(top["model"]):
		return nil, errcat.New(errcat.MissingField, "model", "model is required.")
	case json.Unmarshal(top["model"], &q.chat.Model) != nil:
		return nil, errcat.New(errcat.InvalidField, "model", "model must be a string: a model alias.")
	case isNull(top["input"]):
		return nil, errcat.New(errcat.MissingField, "input", "input is required.")
	}
	var err error
	if q.input, err = decodeInput(top["input"]); err != nil {
		return nil, err
	}
	for _, step := range []func(map[string]json.RawMessage, *request) error{
		decodeScalars, decodeRefused, decodeMetadata, decodeTools, decodeToolChoice, decodeText,
	} {
		if err := step(top, q); err != nil {
			return nil, err
		}
	}
	q.chat.StreamOptions = relay.UsageOptions(q.chat.Stream) // usage for response.completed and the ticket
	return q, nil
}

// decodeScalars reads instructions, stream, store, previous_response_id,
// max_output_tokens, temperature, top_p and parallel_tool_calls.
func decodeScalars(top map[string]json.RawMessage, q *request) error {
	c := &q.chat
	if raw := top["instructions"]; !isNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return errcat.New(errcat.InvalidField, "instructions", "instructions must be a string.")
		}
		q.instructions = &s
	}
	for _, m := range [...]struct {
		name string
		dst  *bool
	}{{"stream", &c.Stream}, {"store", &q.store}, {"parallel_tool_calls", &q.parallel}} {
		if raw := top[m.name]; !isNull(raw) && json.Unmarshal(raw, m.dst) != nil {
			return errcat.Newf(errcat.InvalidField, m.name, "%s must be a boolean.", m.name)
		}
	}
	if raw := top["previous_response_id"]; !isNull(raw) {
		if json.Unmarshal(raw, &q.previous) != nil || q.previous == "" {
			return errcat.New(errcat.InvalidField, "previous_response_id", "previous_response_id must be the id of a stored response.")
		}
	}
	var err error
	if c.MaxTokens, err = httpx.DecodeInt32(top["max_output_tokens"], "max_output_tokens"); err != nil {
		return err
	}
	return httpx.DecodeFloats(top, httpx.Float{Name: "temperature", Dst: &c.Temperature}, httpx.Float{Name: "top_p", Dst: &c.TopP})
}

// decodeRefused accepts background, truncation, include and reasoning only
// with the values that ask for nothing the gateway cannot give: background
// false, truncation disabled, no include values, reasoning without effort or
// summary.
func decodeRefused(top map[string]json.RawMessage, q *request) error {
	if raw := top["background"]; !isNull(raw) {
		var b bool
		if json.Unmarshal(raw, &b) != nil || b {
			return errcat.New(errcat.InvalidField, "background",
				"background is not supported: the gateway answers while the client waits (stream for long answers). Leave it out or false.")
		}
	}
	if raw := top["truncation"]; !isNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) != nil || s != "disabled" {
			return errcat.New(errcat.InvalidField, "truncation",
				"truncation must be disabled: the gateway never drops input; a prompt over the context window answers context_window_exceeded.")
		}
	}
	if raw := top["include"]; !isNull(raw) {
		var inc []string
		if json.Unmarshal(raw, &inc) != nil {
			return errcat.New(errcat.InvalidField, "include", "include must be an array of strings.")
		}
		if len(inc) > 0 {
			return errcat.Newf(errcat.InvalidField, "include[0]",
				"include %s cannot be honoured: the gateway's backends give no log probabilities, reasoning or built-in tool results. Leave include out.",
				strconv.Quote(inc[0]))
		}
	}
	if raw := top["reasoning"]; !isNull(raw) {
		var r map[string]json.RawMessage
		if json.Unmarshal(raw, &r) != nil {
			return errcat.New(errcat.InvalidField, "reasoning", "reasoning must be an object.")
		}
		for _, k := range []string{"effort", "generate_summary", "summary"} {
			if !isNull(r[k]) {
				return errcat.Newf(errcat.InvalidField, "reasoning."+k,
					"reasoning.%s is not supported: the gateway's backends are chat-completions models without reasoning controls or summaries. Leave it out.", k)
			}
		}
	}
	return nil
}

// Bounds of metadata, OpenAI's: 16 pairs, keys of up to 64 characters,
// values of up to 512.
const (
	maxMetadataPairs = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
)

// decodeMetadata reads metadata, which the response repeats and the gateway
// stores; the model is not sent it.
func decodeMetadata(top map[string]json.RawMessage, q *request) error {
	raw := top["metadata"]
	if isNull(raw) {
		q.metadata = map[string]string{}
		return nil
	}
	if json.Unmarshal(raw, &q.metadata) != nil {
		return errcat.New(errcat.InvalidField, "metadata", "metadata must be an object of string values.")
	}
	if len(q.metadata) > maxMetadataPairs {
		return errcat.Newf(errcat.InvalidField, "metadata", "metadata holds at most %d pairs.", maxMetadataPairs)
	}
	for k, v := range q.metadata {
		if len(k) > maxMetadataKey || len(v) > maxMetadataValue {
			return errcat.Newf(errcat.InvalidField, "metadata."+k,
				"metadata keys hold at most %d characters and values at most %d.", maxMetadataKey, maxMetadataValue)
		}
	}
	return nil
}

// textFormat is text.format.
type textFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description *string         `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// decodeText translates text.format into response_format: json_object as
// it is, json_schema into {"type":"json_schema","json_schema":{name,
// schema, strict, description}}. text.verbosity cannot be honoured.
func decodeText(top map[string]json.RawMessage, q *request) error {
	raw := top["text"]
	if isNull(raw) {
		return nil
	}
	var t struct {
		Format    json.RawMessage `json:"format"`
		Verbosity json.RawMessage `json:"verbosity"`
	}
	if json.Unmarshal(raw, &t) != nil {
		return errcat.New(errcat.InvalidField, "text", "text must be an object.")
	}
	if !isNull(t.Verbosity) {
		return errcat.New(errcat.InvalidField, "text.verbosity",
			"text.verbosity is not supported: the gateway's backends have no verbosity control. Leave it out.")
	}
	if isNull(t.Format) {
		return nil
	}
	var f textFormat
	if json.Unmarshal(t.Format, &f) != nil {
		return errcat.New(errcat.InvalidField, "text.format", "text.format must be an object with a type.")
	}
	switch f.Type {
	case "text":
		return nil
	case "json_object":
		q.chat.ResponseFormat = json.RawMessage(`{"type":"json_object"}`)
	case "json_schema":
		switch {
		case f.Name == "":
			return errcat.New(errcat.MissingField, "text.format.name", "text.format.name is required with type json_schema.")
		case isNull(f.Schema) || f.Schema[0] != '{':
			return errcat.New(errcat.InvalidField, "text.format.schema", "text.format.schema must be a JSON Schema object.")
		}
		b, err := json.Marshal(map[string]any{"type": "json_schema", "json_schema": struct {
			Name        string          `json:"name"`
			Description *string         `json:"description,omitempty"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict,omitempty"`
		}{f.Name, f.Description, f.Schema, f.Strict}})
		if err != nil {
			return errcat.Internal(err)
		}
		q.chat.ResponseFormat = b
	default:
		return errcat.New(errcat.InvalidField, "text.format.type", "text.format.type must be text, json_object or json_schema.")
	}
	b, err := json.Marshal(f)
	if err != nil {
		return errcat.Internal(err)
	}
	q.format = b
	return nil
}

func isNull(raw json.RawMessage) bool { return wire.IsNull(raw) }
