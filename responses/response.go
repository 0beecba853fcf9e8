package responses

import (
	"encoding/json"

	"github.com/chatgw/gateway/internal/wire"
)

// response is the Responses API's response object, its members in the order
// OpenAI sends them.
type response struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	CompletedAt        *int64            `json:"completed_at"`
	Error              *responseError    `json:"error"`
	IncompleteDetails  *incomplete       `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int32            `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []item            `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Store              bool              `json:"store"`
	Temperature        *float64          `json:"temperature"`
	Text               textParam         `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []functionTool    `json:"tools"`
	TopP               *float64          `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *usage            `json:"usage,omitempty"`
	Metadata           map[string]string `json:"metadata"`
}

// responseError is a failed response's error: code is one of the
// Responses API's codes (server_error for every failure of the gateway's
// upstream or store), message the gateway's own.
type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// incomplete says why a response is incomplete: max_output_tokens or
// content_filter.
type incomplete struct {
	Reason string `json:"reason"`
}

type textParam struct {
	Format json.RawMessage `json:"format"`
}

// usage is the Responses API's usage object. input_tokens counts the cached
// tokens too, as chat completions' prompt_tokens does; no backend reports
// cache writes, so cache_write_tokens is 0.
type usage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// usageOf translates a chat-completions usage object; nil when raw is absent
// or unreadable (the response then has no usage).
func usageOf(raw json.RawMessage) *usage {
	var u struct {
		Prompt        int64  `json:"prompt_tokens"`
		Completion    int64  `json:"completion_tokens"`
		Total         *int64 `json:"total_tokens"`
		PromptDetails struct {
			Cached int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionDetails struct {
			Reasoning int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	}
	if wire.IsNull(raw) || json.Unmarshal(raw, &u) != nil {
		return nil
	}
	out := &usage{InputTokens: max(u.Prompt, 0), OutputTokens: max(u.Completion, 0)}
	out.InputTokensDetails.CachedTokens = min(max(u.PromptDetails.Cached, 0), out.InputTokens)
	out.OutputTokensDetails.ReasoningTokens = min(max(u.CompletionDetails.Reasoning, 0), out.OutputTokens)
	out.TotalTokens = out.InputTokens + out.OutputTokens
	if u.Total != nil && *u.Total >= 0 {
		out.TotalTokens = *u.Total
	}
	return out
}

// newResponse is the response to q, in progress, before any output.
func newResponse(q *request, id, model string, created int64) *response {
	r := &response{
		ID: id, Object: "response", CreatedAt: created, Status: "in_progress",
		Instructions: q.instructions, MaxOutputTokens: q.chat.MaxTokens, Model: model,
		Output: []item{}, ParallelToolCalls: q.parallel, Store: q.store,
		Temperature: q.chat.Temperature, Text: textParam{Format: q.format}, ToolChoice: q.toolChoice,
		Tools: q.tools, TopP: q.chat.TopP, Truncation: "disabled", Metadata: q.metadata,
	}
	if q.previous != "" {
		r.PreviousResponseID = &q.previous
	}
	return r
}

// finish completes r with its output, how the upstream's choice finished and
// its usage, at the unix second now: length is incomplete
// (max_output_tokens), content_filter incomplete (content_filter), anything
// else completed.
func (r *response) finish(output []item, finishReason string, u *usage, now int64) {
	r.Output, r.Usage = output, u
	switch finishReason {
	case "length":
		r.Status, r.IncompleteDetails = "incomplete", &incomplete{Reason: "max_output_tokens"}
	case "content_filter":
		r.Status, r.IncompleteDetails = "incomplete", &incomplete{Reason: "content_filter"}
	default:
		r.Status, r.CompletedAt = "completed", &now
	}
}

// serverError is the code of a failed response's error: not a code of the
// gateway's catalog but one of the Responses API's own (ResponseErrorCode),
// the one for a failure on the server's side; the error event after
// response.failed carries the gateway's code.
const serverError = "server_error"

// fail marks r failed with message; its output is what arrived.
func (r *response) fail(output []item, message string) {
	r.Output, r.Status, r.CompletedAt, r.IncompleteDetails = output, "failed", nil, nil
	r.Error = &responseError{Code: serverError, Message: message}
}

// outputItems are the output items of an upstream answer's text and tool
// calls: a message of one output_text part (none without text), then a
// function_call per tool call. newID gives their ids.
func outputItems(text string, calls []wire.ToolCall, status string, newID func(prefix string) string) []item {
	out := make([]item, 0, 1+len(calls))
	if text != "" {
		out = append(out, item{ID: newID("msg"), Type: "message", Status: status, Role: "assistant", Content: []part{outputText(text)}})
	}
	for _, c := range calls {
		args, callID := c.Function.Arguments, c.ID
		if callID == "" { // a call_id is what the client answers the call with
			callID = newID("call")
		}
		out = append(out, item{ID: newID("fc"), Type: "function_call", Status: status, CallID: callID, Name: c.Function.Name, Arguments: &args})
	}
	return out
}

// completion translates an upstream chat completion into r, finished at now.
func completion(b []byte, r *response, now int64, newID func(prefix string) string) error {
	var c wire.Completion
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	var (
		text   string
		calls  []wire.ToolCall
		finish string
	)
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		text, calls = wire.ContentText(ch.Message.Content), ch.Message.ToolCalls
		if ch.FinishReason != nil {
			finish = *ch.FinishReason
		}
	}
	r.finish(outputItems(text, calls, "completed", newID), finish, usageOf(c.Usage), now)
	return nil
}
