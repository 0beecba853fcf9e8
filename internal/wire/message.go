package wire

import (
	"encoding/json"
	"strings"
)

// Message is a chat message as the gateway stores, reads back and replays it:
// its content and tool calls verbatim, so that a replayed tool call is the
// one that was stored. (An answer's tool calls, which the gateway reads, are
// CompletionChoice's ToolCall values.) Marshalled, it writes role and content
// always and tool_call_id and tool_calls only when set, in that order, the
// layout the stored conversations have.
type Message struct {
	Role string `json:"role"`
	// Content is a string, an array of content parts or null, verbatim.
	Content    json.RawMessage   `json:"content"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
	ToolCalls  []json.RawMessage `json:"tool_calls,omitempty"`
}

// ContentPart is what the gateway reads of one element of a content-parts
// array: its type, and the text of a text part.
type ContentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Part is an element of the content-parts array of a user message the
// gateway builds when it translates another API's message (Anthropic's
// blocks, the Responses API's input parts): a text part, or an image_url
// part. Marshalled, it writes type, then text or image_url.
type Part struct {
	Type     string    `json:"type"`
	Text     *string   `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is the image of an image_url part: its URL (a data: URI or a
// link, which the pre-flight checks read as a /v1 client's) and the detail
// the client asked for, "" for none (then left out).
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// TextPart returns the text part of text.
func TextPart(text *string) Part { return Part{Type: "text", Text: text} }

// ImagePart returns the image_url part of url with detail ("" for none).
func ImagePart(url, detail string) Part {
	return Part{Type: "image_url", ImageURL: &ImageURL{URL: url, Detail: detail}}
}

// PartsMessage returns the user message of parts: its content a plain
// string when parts is one text part (every chat-completions server reads
// that), else the parts array. It fails only when a part does not marshal.
func PartsMessage(parts []Part) (json.RawMessage, error) {
	if len(parts) == 1 && parts[0].Type == "text" && parts[0].Text != nil {
		return TextMessage("user", *parts[0].Text), nil
	}
	b, err := json.Marshal(parts)
	if err != nil {
		return nil, err
	}
	return UserMessage(b)
}

// ContentText returns a chat message's content as text: a string as it is,
// the text parts of a content-parts array joined, "" for anything else.
func ContentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []ContentPart
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// TextMessage returns the chat message {"role":role,"content":content}.
func TextMessage(role, content string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{role, content}) // strings only: cannot fail
	return b
}

// UserMessage returns the user message {"role":"user","content":content},
// content (a string or an array of content parts) compacted but otherwise
// as it is. It fails only when content is not valid JSON.
func UserMessage(content json.RawMessage) (json.RawMessage, error) {
	return json.Marshal(Message{Role: "user", Content: content})
}

// AssistantMessage returns an assistant message with its text (possibly "")
// and, when there are any, its tool calls in OpenAI's shape.
func AssistantMessage(content string, calls []ToolCall) json.RawMessage {
	b, _ := json.Marshal(struct {
		Role      string     `json:"role"`
		Content   string     `json:"content"`
		ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	}{"assistant", content, calls})
	return b
}

// ToolMessage returns the tool message answering tool call callID. Its
// members come in the order role, tool_call_id, content (agent sessions store
// it so), not Message's.
func ToolMessage(callID, content string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
		Content    string `json:"content"`
	}{"tool", callID, content})
	return b
}
