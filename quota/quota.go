package quota

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/upstream"
)

const (
	shardCount = 64 // a power of two
	secsPerDay = 24 * 60 * 60
)

// Accountant holds the daily counters of every tenant and alias with a budget.
// It is safe for concurrent use. Create it with New; the zero value is not usable.
type Accountant struct {
	clock      clock.Clock
	seed       maphash.Seed
	candidates []candidate  // possible available_fallbacks, in catalog order
	day        atomic.Int64 // latest UTC day seen; every shard is rolled to it
	shards     [shardCount]shard
}

// candidate is a chat alias with a usable backend that is not on cloudB.
type candidate struct {
	alias, family string
}

type shardState struct {
	mu       sync.Mutex
	day      int64 // UTC day number (days since 1970-01-01) the counters belong to
	counters map[key]*counter
}

// shard pads shardState to a multiple of 128 bytes so that two shards never
// share a cache line (or an adjacent-line prefetch pair).
type shard struct {
	shardState
	_ [128 - unsafe.Sizeof(shardState{})%128]byte
}

type key struct {
	tenant, alias string
}

// counter is one (tenant, alias) pair's day; its fields are guarded by the mutex
// of the shard it was created in, also after that shard dropped it.
type counter struct {
	requests int64 // admitted requests
	tokens   int64 // tokens of settled requests
	reserved int64 // tokens reserved by requests not yet settled
}

// Usage is a snapshot of one counter.
type Usage struct {
	Requests int64 // requests admitted today
	Tokens   int64 // tokens charged by settled requests
	Reserved int64 // tokens reserved by requests in flight
}

// New returns an Accountant reading the time from c (nil means the wall clock).
// cat is the model catalog that available_fallbacks is chosen from, typically
// the router's status view (upstream.Router.Catalog) so that a backend without a
// configured URL does not count as usable; nil lists no fallbacks. New reads cat
// once and keeps nothing of it.
func New(c clock.Clock, cat *upstream.Catalog) *Accountant {
	if c == nil {
		c = clock.Wall{}
	}
	a := &Accountant{clock: c, seed: maphash.MakeSeed()}
	if cat != nil {
		for i := range cat.Models {
			m := &cat.Models[i]
			if m.Kind == upstream.KindChat && servesOffCloudB(m) {
				a.candidates = append(a.candidates, candidate{alias: m.Alias, family: m.Family})
			}
		}
	}
	for i := range a.shards {
		a.shards[i].counters = make(map[key]*counter)
	}
	return a
}

// Admit counts one request of tenant t for model m and reserves reserve tokens
// (the request's max_tokens plus its prompt estimate; a negative value counts as
// 0) against t's budget for m.Alias.
//
// When a is nil (no quotas), or t has no budget for the alias, Admit returns
// (nil, nil) without locking or allocating; the nil *Ticket's methods do nothing. When the request fits, it
// returns a ticket that the caller must Settle or Cancel once the upstream call
// ends. When it does not fit, nothing is counted and the error is an
// *errcat.Error: cloudB_daily_quota_exhausted for an alias pinned to cloudB,
// model_quota_exhausted otherwise (see the package documentation).
func (a *Accountant) Admit(t *auth.Tenant, m *upstream.ModelInfo, reserve int64) (*Ticket, error) {
	if a == nil || t == nil || m == nil {
		return nil, nil
	}
	q, ok := t.Quotas[m.Alias]
	if !ok || (q.TokensPerDay <= 0 && q.RequestsPerDay <= 0) {
		return nil, nil
	}
	reserve = max(reserve, 0)
	now := a.clock.Now()
	today := dayOf(now)
	a.rollAll(today)
	s := a.shard(t.ID)

	s.mu.Lock()
	defer s.mu.Unlock()
	day := s.roll(today)
	k := key{tenant: t.ID, alias: m.Alias}
	c := s.counters[k]
	if !fits(c, q, reserve) {
		return nil, a.refusal(&s.shardState, t, m, q, c, reserve, now, day)
	}
	if c == nil {
		c = &counter{}
		s.counters[k] = c
	}
	c.requests++
	c.reserved += reserve
	return &Ticket{s: &s.shardState, c: c, reserved: reserve}, nil
}

// Usage returns today's counter of the tenant with ID tenantID for alias, zero
// when there is none. It is meant for diagnostics and tests.
func (a *Accountant) Usage(tenantID, alias string) Usage {
	now := a.clock.Now()
	s := a.shard(tenantID)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roll(dayOf(now))
	c := s.counters[key{tenant: tenantID, alias: alias}]
	if c == nil {
		return Usage{}
	}
	return Usage{Requests: c.requests, Tokens: c.tokens, Reserved: c.reserved}
}

// rollAll drops the counters of past days in every shard, once per new day: the
// first caller that sees day takes each shard's lock in turn (never two at once),
// the others only load an atomic.
func (a *Accountant) rollAll(day int64) {
	last := a.day.Load()
	if day <= last || !a.day.CompareAndSwap(last, day) {
		return
	}
	for i := range a.shards {
		s := &a.shards[i].shardState
		s.mu.Lock()
		s.roll(day)
		s.mu.Unlock()
	}
}

func (a *Accountant) shard(tenantID string) *shard {
	return &a.shards[maphash.String(a.seed, tenantID)&(shardCount-1)]
}

// roll moves the shard to day when that is later than its own day, dropping the
// counters of past days (tickets still holding one settle against it, detached),
// and returns the shard's day. A clock that steps back keeps the later day.
func (s *shardState) roll(day int64) int64 {
	if day > s.day {
		s.day = day
		if len(s.counters) > 0 {
			s.counters = make(map[key]*counter)
		}
	}
	return s.day
}

// fits reports whether one more request reserving reserve tokens stays within q;
// c nil is a counter with nothing counted yet.
func fits(c *counter, q auth.Quota, reserve int64) bool {
	if c == nil {
		c = &counter{} // does not escape: no allocation
	}
	if q.RequestsPerDay > 0 && c.requests >= q.RequestsPerDay {
		return false
	}
	if q.TokensPerDay > 0 {
		// A spent budget admits nothing, not even a zero reservation; subtract
		// rather than add so that a huge reserve cannot overflow.
		left := q.TokensPerDay - c.tokens - c.reserved
		if left <= 0 || reserve > left {
			return false
		}
	}
	return true
}

// dayOf returns the UTC day number of t: whole days since 1970-01-01 UTC.
func dayOf(t time.Time) int64 {
	s := t.Unix()
	d := s / secsPerDay
	if s%secsPerDay < 0 {
		d--
	}
	return d
}

// untilNextDay returns the time from now to the 00:00 UTC that ends day.
func untilNextDay(now time.Time, day int64) time.Duration {
	return time.Unix((day+1)*secsPerDay, 0).Sub(now)
}
