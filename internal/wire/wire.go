// Package wire holds the OpenAI Chat Completions wire types of the gateway:
// the answers it reads (completions, stream chunks, tool calls and their
// deltas, usage), the requests and messages it builds (Request, Message and
// its constructors), and the helpers every reader of them needs. The relay,
// /c1 and agents share them, so that a chunk is read, and a message written,
// one way everywhere. They describe what the gateway reads and writes, not
// every field OpenAI defines: unknown fields are ignored, and a client's
// bodies are forwarded verbatim, never re-marshalled from these types.
package wire

import (
	"encoding/json"
	"strconv"

	"github.com/chatgw/gateway/internal/jsonscan"
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

// usage is what UsedTokens reads of a usage object; a count the object
// leaves out stays nil.
type usage struct {
	Total      *int64 `json:"total_tokens"`
	Prompt     *int64 `json:"prompt_tokens"`
	Completion *int64 `json:"completion_tokens"`
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
// count is 0, and a count that is not an integer is left out. ok is false,
// and the counts 0, when raw is absent, null, not a usage object or has none
// of those counts: the answer reported no usage. It reads raw in place with
// jsonscan and allocates nothing: it runs once per metered request.
func Tokens(usage json.RawMessage) (in, out int64, ok bool) {
	raw := []byte(usage)
	const (
		prompt = iota
		completion
		input
		output
		total
		nCounts
	)
	var (
		n    [nCounts]int64
		seen [nCounts]bool
	)
	sc := jsonscan.New(raw)
	start := sc.Space(0)
	if start >= len(raw) || raw[start] != '{' {
		return 0, 0, false
	}
	end, err := sc.Object(start, func(k jsonscan.Key, v int) (int, error) {
		end, err := sc.Value(v)
		if err != nil {
			return end, err
		}
		i := -1
		switch string(raw[k.Start:k.End]) {
		case `"prompt_tokens"`:
			i = prompt
		case `"completion_tokens"`:
			i = completion
		case `"input_tokens"`:
			i = input
		case `"output_tokens"`:
			i = output
		case `"total_tokens"`:
			i = total
		}
		if i >= 0 {
			n[i], seen[i] = parseCount(raw[v:end])
		}
		return end, nil
	})
	if err != nil || sc.Space(end) != len(raw) {
		return 0, 0, false
	}
	pick := func(a, b int) (int64, bool) {
		if seen[a] {
			return n[a], true
		}
		return n[b], seen[b]
	}
	in, inOK := pick(prompt, input)
	out, outOK := pick(completion, output)
	if !inOK && !outOK {
		in, inOK = n[total], seen[total]
	}
	return max(in, 0), max(out, 0), inOK || outOK
}

// parseCount reads a JSON integer (a count of tokens); ok is false for
// anything else, a fraction or an exponent included, and for one that does
// not fit in an int64. strconv does not allocate when it succeeds.
func parseCount(b []byte) (n int64, ok bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}
