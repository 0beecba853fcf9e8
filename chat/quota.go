package chat

import (
	"encoding/json"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/quota"
	"github.com/chatgw/gateway/internal/relay"
)

// defaultReserveCap bounds the output reservation of a quota admission when
// the request gives no max_tokens: the model may answer up to its context
// window, but reserving all of it would make a token budget refuse most
// concurrent requests, so the reservation is min(context_window - prompt
// estimate, defaultReserveCap). Real usage above it is still charged when the
// answer carries usage. /v1/chat/completions uses the same value (openai
// package).
const defaultReserveCap = 4096

// admit asks the quota Accountant for a ticket for the turn. The reservation is
// the output cap (max_tokens after flooring, or the default of defaultReserveCap)
// plus the pre-flight prompt estimate. A nil Accountant, or no budget for the
// alias, gives a nil ticket, whose methods do nothing.
func (s *Service) admit(tenant *auth.Tenant, q *chatRequest, pf *preflight.Result) (*quota.Ticket, error) {
	if s.quota == nil {
		return nil, nil
	}
	var out int64
	switch {
	case pf.FlooredMaxTokens > 0:
		out = int64(pf.FlooredMaxTokens)
	case q.MaxTokens != nil:
		out = int64(*q.MaxTokens)
	default:
		out = defaultReserve(pf)
	}
	return s.quota.Admit(tenant, pf.Model, out+int64(pf.PromptTokens))
}

// defaultReserve is the output reservation of a request without max_tokens.
func defaultReserve(pf *preflight.Result) int64 {
	if cw := pf.Model.ContextWindow; cw > 0 {
		return int64(max(min(cw-pf.PromptTokens, defaultReserveCap), 0))
	}
	return defaultReserveCap
}

// usedTokens returns the tokens the captured answer says it used:
// usage.total_tokens, or prompt_tokens + completion_tokens when the total is
// missing; -1 (unknown, Settle charges the reservation) when the answer had no
// usage, as a stream without stream_options.include_usage.
func usedTokens(c *relay.Capture) int64 {
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
