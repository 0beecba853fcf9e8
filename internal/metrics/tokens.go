package metrics

import (
	"encoding/json"
	"strconv"

	"github.com/chatgw/gateway/internal/jsonscan"
)

// tokensOf returns the input and output tokens that raw, an answer's usage
// object verbatim, reports, as the upstream counted them (billable tokens,
// cached ones included): prompt_tokens and completion_tokens (chat
// completions, embeddings), else input_tokens and output_tokens (image
// generation, the Responses API). A count that is not an integer is
// ignored; a negative one is 0. ok is false when raw reports neither pair.
// It walks raw with jsonscan rather than decoding it, since it runs for
// every answer relayed.
func tokensOf(raw json.RawMessage) (in, out int64, ok bool) {
	var (
		counts [4]int64 // prompt, completion, input, output
		have   [4]bool
	)
	s := jsonscan.New([]byte(raw))
	start := s.Space(0)
	if start >= len(raw) || raw[start] != '{' {
		return 0, 0, false
	}
	_, err := s.Object(start, func(k jsonscan.Key, v int) (int, error) {
		end, err := s.Value(v)
		if err != nil {
			return end, err
		}
		i := -1
		switch string(raw[k.Start:k.End]) {
		case `"prompt_tokens"`:
			i = 0
		case `"completion_tokens"`:
			i = 1
		case `"input_tokens"`:
			i = 2
		case `"output_tokens"`:
			i = 3
		}
		if i >= 0 {
			if n, err := strconv.ParseInt(string(raw[v:end]), 10, 64); err == nil {
				counts[i], have[i] = max(n, 0), true
			}
		}
		return end, nil
	})
	switch {
	case err != nil:
		return 0, 0, false
	case have[0] || have[1]:
		return counts[0], counts[1], true
	case have[2] || have[3]:
		return counts[2], counts[3], true
	}
	return 0, 0, false
}
