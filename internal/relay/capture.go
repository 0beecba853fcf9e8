package relay

import (
	"encoding/json"
	"strings"
)

// Capture collects the assistant reply of an answer (choice 0) for callers that
// persist it, from a JSON completion or from the chunks of a stream. What
// arrived is kept even when the relay did not complete; Result.Complete says
// whether the reply is whole.
type Capture struct {
	// ID, Model and Created are the completion's own.
	ID      string
	Model   string
	Created int64
	// Role is the message role, normally "assistant".
	Role string
	// Content is the text of the reply (deltas joined; text parts joined).
	Content string
	// ToolCalls are the tool calls of the reply, their arguments joined from
	// the deltas, in index order.
	ToolCalls []ToolCall
	// FinishReason is the choice's finish_reason, or "".
	FinishReason string
	// Usage is the usage object verbatim, or nil when the answer had none (a
	// stream carries one only with stream_options.include_usage).
	Usage json.RawMessage
	// UsageOnly, when set before the relay, keeps the answer's id, model,
	// finish reason and usage but not its text or tool calls: a relay that
	// needs only the usage (quota settlement on /v1) then holds constant memory
	// however long the stream runs.
	UsageOnly bool

	size    int64 // bytes of text and tool-call arguments collected so far
	content strings.Builder
	args    [][]byte  // arguments of ToolCalls, by index
	fast    fastChunk // addChunk's walk, reused from chunk to chunk
}

// ToolCall is one tool call of the reply, in OpenAI's message shape.
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

type toolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type streamChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Created int64  `json:"created"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      string          `json:"role"`
			Content   *string         `json:"content"`
			ToolCalls []toolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

// addChunk folds one stream chunk into the capture; data that is not a chunk
// is ignored.
func (c *Capture) addChunk(data string) {
	if c.fast.parse(data) {
		c.addFast(&c.fast)
		return
	}
	c.addChunkJSON(data)
}

// addChunkJSON is addChunk with json.Unmarshal, for the chunks the fast path
// gives up on.
func (c *Capture) addChunkJSON(data string) {
	var ch streamChunk
	if json.Unmarshal([]byte(data), &ch) != nil {
		return
	}
	c.setMeta(ch.ID, ch.Model, ch.Created)
	if isJSONObject(ch.Usage) {
		c.Usage = ch.Usage
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue
		}
		d := choice.Delta
		if d.Role != "" {
			c.Role = d.Role
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			c.FinishReason = *choice.FinishReason
		}
		if c.UsageOnly {
			continue
		}
		if d.Content != nil {
			c.content.WriteString(*d.Content)
			c.size += int64(len(*d.Content))
		}
		for _, tc := range d.ToolCalls {
			if tc.Index < 0 || tc.Index > 1024 {
				continue
			}
			for len(c.ToolCalls) <= tc.Index {
				c.ToolCalls = append(c.ToolCalls, ToolCall{})
				c.args = append(c.args, nil)
			}
			t := &c.ToolCalls[tc.Index]
			if tc.ID != "" {
				t.ID = tc.ID
			}
			if tc.Type != "" {
				t.Type = tc.Type
			}
			if tc.Function.Name != "" {
				t.Function.Name += tc.Function.Name
			}
			c.args[tc.Index] = append(c.args[tc.Index], tc.Function.Arguments...)
			c.size += int64(len(tc.Function.Name) + len(tc.Function.Arguments))
		}
	}
}

// finish moves the accumulated text into the exported fields.
func (c *Capture) finish() {
	c.fast = fastChunk{} // holds on to the last chunk
	if c.content.Len() > 0 {
		c.Content = c.content.String()
	}
	for i := range c.args {
		c.ToolCalls[i].Function.Arguments = string(c.args[i])
		if c.ToolCalls[i].Type == "" {
			c.ToolCalls[i].Type = "function"
		}
	}
}

type completion struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Created int64  `json:"created"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []ToolCall      `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

// fromJSON fills the capture from a whole chat completion.
func (c *Capture) fromJSON(b []byte) {
	var cp completion
	if json.Unmarshal(b, &cp) != nil {
		return
	}
	c.setMeta(cp.ID, cp.Model, cp.Created)
	if isJSONObject(cp.Usage) {
		c.Usage = cp.Usage
	}
	for _, choice := range cp.Choices {
		if choice.Index != 0 {
			continue
		}
		m := choice.Message
		c.Role = m.Role
		c.Content = ContentText(m.Content)
		c.ToolCalls = m.ToolCalls
		if choice.FinishReason != nil {
			c.FinishReason = *choice.FinishReason
		}
	}
}

func (c *Capture) setMeta(id, model string, created int64) {
	if c.ID == "" {
		c.ID, c.Model, c.Created = id, model, created
	}
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

func isJSONObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }
