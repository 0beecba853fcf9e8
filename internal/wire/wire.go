// Package wire holds the OpenAI Chat Completions wire types of the gateway:
// the answers it reads (completions, stream chunks, tool calls and their
// deltas, usage), the requests and messages it builds (Request, Message and
// its constructors), and the helpers every reader of them needs. The relay,
// /c1 and agents share them, so that a chunk is read, and a message written,
// one way everywhere. They describe what the gateway reads and writes, not
// every field OpenAI defines: unknown fields are ignored, and a client's
// bodies are forwarded verbatim, never re-marshalled from these types.
package wire

import "encoding/json"

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
	Index    int          `json:"index"`
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"` // a piece of the name and of the arguments
}

// Meta is what a completion and each chunk of its stream say of themselves:
// the completion's id, model and created time.
type Meta struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Created int64  `json:"created"`
}

// Chunk is a chat.completion.chunk of a stream.
type Chunk struct {
	Meta
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
	Meta
	Choices []CompletionChoice `json:"choices"`
	// Usage is the usage object verbatim, or nil/null.
	Usage json.RawMessage `json:"usage"`
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

// usage is what UsedTokens and Tokens read of a usage object; a count the
// object leaves out stays nil. Chat completions and embeddings name their
// counts prompt and completion tokens; image generation and the Responses
// API name them input and output tokens.
type usage struct {
	Total      *int64 `json:"total_tokens"`
	Prompt     *int64 `json:"prompt_tokens"`
	Completion *int64 `json:"completion_tokens"`
	Input      *int64 `json:"input_tokens"`
	Output     *int64 `json:"output_tokens"`
}

// UsedTokens returns the tokens that raw, an answer's usage object verbatim,
// says were used: total_tokens, or prompt_tokens + completion_tokens (a
// negative count as 0) when there is no total of at least 0. It is -1
// (unknown) when raw is absent (a stream without
// stream_options.include_usage), null or not a usage object, or has neither
// such a total nor a prompt or completion count.
func UsedTokens(raw json.RawMessage) int64 {
	if len(raw) == 0 {
		return -1
	}
	var u usage
	if json.Unmarshal(raw, &u) != nil {
		return -1
	}
	switch {
	case u.Total != nil && *u.Total >= 0:
		return *u.Total
	case u.Prompt != nil || u.Completion != nil:
		var n int64
		if u.Prompt != nil {
			n += max(*u.Prompt, 0)
		}
		if u.Completion != nil {
			n += max(*u.Completion, 0)
		}
		return n
	}
	return -1
}

// IsNull reports whether raw is absent or JSON null.
func IsNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// Tokens returns the input and output tokens that raw, an answer's usage
// object verbatim, reports, as the upstream counted them: prompt_tokens and
// completion_tokens (chat completions, embeddings), else input_tokens and
// output_tokens (image generation); a usage object with only total_tokens
// (an embeddings server that counts no more) reports it as input. A negative
// count is 0. ok is false, and the counts 0, when raw is absent, null, not a
// usage object or has none of those counts: the answer reported no usage.
func Tokens(raw json.RawMessage) (in, out int64, ok bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return 0, 0, false
	}
	var u usage
	if json.Unmarshal(raw, &u) != nil {
		return 0, 0, false
	}
	first := func(a, b *int64) *int64 {
		if a != nil {
			return a
		}
		return b
	}
	inp, outp := first(u.Prompt, u.Input), first(u.Completion, u.Output)
	if inp == nil && outp == nil {
		inp = u.Total
	}
	if inp == nil && outp == nil {
		return 0, 0, false
	}
	if inp != nil {
		in = max(*inp, 0)
	}
	if outp != nil {
		out = max(*outp, 0)
	}
	return in, out, true
}
