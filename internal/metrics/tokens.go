package metrics

import "encoding/json"

// tokensOf returns the input and output tokens that raw, an answer's usage
// object verbatim, reports, as the upstream counted them (billable tokens,
// cached ones included): prompt_tokens and completion_tokens (chat
// completions, embeddings), else input_tokens and output_tokens (image
// generation, the Responses API). ok is false when raw reports neither.
func tokensOf(raw json.RawMessage) (in, out int64, ok bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return 0, 0, false
	}
	var u struct {
		Prompt     *int64 `json:"prompt_tokens"`
		Completion *int64 `json:"completion_tokens"`
		Input      *int64 `json:"input_tokens"`
		Output     *int64 `json:"output_tokens"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return 0, 0, false
	}
	inp, outp := u.Prompt, u.Completion
	if inp == nil && outp == nil {
		inp, outp = u.Input, u.Output
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
