package quota

import (
	"fmt"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
)

// modelExhaustedMessage is the message of model_quota_exhausted, whose body
// "names no upstream provider and gives no token counts"; it does not name the
// alias either, since aliases such as lm-4-scout-cloudA carry a provider name.
const modelExhaustedMessage = "The tenant's daily budget for this model is used up; " +
	"it resets at midnight UTC (see Retry-After)."

// refusal builds the error of a request that does not fit, in the
// transaction that read rec, the refused counter of day (its expired holds
// dropped). The store's failure to read a fallback's counter is returned
// instead.
func (a *Accountant) refusal(tx store.Tx, t *auth.Tenant, m *upstream.ModelInfo, q auth.Quota,
	rec *record, reserve int64, now time.Time, day int64) error {
	e := &errcat.Error{
		Code:       errcat.ModelQuotaExhausted,
		Message:    modelExhaustedMessage,
		RetryAfter: errcat.RetryAfterSeconds(untilNextDay(now, day)),
		// For the log line only: errcat never sends Cause to the client.
		Cause: fmt.Errorf("quota: tenant %q alias %q: %d of %d requests; %d spent + %d reserved + %d asked of %d tokens",
			t.ID, m.Alias, rec.Requests, q.RequestsPerDay, rec.Tokens, rec.reserved(), reserve, q.TokensPerDay),
	}
	if pinnedToCloudB(m) {
		fallbacks, err := a.fallbacks(tx, t, m, reserve, now, day)
		if err != nil {
			return err
		}
		e.Code = errcat.CloudBDailyQuotaExhausted
		e.Param = "model"
		e.Message = fmt.Sprintf("The daily quota of model %s is used up; retry with one of available_fallbacks "+
			"as model, or after the reset at 00:00 UTC (see Retry-After).", m.Alias)
		e.Extra = map[string]any{"available_fallbacks": fallbacks}
	}
	return e
}

// fallbacks lists the candidates the tenant allows whose own budget would admit
// the same request now, those of m's family first; never nil. It reads their
// counters of day in tx, so that the answer is as consistent as the refusal.
func (a *Accountant) fallbacks(tx store.Tx, t *auth.Tenant, m *upstream.ModelInfo, reserve int64, now time.Time, day int64) ([]string, error) {
	out := []string{}
	for _, sameFamily := range [...]bool{true, false} {
		for _, cand := range a.candidates {
			if (cand.family == m.Family) != sameFamily || cand.alias == m.Alias || !t.AllowsModel(cand.alias) {
				continue
			}
			if q, ok := t.Quotas[cand.alias]; ok && (q.TokensPerDay > 0 || q.RequestsPerDay > 0) {
				rec, _, err := readRecord(tx, counterKey(day, t.ID, cand.alias))
				if err != nil {
					return nil, err
				}
				if rec.dropExpired(now.UnixNano()); !rec.fits(q, reserve) {
					continue
				}
			}
			out = append(out, cand.alias)
		}
	}
	return out, nil
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
