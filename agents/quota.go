package agents

import (
	"context"
	"encoding/json"

	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/quota"
)

// admit asks the quota Accountant for a ticket for one upstream call of rn,
// made against rn.model: quota's default output reservation (an agent
// request carries no max_tokens) plus rn.prompt, the prompt estimate of the
// call. A nil Accountant, or no budget for the alias, gives a nil ticket,
// whose methods do nothing. A refusal is model_quota_exhausted or
// cloudB_daily_quota_exhausted, exactly as on /c1.
func (s *Service) admit(ctx context.Context, rn *run) (*quota.Ticket, error) {
	return s.quota.Admit(ctx, rn.principal.Tenant, rn.model, quota.Reserve(rn.model, rn.prompt, -1))
}

// messageTokens is the prompt estimate of a message the tool loop appends to
// the history (an assistant message with its tool calls, a tool result): the
// pre-flight estimate's per-message cost plus its size in bytes at
// preflight.BytesPerToken, counting the whole JSON message, which errs high.
func messageTokens(msg json.RawMessage) int {
	return preflight.TokensPerMessage + (len(msg)+preflight.BytesPerToken-1)/preflight.BytesPerToken
}
