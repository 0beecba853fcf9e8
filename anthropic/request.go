package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/wire"
)

// request is a Messages API request, decoded and checked, and what the
// answer's translation needs of it.
type request struct {
	chat  wire.Request // the chat-completions request it becomes
	stops []string     // stop_sequences, to name the one that ended the answer
}

// honoured are the members the gateway translates; ignored are those it
// accepts and leaves out because leaving them out changes nothing the client
// can observe (see the package doc). Any other member answers 400.
var (
	honoured = []string{"max_tokens", "messages", "model", "output_config", "stop_sequences", "stream",
		"system", "temperature", "thinking", "tool_choice", "tools", "top_p"}
	ignored = []string{"cache_control", "metadata", "service_tier"}
)

// unsupported explains the members of the Messages API the gateway cannot
// honour; another member is named as unknown.
var unsupported = map[string]string{
	"top_k":              "top_k has no chat-completions equivalent on the gateway's backends",
	"thinking":           "extended thinking needs an Anthropic model; the gateway's backends are chat-completions models (only {\"type\":\"disabled\"} is accepted)",
	"mcp_servers":        "the MCP connector runs on Anthropic's servers; give the tools to the model as tools instead",
	"container":          "code execution containers run on Anthropic's servers",
	"context_management": "context management runs on Anthropic's servers",
	"inference_geo":      "the gateway routes by model alias, not by region",
	"speed":              "the gateway routes by model alias, not by speed",
}

// decodeRequest decodes body, a Messages API request, and translates it
// into the chat-completions request of the pipeline. count is true for
// count_tokens, which needs no max_tokens. Its errors are *errcat.Error
// values whose params name the Messages API's fields: the first of an
// unsupported member (in name order), messages, model, max_tokens, then the
// members' own shapes.
func decodeRequest(body []byte, count bool) (*request, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, &errcat.Error{Code: errcat.InvalidJSON, Message: "The request body must be one JSON object.", Cause: err}
	}
	if err := httpx.RefuseUnknown(top, "the Messages API", unsupported, honoured, ignored); err != nil {
		return nil, err
	}
	q := &request{}
	c := &q.chat
	switch {
	case isNull(top["messages"]):
		return nil, errcat.New(errcat.MissingField, "messages", "messages is required.")
	case isNull(top["model"]):
		return nil, errcat.New(errcat.MissingField, "model", "model is required.")
	case !count && isNull(top["max_tokens"]):
		return nil, errcat.New(errcat.MissingField, "max_tokens", "max_tokens is required on /v1/messages, as the Messages API requires it.")
	}
	if json.Unmarshal(top["model"], &c.Model) != nil {
		return nil, errcat.New(errcat.InvalidField, "model", "model must be a string: a model alias.")
	}
	var err error
	if c.MaxTokens, err = httpx.DecodeInt32(top["max_tokens"], "max_tokens"); err != nil {
		return nil, err
	}
	if err := decodeScalars(top, q); err != nil {
		return nil, err
	}
	if system, err := systemText(top["system"]); err != nil {
		return nil, err
	} else if system != "" {
		c.Messages = append(c.Messages, wire.TextMessage("system", system))
	}
	msgs, err := chatMessages(top["messages"])
	if err != nil {
		return nil, err
	}
	c.Messages = append(c.Messages, msgs...)
	if err := decodeTools(top["tools"], top["tool_choice"], c); err != nil {
		return nil, err
	}
	if c.ResponseFormat, err = responseFormat(top["output_config"]); err != nil {
		return nil, err
	}
	if err := checkThinking(top["thinking"]); err != nil {
		return nil, err
	}
	if count {
		c.Stream, c.MaxTokens = false, nil // a count sends nothing
	}
	c.StreamOptions = relay.UsageOptions(c.Stream) // usage for message_delta and the ticket
	return q, nil
}

// decodeScalars reads stream, temperature, top_p, stop_sequences, and the
// ignored members' types.
func decodeScalars(top map[string]json.RawMessage, q *request) error {
	c := &q.chat
	if raw := top["stream"]; !isNull(raw) && json.Unmarshal(raw, &c.Stream) != nil {
		return errcat.New(errcat.InvalidField, "stream", "stream must be a boolean.")
	}
	if err := httpx.DecodeFloats(top, httpx.Float{Name: "temperature", Dst: &c.Temperature}, httpx.Float{Name: "top_p", Dst: &c.TopP}); err != nil {
		return err
	}
	if raw := top["stop_sequences"]; !isNull(raw) {
		if json.Unmarshal(raw, &q.stops) != nil {
			return errcat.New(errcat.InvalidField, "stop_sequences", "stop_sequences must be an array of strings.")
		}
		c.Stop = q.stops
	}
	// metadata.user_id is data, not identity: the end user is named by the
	// GW-User-Id header ("The header GW-User-Id is the only source of
	// end-user identity").
	if raw := top["metadata"]; !isNull(raw) && raw[0] != '{' {
		return errcat.New(errcat.InvalidField, "metadata", "metadata must be an object.")
	}
	if raw := top["service_tier"]; !isNull(raw) && raw[0] != '"' {
		return errcat.New(errcat.InvalidField, "service_tier", "service_tier must be a string.")
	}
	return nil
}

// textBlock is a text content block of system or of a message.
type textBlock struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

// systemText reads system: a string, or an array of text blocks, joined
// with line breaks.
func systemText(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return "", errcat.New(errcat.InvalidField, "system", "system must be a string or an array of text blocks.")
	}
	texts := make([]string, 0, len(blocks))
	for i, b := range blocks {
		var tb textBlock
		if json.Unmarshal(b, &tb) != nil || tb.Type != "text" || tb.Text == nil {
			return "", errcat.Newf(errcat.InvalidField, fmt.Sprintf("system[%d]", i),
				"system[%d] must be a text block, {\"type\":\"text\",\"text\":...}.", i)
		}
		texts = append(texts, *tb.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// inMessage is one element of messages.
type inMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// block is a content block of a message: what the gateway reads of text,
// image, tool_use and tool_result blocks. Other members (cache_control,
// citations) are hints the gateway leaves out.
type block struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	Source    json.RawMessage `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// imageSource is the source of an image block.
type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// chatMessages translates messages: a user message's tool_result blocks
// become tool messages, in order, followed by a user message of its other
// blocks (chat completions wants the answers to an assistant's tool calls
// right after it); an assistant message's text and tool_use blocks become
// one assistant message with tool calls.
func chatMessages(raw json.RawMessage) ([]json.RawMessage, error) {
	var msgs []inMessage
	if json.Unmarshal(raw, &msgs) != nil || len(msgs) == 0 {
		return nil, errcat.New(errcat.InvalidField, "messages",
			"messages must be a non-empty array of messages, each with a role (user or assistant) and a content.")
	}
	var out []json.RawMessage
	for i, m := range msgs {
		at := fmt.Sprintf("messages[%d]", i)
		if m.Role != "user" && m.Role != "assistant" {
			return nil, errcat.Newf(errcat.InvalidField, at+".role", "%s.role must be user or assistant.", at)
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			out = append(out, wire.TextMessage(m.Role, s))
			continue
		}
		var blocks []json.RawMessage
		if json.Unmarshal(m.Content, &blocks) != nil || len(blocks) == 0 {
			return nil, errcat.Newf(errcat.InvalidField, at+".content",
				"%s.content must be a string or a non-empty array of content blocks.", at)
		}
		var (
			msgs []json.RawMessage
			err  error
		)
		if m.Role == "user" {
			msgs, err = userMessages(at, blocks)
		} else {
			msgs, err = assistantMessage(at, blocks)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
	}
	return out, nil
}

// eachBlock decodes blocks, the content of what is at at (a message, a
// tool result), and hands each block to f with its own path
// (at.content[j]), stopping at the first error. A text block without its
// text is refused here, before f sees it, so that f reads any text block's
// Text.
func eachBlock(at string, blocks []json.RawMessage, f func(b block, at string) error) error {
	for j, raw := range blocks {
		bat := fmt.Sprintf("%s.content[%d]", at, j)
		var b block
		if json.Unmarshal(raw, &b) != nil {
			return errcat.Newf(errcat.InvalidField, bat, "%s must be a content block object with a type.", bat)
		}
		if b.Type == "text" && b.Text == nil {
			return errcat.Newf(errcat.MissingField, bat+".text", "%s.text is required.", bat)
		}
		if err := f(b, bat); err != nil {
			return err
		}
	}
	return nil
}

// userMessages translates the blocks of a user message.
func userMessages(at string, blocks []json.RawMessage) ([]json.RawMessage, error) {
	var (
		out   []json.RawMessage
		parts []wire.Part
		// images of tool results, which a tool message cannot carry: they go
		// first in the user message that follows the tool messages.
		toolImages []wire.Part
	)
	err := eachBlock(at, blocks, func(b block, at string) error {
		switch b.Type {
		case "text":
			parts = append(parts, wire.TextPart(b.Text))
		case "image":
			p, err := imagePart(at, b.Source)
			if err != nil {
				return err
			}
			parts = append(parts, p)
		case "tool_result":
			msg, images, err := toolResult(at, b)
			if err != nil {
				return err
			}
			out = append(out, msg)
			toolImages = append(toolImages, images...)
		default:
			return unsupportedBlock(at, b.Type, "text, image and tool_result blocks")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	parts = append(toolImages, parts...)
	if len(parts) == 0 {
		return out, nil
	}
	msg, err := wire.PartsMessage(parts)
	if err != nil {
		return nil, errcat.Internal(err)
	}
	return append(out, msg), nil
}

// imagePart translates an image block's source into an image_url part: a
// base64 source becomes a data URI, which the pre-flight checks decode as
// they do a /v1 client's; a url source is checked as an image_url.url.
func imagePart(at string, raw json.RawMessage) (wire.Part, error) {
	var src imageSource
	if isNull(raw) || json.Unmarshal(raw, &src) != nil {
		return wire.Part{}, errcat.Newf(errcat.InvalidField, at+".source", "%s.source must be an image source object.", at)
	}
	switch src.Type {
	case "base64":
		return wire.ImagePart("data:"+src.MediaType+";base64,"+src.Data, ""), nil
	case "url":
		return wire.ImagePart(src.URL, ""), nil
	}
	return wire.Part{}, errcat.Newf(errcat.InvalidField, at+".source.type",
		"%s.source.type must be base64 or url; file sources need Anthropic's Files API, which the gateway does not have.", at)
}

// toolResult translates a tool_result block into a tool message, and
// returns the image parts of its content. An error result says so first in
// the text ("Error: "), as a tool message has no is_error.
func toolResult(at string, b block) (json.RawMessage, []wire.Part, error) {
	if b.ToolUseID == "" {
		return nil, nil, errcat.Newf(errcat.MissingField, at+".tool_use_id", "%s.tool_use_id is required.", at)
	}
	text, images, err := toolResultContent(at, b.Content)
	if err != nil {
		return nil, nil, err
	}
	if text == "" && len(images) > 0 {
		// A tool message holds text only: say where the result went.
		text = "The result is the image that follows the tool results."
	}
	if b.IsError {
		text = "Error: " + text
	}
	return wire.ToolMessage(b.ToolUseID, text), images, nil
}

// toolResultContent reads the content of the tool_result block at at: a
// string, or text and image blocks, whose texts are joined with line breaks
// and whose images are returned as image_url parts.
func toolResultContent(at string, raw json.RawMessage) (string, []wire.Part, error) {
	var text string
	if isNull(raw) || json.Unmarshal(raw, &text) == nil {
		return text, nil, nil
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return "", nil, errcat.Newf(errcat.InvalidField, at+".content", "%s.content must be a string or an array of text and image blocks.", at)
	}
	var (
		texts  []string
		images []wire.Part
	)
	err := eachBlock(at, blocks, func(inner block, at string) error {
		switch inner.Type {
		case "text":
			texts = append(texts, *inner.Text)
		case "image":
			p, err := imagePart(at, inner.Source)
			if err != nil {
				return err
			}
			images = append(images, p)
		default:
			return unsupportedBlock(at, inner.Type, "text and image blocks in a tool result")
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	return strings.Join(texts, "\n"), images, nil
}

// assistantMessage translates the blocks of an assistant message: its text
// blocks joined, its tool_use blocks as tool calls whose arguments are the
// input's JSON text.
func assistantMessage(at string, blocks []json.RawMessage) ([]json.RawMessage, error) {
	var (
		text  strings.Builder
		calls []wire.ToolCall
	)
	err := eachBlock(at, blocks, func(b block, at string) error {
		switch b.Type {
		case "text":
			text.WriteString(*b.Text)
		case "tool_use":
			call, err := toolCall(at, b)
			if err != nil {
				return err
			}
			calls = append(calls, call)
		default:
			return unsupportedBlock(at, b.Type, "text and tool_use blocks in an assistant message")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return []json.RawMessage{wire.AssistantMessage(text.String(), calls)}, nil
}

func toolCall(at string, b block) (wire.ToolCall, error) {
	switch {
	case b.ID == "":
		return wire.ToolCall{}, errcat.Newf(errcat.MissingField, at+".id", "%s.id is required.", at)
	case b.Name == "":
		return wire.ToolCall{}, errcat.Newf(errcat.MissingField, at+".name", "%s.name is required.", at)
	case isNull(b.Input) || b.Input[0] != '{':
		return wire.ToolCall{}, errcat.Newf(errcat.InvalidField, at+".input", "%s.input must be an object.", at)
	}
	var args bytes.Buffer
	if err := json.Compact(&args, b.Input); err != nil {
		return wire.ToolCall{}, errcat.Newf(errcat.InvalidField, at+".input", "%s.input must be an object.", at)
	}
	return wire.ToolCall{ID: b.ID, Type: "function", Function: wire.FunctionCall{Name: b.Name, Arguments: args.String()}}, nil
}

// unsupportedBlock is the error of a content block of type typ where only
// the blocks allowed are translated.
func unsupportedBlock(at, typ, allowed string) error {
	return errcat.Newf(errcat.InvalidField, at+".type",
		"%s.type %s is not supported here: the gateway translates %s (documents, thinking and server tool blocks need Anthropic's servers).",
		at, strconv.Quote(typ), allowed)
}

// inTool is an element of tools: a client tool. Server tools (web search,
// code execution, ...) have another type.
type inTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Strict      bool            `json:"strict"`
}

// namedChoice is chat completions' tool_choice naming a function.
type namedChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// inToolChoice is tool_choice.
type inToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

// decodeTools translates tools into function tools and tool_choice into
// chat completions' tool_choice and parallel_tool_calls.
func decodeTools(rawTools, rawChoice json.RawMessage, c *wire.Request) error {
	var tools []wire.Tool
	if !isNull(rawTools) {
		var in []json.RawMessage
		if json.Unmarshal(rawTools, &in) != nil {
			return errcat.New(errcat.InvalidField, "tools", "tools must be an array of tools.")
		}
		for i, raw := range in {
			at := fmt.Sprintf("tools[%d]", i)
			var t inTool
			switch {
			case json.Unmarshal(raw, &t) != nil:
				return errcat.Newf(errcat.InvalidField, at, "%s must be a tool object.", at)
			case t.Type != "" && t.Type != "custom":
				return errcat.Newf(errcat.InvalidField, at+".type",
					"%s.type %s is a server tool, which runs on Anthropic's servers; the gateway's models call client tools only.", at, strconv.Quote(t.Type))
			case t.Name == "":
				return errcat.Newf(errcat.MissingField, at+".name", "%s.name is required.", at)
			case isNull(t.InputSchema):
				return errcat.Newf(errcat.MissingField, at+".input_schema", "%s.input_schema is required.", at)
			case t.InputSchema[0] != '{':
				return errcat.Newf(errcat.InvalidField, at+".input_schema", "%s.input_schema must be a JSON Schema object.", at)
			case t.Strict:
				return errcat.Newf(errcat.InvalidField, at+".strict",
					"%s.strict cannot be honoured: the gateway's backends do not guarantee schema-valid tool input.", at)
			}
			tools = append(tools, wire.Tool{Type: "function", Function: wire.Function{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
		}
	}
	if len(tools) > 0 {
		b, err := json.Marshal(tools)
		if err != nil {
			return errcat.Internal(err)
		}
		c.Tools = b
	}
	if isNull(rawChoice) {
		return nil
	}
	var tc inToolChoice
	if json.Unmarshal(rawChoice, &tc) != nil {
		return errcat.New(errcat.InvalidField, "tool_choice", "tool_choice must be an object with a type (auto, any, tool or none).")
	}
	var choice any
	switch tc.Type {
	case "auto":
		choice = "auto"
	case "none":
		choice = "none"
	case "any":
		choice = "required"
	case "tool":
		if tc.Name == "" {
			return errcat.New(errcat.MissingField, "tool_choice.name", "tool_choice.name is required with type tool.")
		}
		choice = namedChoice{Type: "function", Function: struct {
			Name string `json:"name"`
		}{tc.Name}}
	default:
		return errcat.New(errcat.InvalidField, "tool_choice.type", "tool_choice.type must be auto, any, tool or none.")
	}
	if len(tools) == 0 {
		if tc.Type == "any" || tc.Type == "tool" {
			return errcat.Newf(errcat.InvalidField, "tool_choice", "tool_choice %s needs tools.", tc.Type)
		}
		return nil // auto and none say nothing without tools
	}
	b, err := json.Marshal(choice)
	if err != nil {
		return errcat.Internal(err)
	}
	c.ToolChoice = b
	if tc.DisableParallelToolUse {
		parallel := false
		c.ParallelToolCalls = &parallel
	}
	return nil
}

// outputConfig is output_config: its format becomes response_format.
type outputConfig struct {
	Format *struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	} `json:"format"`
	Effort json.RawMessage `json:"effort"`
}

// responseFormat translates output_config.format {"type":"json_schema",
// "schema"} into response_format {"type":"json_schema","json_schema":
// {"name":"output","schema"}}; effort cannot be honoured.
func responseFormat(raw json.RawMessage) (json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	var oc outputConfig
	switch {
	case json.Unmarshal(raw, &oc) != nil:
		return nil, errcat.New(errcat.InvalidField, "output_config", "output_config must be an object.")
	case !isNull(oc.Effort):
		return nil, errcat.New(errcat.InvalidField, "output_config.effort",
			"output_config.effort is not supported: it needs an Anthropic model. Leave it out.")
	case oc.Format == nil:
		return nil, nil
	case oc.Format.Type != "json_schema":
		return nil, errcat.New(errcat.InvalidField, "output_config.format.type", "output_config.format.type must be json_schema.")
	case isNull(oc.Format.Schema) || oc.Format.Schema[0] != '{':
		return nil, errcat.New(errcat.InvalidField, "output_config.format.schema", "output_config.format.schema must be a JSON Schema object.")
	}
	type jsonSchema struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	}
	b, err := json.Marshal(struct {
		Type       string     `json:"type"`
		JSONSchema jsonSchema `json:"json_schema"`
	}{"json_schema", jsonSchema{"output", oc.Format.Schema}})
	if err != nil {
		return nil, errcat.Internal(err)
	}
	return b, nil
}

// checkThinking accepts thinking only when it asks for none.
func checkThinking(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var t struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &t) != nil || t.Type != "disabled" {
		return errcat.New(errcat.InvalidField, "thinking", "thinking is not supported: "+unsupported["thinking"]+".")
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return wire.IsNull(raw) }
