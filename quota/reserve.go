package quota

import "github.com/chatgw/gateway/upstream"

// DefaultReserveCap bounds the output part of a reservation when the request
// caps no output (no max_tokens): the model may answer up to its context window,
// but reserving all of it would make a token budget refuse most concurrent
// requests. Real usage above the reservation is still charged by Settle.
const DefaultReserveCap = 4096

// Reserve is the reservation of a chat request: its output cap (maxOutput, or
// min(context_window - prompt, DefaultReserveCap) when maxOutput < 0) plus its
// prompt estimate.
func Reserve(m *upstream.ModelInfo, promptTokens int, maxOutput int64) int64 {
	if maxOutput < 0 {
		maxOutput = DefaultReserveCap
		if w := window(m); w > 0 {
			maxOutput = int64(max(min(w-promptTokens, DefaultReserveCap), 0))
		}
	}
	return maxOutput + int64(promptTokens)
}

// window is m's effective context window (learned from its servers, else
// the catalog's), 0 for no model.
func window(m *upstream.ModelInfo) int {
	if m == nil {
		return 0
	}
	return m.Window()
}
