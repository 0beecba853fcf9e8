package quota

import (
	"fmt"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/upstream"
)

// modelExhaustedMessage is the message of model_quota_exhausted, whose body
// "names no upstream provider and gives no token counts"; it does not name the
// alias either, since aliases such as lm-4-scout-cloudA carry a provider name.
const modelExhaustedMessage = "The tenant's daily budget for this model is used up; " +
	"it resets at midnight UTC (see Retry-After)."

// refusal builds the error of a request that does not fit; s.mu is held and c
// (nil when nothing was counted yet) is the refused counter of day.
func (a *Accountant) refusal(s *shardState, t *auth.Tenant, m *upstream.ModelInfo, q auth.Quota,
	c *counter, reserve int64, now time.Time, day int64) *errcat.Error {
	var used counter
	if c != nil {
		used = *c
	}
	e := &errcat.Error{
		Code:       errcat.ModelQuotaExhausted,
		Message:    modelExhaustedMessage,
		RetryAfter: errcat.RetryAfterSeconds(untilNextDay(now, day)),
		// For the log line only: errcat never sends Cause to the client.
		Cause: fmt.Errorf("quota: tenant %q alias %q: %d of %d requests; %d spent + %d reserved + %d asked of %d tokens",
			t.ID, m.Alias, used.requests, q.RequestsPerDay, used.tokens, used.reserved, reserve, q.TokensPerDay),
	}
	if pinnedToCloudB(m) {
		e.Code = errcat.CloudBDailyQuotaExhausted
		e.Param = "model"
		e.Message = fmt.Sprintf("The daily quota of model %s is used up; retry with one of available_fallbacks "+
			"as model, or after the reset at 00:00 UTC (see Retry-After).", m.Alias)
		e.Extra = map[string]any{"available_fallbacks": a.fallbacks(s, t, m, reserve)}
	}
	return e
}

// fallbacks lists the candidates the tenant allows whose own budget would admit
// the same request now, those of m's family first; never nil. s.mu is held, and
// s holds every counter of the tenant.
func (a *Accountant) fallbacks(s *shardState, t *auth.Tenant, m *upstream.ModelInfo, reserve int64) []string {
	out := []string{}
	for _, sameFamily := range [...]bool{true, false} {
		for _, cand := range a.candidates {
			if (cand.family == m.Family) != sameFamily || cand.alias == m.Alias || !t.AllowsModel(cand.alias) {
				continue
			}
			if q, ok := t.Quotas[cand.alias]; ok && !fits(s.counters[key{tenant: t.ID, alias: cand.alias}], q, reserve) {
				continue
			}
			out = append(out, cand.alias)
		}
	}
	return out
}

// pinnedToCloudB reports whether every backend of m is on cloudB.
func pinnedToCloudB(m *upstream.ModelInfo) bool {
	for i := range m.Backends {
		if m.Backends[i].Provider != upstream.ProviderCloudB {
			return false
		}
	}
	return len(m.Backends) > 0
}

// servesOffCloudB reports whether m has a usable backend (neither planned nor
// unconfigured, the ones the router skips) on a provider other than cloudB.
func servesOffCloudB(m *upstream.ModelInfo) bool {
	for i := range m.Backends {
		b := &m.Backends[i]
		if b.Provider != upstream.ProviderCloudB && b.Status != upstream.StatusPlanned && b.Status != upstream.StatusUnconfigured {
			return true
		}
	}
	return false
}
