package metrics

import (
	"context"
	"strconv"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/upstream"
	"github.com/prometheus/client_golang/prometheus"
)

var _ upstream.Observer = (*Metrics)(nil)

type attemptKey struct {
	op, alias, provider, errType string
	position                     int
}

type attemptChildren struct {
	duration prometheus.Observer
}

// ObserveAttempt records an upstream attempt (gen_ai_client_operation_duration_seconds)
// and the fallback it caused (chatgw_fallbacks_total). Its error_type is ""
// for an attempt that answered and was read to its end, the HTTP status of
// an error answer ("429", "503"), else the attempt's outcome
// (connect_error, first_byte_timeout, total_timeout, cancelled,
// invalid_body, read_error).
func (m *Metrics) ObserveAttempt(_ context.Context, a upstream.Attempt) {
	if m == nil {
		return
	}
	k := attemptKey{op: operation(a.Path), alias: m.alias(a.Alias), provider: m.provider(a.Provider),
		errType: attemptErrorType(a), position: a.Position}
	ch := m.attempts.get(k, func() attemptChildren {
		return attemptChildren{duration: m.clientDur.WithLabelValues(k.op, k.alias, k.provider, k.errType, attemptLabel(k.position))}
	})
	ch.duration.Observe(a.Duration.Seconds())
	if a.Next != "" {
		m.fallbacks.WithLabelValues(k.provider, m.provider(a.Next), k.errType).Inc()
	}
}

// attemptErrorType is the error_type of an attempt.
func attemptErrorType(a upstream.Attempt) string {
	switch a.Outcome {
	case upstream.OutcomeOK:
		return ""
	case upstream.OutcomeStatus:
		if a.Status >= 100 && a.Status <= 599 {
			return strconv.Itoa(a.Status)
		}
	case upstream.OutcomeConnectError, upstream.OutcomeFirstByteTimeout, upstream.OutcomeTotalTimeout,
		upstream.OutcomeCancelled, upstream.OutcomeInvalidBody, upstream.OutcomeReadError:
		return a.Outcome
	}
	return Other
}

type tenantKey struct {
	family       *prometheus.CounterVec
	tenant, a, b string
}

// tenantCounter is the child of family with the label values a and b (the
// first n of them: family has n labels besides the tenant) and tenant, when
// the tenant label is on.
func (m *Metrics) tenantCounter(family *prometheus.CounterVec, tenant string, n int, a, b string) prometheus.Counter {
	k := tenantKey{family: family, a: a, b: b}
	if m.tenant {
		k.tenant = tenant
	}
	return m.tenants.get(k, func() prometheus.Counter {
		values := []string{a, b}[:n]
		if m.tenant {
			values = append(values, tenant)
		}
		return family.WithLabelValues(values...)
	})
}

// RateLimited counts a request of tenant refused by the per-token rate limit;
// kind is RateExceeded or RateLimiterUnavailable.
func (m *Metrics) RateLimited(tenant, kind string) {
	if m == nil {
		return
	}
	if kind != RateExceeded && kind != RateLimiterUnavailable {
		kind = Other
	}
	m.tenantCounter(m.rateLimited, tenant, 1, kind, "").Inc()
}

// RateLimitBypassed counts a request of tenant let through without its rate
// limit because the limiter failed (fail-open).
func (m *Metrics) RateLimitBypassed(tenant string) {
	if m == nil {
		return
	}
	m.tenantCounter(m.rateBypassed, tenant, 0, "", "").Inc()
}

// QuotaRefused counts a request of tenant for alias refused by a daily
// quota with code. Its signature is quota.Config.Refused's.
func (m *Metrics) QuotaRefused(tenant, alias string, code errcat.Code) {
	if m == nil {
		return
	}
	kind := string(code)
	if code != errcat.ModelQuotaExhausted && code != errcat.CloudBDailyQuotaExhausted {
		kind = Other
	}
	m.tenantCounter(m.quota, tenant, 2, m.alias(alias), kind).Inc()
}

// StoreTx records a store transaction of kind (StoreView, StoreUpdate,
// StoreBatch) that its caller waited d for.
func (m *Metrics) StoreTx(kind string, d time.Duration) {
	if m == nil {
		return
	}
	i := 0
	switch kind {
	case StoreUpdate:
		i = 1
	case StoreBatch:
		i = 2
	}
	m.storeKind[i].Observe(d.Seconds())
}

// StoreRetry records a store transaction of kind (StoreView, StoreUpdate,
// StoreBatch) run again for reason (RetrySerialization, RetryDeadlock,
// RetryConnection, RetryReadAhead, RetryAssumption); other values count as
// Other.
func (m *Metrics) StoreRetry(kind, reason string) {
	if m == nil {
		return
	}
	switch kind {
	case StoreView, StoreUpdate, StoreBatch:
	default:
		kind = Other
	}
	switch reason {
	case RetrySerialization, RetryDeadlock, RetryConnection, RetryReadAhead, RetryAssumption:
	default:
		reason = Other
	}
	m.storeRetries.WithLabelValues(kind, reason).Inc()
}

// GroupCommit records one group commit of calls Batch calls.
func (m *Metrics) GroupCommit(calls int) {
	if m == nil {
		return
	}
	m.groupCommit.Observe(float64(calls))
}

// GuardDecision counts a content guard classification of a request of
// tenant in mode ("audit" or "block") with decision (GuardAllowed,
// GuardFlagged, GuardFailed). It is safe from any goroutine: an audit
// classifies alongside the request, and may end after it.
func (r *Request) GuardDecision(tenant, mode, decision string) {
	if r == nil {
		return
	}
	m := r.m
	if mode != "audit" && mode != "block" {
		mode = Other
	}
	if decision != GuardAllowed && decision != GuardFlagged && decision != GuardFailed {
		decision = Other
	}
	m.tenantCounter(m.guard, tenant, 2, mode, decision).Inc()
}
