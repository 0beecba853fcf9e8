// Package wire holds the OpenAI Chat Completions wire types the gateway reads:
// completions, stream chunks, tool calls and their deltas, and the helpers
// every reader of them needs. The relay, /c1 and agents share them, so that a
// chunk is read one way everywhere; they describe what the gateway reads, not
// every field OpenAI defines (unknown fields are ignored, and bodies are
// forwarded verbatim, never re-marshalled from these types).
package wire

import (
	"encoding/json"
	"strings"
)

// ToolCall is one tool call of an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function of a ToolCall; Arguments is the JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCallDelta is one piece of a streamed tool call: the pieces with one
// Index join into one ToolCall (see ToolCalls).
type ToolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Chunk is a chat.completion.chunk of a stream.
type Chunk struct {
	ID      string        `json:"id"`
	Model   string        `json:"model"`
	Created int64         `json:"created"`
	Choices []ChunkChoice `json:"choices"`
	// Usage is the usage object verbatim (a stream carries one only with
	// stream_options.include_usage), or nil/null.
	Usage json.RawMessage `json:"usage"`
}

// ChunkChoice is one choice of a Chunk.
type ChunkChoice struct {
	Index int `json:"index"`
	Delta struct {
		Role      string          `json:"role"`
		Content   *string         `json:"content"`
		ToolCalls []ToolCallDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// Completion is a whole chat.completion.
type Completion struct {
	ID      string             `json:"id"`
	Model   string             `json:"model"`
	Created int64              `json:"created"`
	Choices []CompletionChoice `json:"choices"`
	Usage   json.RawMessage    `json:"usage"`
}

// CompletionChoice is one choice of a Completion.
type CompletionChoice struct {
	Index   int `json:"index"`
	Message struct {
		Role string `json:"role"`
		// Content is a string, an array of content parts or null, verbatim
		// (ContentText reads its text).
		Content   json.RawMessage `json:"content"`
		ToolCalls []ToolCall      `json:"tool_calls"`
	} `json:"message"`
	FinishReason *string `json:"finish_reason"`
}

// ToolCalls joins streamed tool-call deltas by index into whole tool calls.
// The zero value is ready to use.
type ToolCalls struct {
	calls []ToolCall
	args  [][]byte // arguments by index, joined without a copy per delta
	size  int64
}

// maxToolCallIndex bounds the index a delta may name, so that a hostile
// stream cannot make Add allocate a huge slice.
const maxToolCallIndex = 1024

// Add folds the deltas of one chunk in; a delta whose index is out of range
// is ignored.
func (t *ToolCalls) Add(ds []ToolCallDelta) {
	for _, d := range ds {
		if d.Index < 0 || d.Index > maxToolCallIndex {
			continue
		}
		for len(t.calls) <= d.Index {
			t.calls = append(t.calls, ToolCall{})
			t.args = append(t.args, nil)
		}
		c := &t.calls[d.Index]
		if d.ID != "" {
			c.ID = d.ID
		}
		if d.Type != "" {
			c.Type = d.Type
		}
		c.Function.Name += d.Function.Name
		t.args[d.Index] = append(t.args[d.Index], d.Function.Arguments...)
		t.size += int64(len(d.Function.Name) + len(d.Function.Arguments))
	}
}

// Size is the number of bytes of names and arguments added so far.
func (t *ToolCalls) Size() int64 { return t.size }

// Len is the number of tool calls so far.
func (t *ToolCalls) Len() int { return len(t.calls) }

// Calls returns the tool calls in index order, their arguments joined and
// their type "function" where no delta named one.
func (t *ToolCalls) Calls() []ToolCall {
	for i := range t.calls {
		t.calls[i].Function.Arguments = string(t.args[i])
		if t.calls[i].Type == "" {
			t.calls[i].Type = "function"
		}
	}
	return t.calls
}

// IsNull reports whether raw is absent or JSON null.
func IsNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// ContentText returns a chat message's content as text: a string as it is,
// the text parts of a content-parts array joined, "" for anything else.
func ContentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
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

// ToolMessage returns the tool message answering tool call callID.
func ToolMessage(callID, content string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
		Content    string `json:"content"`
	}{"tool", callID, content})
	return b
}
