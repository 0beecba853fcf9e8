package anthropic

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/wire"
)

// upChoice is what the translation reads of a choice of an upstream chat
// completion (Message) or chunk (Delta).
type upChoice struct {
	Index   int `json:"index"`
	Message struct {
		Content   json.RawMessage `json:"content"`
		ToolCalls []wire.ToolCall `json:"tool_calls"`
	} `json:"message"`
	Delta struct {
		Content   *string              `json:"content"`
		ToolCalls []wire.ToolCallDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
	// StopReason is vLLM's addition to a choice: the stop string (or token
	// id) that ended the answer, the only way to tell a stop sequence from
	// the end of the turn.
	StopReason json.RawMessage `json:"stop_reason"`
}

// upAnswer is an upstream chat completion or chunk.
type upAnswer struct {
	Choices []upChoice      `json:"choices"`
	Usage   json.RawMessage `json:"usage"`
}

// first returns the choice of index 0, or nil: a Messages API answer is one
// message.
func (a *upAnswer) first() *upChoice {
	for i := range a.Choices {
		if a.Choices[i].Index == 0 {
			return &a.Choices[i]
		}
	}
	return nil
}

// usage is the Messages API's usage object.
type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// usageOf translates a chat-completions usage object: prompt_tokens counts
// the cached prompt tokens too, Anthropic's input_tokens does not (they are
// cache_read_input_tokens). An absent or unreadable usage is zero.
func usageOf(raw json.RawMessage) usage {
	var u struct {
		Prompt     int64 `json:"prompt_tokens"`
		Completion int64 `json:"completion_tokens"`
		Details    struct {
			Cached int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
	if wire.IsNull(raw) || json.Unmarshal(raw, &u) != nil {
		return usage{}
	}
	cached := min(max(u.Details.Cached, 0), max(u.Prompt, 0))
	return usage{InputTokens: max(u.Prompt, 0) - cached, CacheReadInputTokens: cached, OutputTokens: max(u.Completion, 0)}
}

// stopReason translates how the upstream answer ended into the Messages
// API's stop_reason and stop_sequence: tool calls are tool_use (some
// servers say stop), length is max_tokens, content_filter is refusal, and
// stop is stop_sequence only when the upstream named the stop string that
// ended it and the request had it among its stop_sequences (vLLM does;
// other servers cannot be told from end_turn).
func stopReason(finish string, tools bool, matched json.RawMessage, stops []string) (string, *string) {
	switch {
	case finish == "length":
		return "max_tokens", nil
	case finish == "content_filter":
		return "refusal", nil
	case tools:
		return "tool_use", nil
	}
	var s string
	if finish == "stop" && json.Unmarshal(matched, &s) == nil && slices.Contains(stops, s) {
		return "stop_sequence", &s
	}
	return "end_turn", nil
}

// message is a Messages API message, the answer to a request without
// stream.
type message struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []any   `json:"content"` // textContent and toolUseContent
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        usage   `json:"usage"`
}

// textContent is a text block of an answer.
type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// toolUseContent is a tool_use block of an answer.
type toolUseContent struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// completion translates an upstream chat completion into the message
// answering q: its text as one text block, then a tool_use block per tool
// call, whose input is the call's arguments; arguments that are not a JSON
// object cannot be an input and answer upstream_error, rather than a
// changed call.
func completion(b []byte, id, model string, stops []string) ([]byte, error) {
	var a upAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, err
	}
	m := message{ID: id, Type: "message", Role: "assistant", Model: model, Content: []any{}, Usage: usageOf(a.Usage)}
	finish := ""
	var matched json.RawMessage
	tools := false
	if c := a.first(); c != nil {
		if text := wire.ContentText(c.Message.Content); text != "" {
			m.Content = append(m.Content, textContent{Type: "text", Text: text})
		}
		for _, call := range c.Message.ToolCalls {
			input, err := toolInput(call.Function.Arguments)
			if err != nil {
				return nil, err
			}
			m.Content = append(m.Content, toolUseContent{Type: "tool_use", ID: call.ID, Name: call.Function.Name, Input: input})
			tools = true
		}
		if c.FinishReason != nil {
			finish = *c.FinishReason
		}
		matched = c.StopReason
	}
	reason, seq := stopReason(finish, tools, matched, stops)
	m.StopReason, m.StopSequence = &reason, seq
	return json.Marshal(m)
}

// toolInput is the input of a tool call with arguments args: "" is {}.
func toolInput(args string) (json.RawMessage, error) {
	args = strings.TrimSpace(args)
	if args == "" {
		return json.RawMessage("{}"), nil
	}
	var buf bytes.Buffer
	if !strings.HasPrefix(args, "{") || json.Compact(&buf, []byte(args)) != nil {
		return nil, errcat.New(errcat.UpstreamError, "",
			"The model called a tool with arguments that are not a JSON object; the Messages API cannot carry them.")
	}
	return buf.Bytes(), nil
}
