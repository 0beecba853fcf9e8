package openai

import (
	"encoding/json"
	"math"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/quota"
	"github.com/chatgw/gateway/internal/relay"
)

// defaultReserveCap bounds the output reservation of a quota admission when
// the request gives neither max_tokens nor max_completion_tokens: the
// reservation is min(context_window - prompt estimate, defaultReserveCap),
// since reserving the whole window would make a token budget refuse most
// concurrent requests. Real usage above it is still charged when the answer
// carries usage. /c1/chat uses the same value (chat package).
const defaultReserveCap = 4096

// admit asks the quota Accountant for a ticket for the request: the output cap
// plus the pre-flight prompt estimate. A nil Accountant, or no budget for the
// alias, gives a nil ticket, whose methods do nothing.
func (s *Service) admit(tenant *auth.Tenant, pf *preflight.Result) (*quota.Ticket, error) {
	if s.quota == nil || tenant == nil {
		return nil, nil
	}
	if _, ok := tenant.Quotas[pf.Model.Alias]; !ok {
		// No budget: Admit would return a nil ticket; skip reading max_tokens
		// back from the body.
		return nil, nil
	}
	return s.quota.Admit(tenant, pf.Model, outputReserve(pf)+int64(pf.PromptTokens))
}

// outputReserve returns the larger of max_tokens and max_completion_tokens of
// the rewritten body (so after flooring), or, without either, the default of
// defaultReserveCap.
func outputReserve(pf *preflight.Result) int64 {
	var b struct {
		MaxTokens           *float64 `json:"max_tokens"`
		MaxCompletionTokens *float64 `json:"max_completion_tokens"`
	}
	_ = json.Unmarshal(pf.Body, &b) // the pre-flight checks validated the body
	var out int64 = -1
	for _, v := range [...]*float64{b.MaxTokens, b.MaxCompletionTokens} {
		if v != nil && !math.IsNaN(*v) {
			out = max(out, int64(max(min(*v, 1e12), 0)))
		}
	}
	if out >= 0 {
		return out
	}
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
