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
