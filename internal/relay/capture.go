package relay

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/chatgw/gateway/internal/jsonscan"
	"github.com/chatgw/gateway/internal/wire"
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
	ToolCalls []wire.ToolCall
	// FinishReason is the choice's finish_reason, or "".
	FinishReason string
	// Usage is the usage object verbatim, or nil when the answer had none (a
	// stream carries one only with stream_options.include_usage).
	Usage json.RawMessage
	// UsageOnly, when set before the relay, keeps the answer's usage (and a
	// stream's id, model and finish reason) but not its text or tool calls: a
	// relay that needs only the usage (quota settlement and usage records)
	// then holds constant memory however long the stream runs, and of a JSON
	// answer, which may be an embeddings list of megabytes of numbers, reads
	// the top-level usage member alone.
	UsageOnly bool

	size    int64 // bytes of text collected so far (calls has its own)
	content strings.Builder
	calls   wire.ToolCalls // the streamed tool calls, joined
	fast    fastChunk      // addChunk's walk, reused from chunk to chunk
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
	var ch wire.Chunk
	if json.Unmarshal([]byte(data), &ch) != nil {
		return
	}
	c.setHead(ch.Meta, ch.Usage)
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
		c.calls.Add(d.ToolCalls)
	}
}

// held is the number of bytes of the reply the capture holds: its text and
// its tool calls' names and arguments.
func (c *Capture) held() int64 { return c.size + c.calls.Size() }

// finish moves the accumulated text into the exported fields.
func (c *Capture) finish() {
	c.fast = fastChunk{} // holds on to the last chunk
	if c.content.Len() > 0 {
		c.Content = c.content.String()
	}
	if c.calls.Len() > 0 {
		c.ToolCalls = c.calls.Calls()
	}
}

// fromJSON fills the capture from a whole chat completion.
func (c *Capture) fromJSON(b []byte) {
	if c.UsageOnly {
		c.usageFromJSON(b)
		return
	}
	var cp wire.Completion
	if json.Unmarshal(b, &cp) != nil {
		return
	}
	c.setHead(cp.Meta, cp.Usage)
	for _, choice := range cp.Choices {
		if choice.Index != 0 {
			continue
		}
		m := choice.Message
		c.Role = m.Role
		c.Content = wire.ContentText(m.Content)
		c.ToolCalls = m.ToolCalls
		if choice.FinishReason != nil {
			c.FinishReason = *choice.FinishReason
		}
	}
}

// setHead keeps what the answer says of itself, the first time it says it
// (meta), and its usage object, the last one it sends (a stream sends it in
// its last chunk).
func (c *Capture) setHead(m wire.Meta, usage json.RawMessage) {
	if c.ID == "" {
		c.ID, c.Model, c.Created = m.ID, m.Model, m.Created
	}
	if isJSONObject(usage) {
		c.Usage = usage
	}
}

func isJSONObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }

// usageFromJSON keeps the top-level usage of a JSON answer, b, walking its
// members with jsonscan instead of decoding the whole answer.
func (c *Capture) usageFromJSON(b []byte) {
	sc := jsonscan.New(b)
	start := sc.Space(0)
	if start >= len(b) || b[start] != '{' {
		return
	}
	var usage span
	_, _ = sc.Object(start, func(k jsonscan.Key, v int) (int, error) {
		end, err := sc.Value(v)
		if err == nil && string(b[k.Start:k.End]) == `"usage"` && isJSONObject(b[v:end]) {
			usage = span{v, end}
		}
		return end, err
	})
	c.keepUsage(b, usage)
}

// keepUsage keeps the usage object at span u of b, a JSON answer; an empty
// span keeps none.
func (c *Capture) keepUsage(b []byte, u span) {
	if u.end > u.start {
		c.Usage = bytes.Clone(b[u.start:u.end]) // b may be large: keep only this
	}
}
