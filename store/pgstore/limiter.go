package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/ratelimit"
)

var _ ratelimit.Provider = (*DB)(nil)

// takeSQL takes one request from a bucket in one statement (GCRA: with an
// emission interval T = 1s/rate and a capacity tau = burst*T, a request at
// now passes when start+T-now <= tau, start = chatgw_rate_start(tat, now,
// tau), and then moves tat to start+T). The row lock of the upsert orders
// concurrent requests of one token across every gateway. $1 digest, $2 T and
// $3 tau in microseconds.
const takeSQL = `
INSERT INTO chatgw_rate AS r (digest, tat, passed, seen)
SELECT $1, now.us + $2, true, now.us FROM chatgw_rate_now() AS now(us)
ON CONFLICT (digest) DO UPDATE SET
	passed = chatgw_rate_start(r.tat, EXCLUDED.seen, $3) + $2 <= EXCLUDED.seen + $3,
	tat = chatgw_rate_start(r.tat, EXCLUDED.seen, $3) + CASE
		WHEN chatgw_rate_start(r.tat, EXCLUDED.seen, $3) + $2 <= EXCLUDED.seen + $3 THEN $2
		ELSE 0 END,
	seen = EXCLUDED.seen
RETURNING tat, passed, seen`

// maxSpanMicros bounds intervals and capacities (about 36,000 years) so that
// the database's bigint arithmetic cannot overflow.
const maxSpanMicros = int64(1) << 50

// RateLimiter returns the per-token rate limit kept in the database, shared
// by every gateway using it: a token's burst holds across the fleet, not once
// per gateway. Each Allow is one statement, one round trip, outside any
// transaction; it fails (and the gateway applies its failure policy) when the
// database does not answer within the limiter time-out (WithLimiterTimeout).
func (d *DB) RateLimiter() ratelimit.Limiter {
	return limiter{d}
}

type limiter struct{ d *DB }

// Allow is ratelimit.Limiter.Allow on the chatgw_rate table.
func (l limiter) Allow(ctx context.Context, dg auth.Digest, r auth.Rate) (bool, time.Duration, error) {
	if !(r.PerSecond > 0) {
		return true, 0, nil
	}
	emission := min(max(int64(1e6/r.PerSecond), 1), maxSpanMicros)
	tau := min(emission*int64(max(r.Burst, 1)), maxSpanMicros)
	ctx, cancel := context.WithTimeout(ctx, l.d.limitTimeout)
	defer cancel()
	var tat, seen int64
	var passed bool
	if err := l.d.pool.QueryRow(ctx, takeSQL, dg[:], emission, tau).Scan(&tat, &passed, &seen); err != nil {
		return false, 0, fmt.Errorf("pgstore: rate limit: %w", err)
	}
	if passed {
		return true, 0, nil
	}
	return false, ratelimit.RetryAfter(time.Duration(tat+emission-seen-tau) * time.Microsecond), nil
}
