package chat

import (
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/quota"
)

// admit asks the quota Accountant for a ticket for the turn: max_tokens after
// flooring (or quota's default output reservation) plus the pre-flight prompt
// estimate. A nil Accountant, or no budget for the alias, gives a nil ticket,
// whose methods do nothing.
func (s *Service) admit(tenant *auth.Tenant, q *chatRequest, pf *preflight.Result) (*quota.Ticket, error) {
	if s.quota == nil {
		return nil, nil
	}
	out := int64(-1)
	switch {
	case pf.FlooredMaxTokens > 0:
		out = int64(pf.FlooredMaxTokens)
	case q.MaxTokens != nil:
		out = int64(*q.MaxTokens)
	}
	return s.quota.Admit(tenant, pf.Model, quota.Reserve(pf.Model, pf.PromptTokens, out))
}
