package relay

import "encoding/json"

// UsedTokens returns the tokens the captured answer says it used:
// usage.total_tokens, or prompt_tokens + completion_tokens when the total is
// missing; -1 (unknown) when the answer had no usage, as a stream without
// stream_options.include_usage. A nil Capture is unknown too.
func (c *Capture) UsedTokens() int64 {
	if c == nil || len(c.Usage) == 0 {
		return -1
	}
	var u struct {
		Total      *int64 `json:"total_tokens"`
		Prompt     *int64 `json:"prompt_tokens"`
		Completion *int64 `json:"completion_tokens"`
	}
	if json.Unmarshal(c.Usage, &u) != nil {
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

// StreamOptions is the stream_options of an upstream chat request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// UsageOptions returns the stream_options with which a gateway-made upstream
// call asks for usage: include_usage when streaming, so that a streamed answer
// settles its quota ticket to the tokens really used (UsedTokens) instead of
// the whole reservation; nil otherwise, as a JSON answer carries usage anyway.
// The usage chunk (empty choices) reaches the client as it does from OpenAI
// when asked for.
func UsageOptions(stream bool) *StreamOptions {
	if !stream {
		return nil
	}
	return &includeUsage
}

// includeUsage is shared: the encoder only reads it.
var includeUsage = StreamOptions{IncludeUsage: true}
