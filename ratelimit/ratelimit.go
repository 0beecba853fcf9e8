// Package ratelimit owns the gateway's per-token rate limit: the Limiter
// interface the middleware asks before every authenticated request (a bucket
// per bearer token, keyed by the token's SHA-256, never by IP address; rate 1
// request per second, burst 30 unless the token has its own), and Local, the
// in-process token buckets used with the embedded store.
//
// A store shared by several gateway processes (store/pgstore) keeps the buckets
// in its database instead, so that a token's burst holds across the fleet: it
// implements Provider, and gateway.New uses its Limiter.
//
// # Algorithm
//
// Each bucket is kept as a GCRA "theoretical arrival time" (tat): with an
// emission interval T = 1s/PerSecond and a capacity tau = Burst*T, a request at
// time now passes when max(tat, now)+T-now <= tau, and then moves tat forward by
// T. This is exactly a token bucket of Burst tokens refilled at PerSecond, kept
// in integer nanoseconds. A bucket is full again (idle) when tat <= now.
//
// # Concurrency and memory
//
// Buckets live in 64 shards chosen by the first byte of the digest, each with
// its own mutex; there is no global lock. Idle buckets carry no information (a
// new bucket starts full), so they are evicted:
//
//   - automatically: a shard sweeps itself, under its lock, once it has seen
//     max(1024, its bucket count after the previous sweep) calls of Allow since
//     that sweep. The cost is amortized O(1) per call and a shard never holds more
//     than about twice its busy buckets plus 1024.
//   - on demand: Sweep evicts every idle bucket of every shard, for owners that
//     want memory back after traffic stops (for example from a ticker).
package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
)

const (
	shardCount = 64
	// minSweepCalls is the least number of Allow calls a shard sees between two
	// automatic sweeps.
	minSweepCalls = 1024
	// maxSpan bounds intervals and capacities (about 36 years) so that time
	// arithmetic on int64 nanoseconds cannot overflow.
	maxSpan = int64(1) << 60
)

// Limiter decides whether one more request of a token passes its rate limit.
//
// Allow takes one request from the bucket of the token whose SHA-256 is d,
// limited to r (a Rate whose PerSecond is not > 0 means no limit; a Burst
// below 1 counts as 1). When the bucket is empty it returns ok false and
// retryAfter, the time until one request is allowed again in whole seconds,
// rounded up, at least one second (the Retry-After header's value); retryAfter
// is 0 when ok. err is set when the limiter could not decide (its database
// cannot be reached): ok is then false and the caller applies its failure
// policy. Implementations are safe for concurrent use.
type Limiter interface {
	Allow(ctx context.Context, d auth.Digest, r auth.Rate) (ok bool, retryAfter time.Duration, err error)
}

// Provider is implemented by a store that keeps rate limits where every
// process using it sees them (store/pgstore). gateway.New takes such a
// store's Limiter unless an embedder sets one of its own.
type Provider interface {
	RateLimiter() Limiter
}

var _ Limiter = (*Local)(nil)

// Local is a set of token buckets in this process's memory, one per token
// digest: the limit of one gateway process, reset when it restarts. It is
// safe for concurrent use. Create it with NewLocal; the zero value is not
// usable.
type Local struct {
	clock  clock.Clock
	epoch  time.Time // times are kept as nanoseconds since epoch
	shards [shardCount]shard
}

type shardState struct {
	mu      sync.Mutex
	buckets map[auth.Digest]*bucket
	calls   int // Allow calls since the last sweep
	sweepAt int // calls that trigger the next automatic sweep
}

// shard pads shardState to a multiple of 128 bytes so that two shards never
// share a cache line (or an adjacent-line prefetch pair).
type shard struct {
	shardState
	_ [128 - unsafe.Sizeof(shardState{})%128]byte
}

type bucket struct {
	rate     auth.Rate // the rate interval and tau were computed from
	interval int64     // ns per token
	tau      int64     // ns of capacity: Burst * interval
	tat      int64     // theoretical arrival time, ns since epoch
}

// NewLocal returns in-process buckets that read time from c (nil means the
// wall clock).
func NewLocal(c clock.Clock) *Local {
	if c == nil {
		c = clock.Wall{}
	}
	l := &Local{clock: c, epoch: c.Now()}
	for i := range l.shards {
		l.shards[i].buckets = make(map[auth.Digest]*bucket)
		l.shards[i].sweepAt = minSweepCalls
	}
	return l
}

// Allow is Limiter.Allow; its error is always nil.
//
// When a token's rate changes (a catalog reload), its bucket keeps the share of
// its capacity that is used and adopts the new rate: the used tokens are carried
// over, capped at the new burst, and refill at the new speed.
//
// Allow does not allocate once the token has a bucket (a bucket that went idle
// and was evicted costs one allocation to recreate), and locks only the token's
// shard.
func (l *Local) Allow(_ context.Context, d auth.Digest, r auth.Rate) (ok bool, retryAfter time.Duration, err error) {
	if !(r.PerSecond > 0) {
		return true, 0, nil
	}
	now := int64(l.clock.Now().Sub(l.epoch))

	sh := &l.shards[d[0]%shardCount]
	sh.mu.Lock()
	b := sh.buckets[d]
	switch {
	case b == nil:
		b = &bucket{tat: now}
		b.setRate(r)
		sh.buckets[d] = b
	case b.rate != r:
		b.adapt(r, now)
	}
	next := max(b.tat, now) + b.interval
	if wait := next - now - b.tau; wait > 0 {
		retryAfter = RetryAfter(time.Duration(wait))
	} else {
		b.tat, ok = next, true
	}
	if sh.calls++; sh.calls >= sh.sweepAt {
		sh.sweep(now)
	}
	sh.mu.Unlock()
	return ok, retryAfter, nil
}

// Sweep evicts every idle bucket (one that has refilled to its burst, so that
// forgetting it changes nothing) and returns how many it evicted. Allow also
// sweeps each shard by itself (see the package documentation); Sweep is for
// owners that want memory back when traffic stops. It locks one shard at a time.
func (l *Local) Sweep() int {
	now := int64(l.clock.Now().Sub(l.epoch))
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += sh.sweep(now)
		sh.mu.Unlock()
	}
	return n
}

// Len returns the number of buckets held, idle ones not yet evicted included.
func (l *Local) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.buckets)
		sh.mu.Unlock()
	}
	return n
}

// sweep evicts the shard's idle buckets and schedules the next automatic sweep.
// The caller holds sh.mu.
func (sh *shard) sweep(now int64) int {
	n := 0
	for d, b := range sh.buckets {
		if b.tat <= now {
			delete(sh.buckets, d)
			n++
		}
	}
	sh.calls = 0
	sh.sweepAt = max(minSweepCalls, len(sh.buckets))
	return n
}

// setRate sets the bucket's rate without touching its state.
func (b *bucket) setRate(r auth.Rate) {
	burst := max(r.Burst, 1)
	interval := float64(time.Second) / r.PerSecond
	interval = min(max(interval, 1), float64(maxSpan))
	b.rate = r
	b.interval = int64(interval)
	b.tau = int64(min(interval*float64(burst), float64(maxSpan)))
}

// adapt moves the bucket to rate r, carrying over the tokens in use at now.
func (b *bucket) adapt(r auth.Rate, now int64) {
	used := float64(max(b.tat-now, 0)) / float64(b.interval) // tokens in use
	b.setRate(r)
	b.tat = now + int64(min(math.Ceil(used*float64(b.interval)), float64(b.tau)))
}

// RetryAfter is the Retry-After of a wait: whole seconds, rounded up, at
// least one (the value every Limiter reports for an empty bucket).
func RetryAfter(wait time.Duration) time.Duration {
	s := (wait + time.Second - 1) / time.Second
	return max(s, 1) * time.Second
}
