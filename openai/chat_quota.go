package openai

import (
	"encoding/json"
	"math"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/quota"
)

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
	return s.quota.Admit(tenant, pf.Model, quota.Reserve(pf.Model, pf.PromptTokens, outputReserve(pf)))
}

// outputReserve returns the larger of max_tokens and max_completion_tokens of
// the rewritten body (so after flooring), or -1 without either.
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
	return out
}
