package ratelimit_test

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/ratelimit"
)

var defaultRate = auth.Rate{PerSecond: 1, Burst: 30}

// limiter is a Local with a default rate, as the gateway's middleware uses
// it: a nil rate given to Allow means the default.
type limiter struct {
	*ratelimit.Local
	def auth.Rate
}

func (l limiter) Allow(d auth.Digest, r *auth.Rate) (bool, time.Duration) {
	if r == nil {
		r = &l.def
	}
	ok, wait, err := l.Local.Allow(context.Background(), d, *r)
	if err != nil {
		panic(err) // Local never fails
	}
	return ok, wait
}

func newLimiter(def auth.Rate) (limiter, *clock.Fake) {
	fc := clock.NewFake(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	return limiter{ratelimit.NewLocal(fc), def}, fc
}

// newWall is newLimiter on the wall clock.
func newWall(def auth.Rate) limiter {
	return limiter{ratelimit.NewLocal(nil), def}
}

// digest returns a digest in shard shard (its first byte), distinct for each i.
func digest(shard byte, i uint32) auth.Digest {
	var d auth.Digest
	d[0] = shard
	binary.BigEndian.PutUint32(d[1:], i)
	return d
}

// allowN calls Allow n times and returns how many passed.
func allowN(l limiter, d auth.Digest, r *auth.Rate, n int) int {
	passed := 0
	for range n {
		if ok, _ := l.Allow(d, r); ok {
			passed++
		}
	}
	return passed
}

func TestDefaultBurstThenRefill(t *testing.T) {
	l, fc := newLimiter(defaultRate)
	d := auth.DigestOf("token")
	for i := range 30 {
		if ok, ra := l.Allow(d, nil); !ok || ra != 0 {
			t.Fatalf("request %d = %v, %v; want pass", i+1, ok, ra)
		}
	}
	if ok, ra := l.Allow(d, nil); ok || ra != time.Second {
		t.Fatalf("request 31 = %v, %v; want fail, retry after 1s", ok, ra)
	}
	fc.Advance(time.Second)
	if ok, _ := l.Allow(d, nil); !ok {
		t.Fatal("request after 1 s failed")
	}
	if ok, _ := l.Allow(d, nil); ok {
		t.Fatal("second request after 1 s passed")
	}
	// A full refill gives the whole burst again, no more.
	fc.Advance(time.Hour)
	if got := allowN(l, d, nil, 40); got != 30 {
		t.Errorf("after an hour %d of 40 passed, want 30", got)
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name    string
		rate    auth.Rate
		advance time.Duration // after emptying the bucket
		want    time.Duration
	}{
		{"one per second", auth.Rate{PerSecond: 1, Burst: 1}, 0, time.Second},
		{"rounded up", auth.Rate{PerSecond: 1, Burst: 1}, 300 * time.Millisecond, time.Second},
		{"one per four seconds", auth.Rate{PerSecond: 0.25, Burst: 2}, 0, 4 * time.Second},
		{"2.5 s rounds to 3", auth.Rate{PerSecond: 0.25, Burst: 2}, 1500 * time.Millisecond, 3 * time.Second},
		{"exact whole seconds", auth.Rate{PerSecond: 0.25, Burst: 2}, 2 * time.Second, 2 * time.Second},
		{"fast rate is at least 1 s", auth.Rate{PerSecond: 10, Burst: 5}, 0, time.Second},
		{"one per minute", auth.Rate{PerSecond: 1.0 / 60, Burst: 3}, 10 * time.Second, 50 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, fc := newLimiter(defaultRate)
			d := auth.DigestOf(tt.name)
			if got := allowN(l, d, &tt.rate, tt.rate.Burst); got != tt.rate.Burst {
				t.Fatalf("%d of the burst of %d passed", got, tt.rate.Burst)
			}
			fc.Advance(tt.advance)
			ok, ra := l.Allow(d, &tt.rate)
			if ok || ra != tt.want {
				t.Errorf("Allow = %v, %v; want false, %v", ok, ra, tt.want)
			}
		})
	}
}

func TestBucketsPerToken(t *testing.T) {
	l, _ := newLimiter(auth.Rate{PerSecond: 1, Burst: 2})
	a, b := auth.DigestOf("a"), auth.DigestOf("b")
	if got := allowN(l, a, nil, 5); got != 2 {
		t.Errorf("token a: %d passed, want 2", got)
	}
	if got := allowN(l, b, nil, 5); got != 2 {
		t.Errorf("token b: %d passed, want 2 (its own bucket)", got)
	}
	// The same token (from any address) shares its bucket.
	if got := allowN(l, auth.DigestOf("a"), nil, 1); got != 0 {
		t.Errorf("token a again: %d passed, want 0", got)
	}
}

func TestRateOverride(t *testing.T) {
	l, _ := newLimiter(defaultRate)
	own := &auth.Rate{PerSecond: 5, Burst: 50}
	if got := allowN(l, auth.DigestOf("own"), own, 60); got != 50 {
		t.Errorf("token with its own rate: %d passed, want 50", got)
	}
	if got := allowN(l, auth.DigestOf("default"), nil, 60); got != 30 {
		t.Errorf("token with the default rate: %d passed, want 30", got)
	}
}

func TestRateChange(t *testing.T) {
	l, fc := newLimiter(defaultRate)
	d := auth.DigestOf("t")
	small := &auth.Rate{PerSecond: 1, Burst: 5}
	if got := allowN(l, d, small, 5); got != 5 {
		t.Fatalf("%d passed, want 5", got)
	}
	// Raised burst: the 5 used tokens carry over, 5 more are free.
	big := &auth.Rate{PerSecond: 1, Burst: 10}
	if got := allowN(l, d, big, 20); got != 5 {
		t.Errorf("after raising the burst to 10: %d passed, want 5", got)
	}
	// Faster refill: at 10 per second, 1 s gives the whole burst of 10 back.
	fast := &auth.Rate{PerSecond: 10, Burst: 10}
	if ok, ra := l.Allow(d, fast); ok || ra != time.Second {
		t.Errorf("Allow at the new rate = %v, %v; want false, 1s", ok, ra)
	}
	fc.Advance(time.Second)
	if got := allowN(l, d, fast, 20); got != 10 {
		t.Errorf("1 s at 10/s: %d passed, want 10", got)
	}
	// Lowered burst: usage is capped at the new burst, so one token is back
	// after one interval of the new rate.
	slow := &auth.Rate{PerSecond: 0.5, Burst: 2}
	if ok, ra := l.Allow(d, slow); ok || ra != 2*time.Second {
		t.Errorf("Allow after lowering = %v, %v; want false, 2s", ok, ra)
	}
	fc.Advance(2 * time.Second)
	if got := allowN(l, d, slow, 5); got != 1 {
		t.Errorf("2 s at 0.5/s: %d passed, want 1", got)
	}
	// The same rate given as a new pointer (a reload with unchanged values)
	// changes nothing.
	fc.Advance(4 * time.Second)
	if got := allowN(l, d, &auth.Rate{PerSecond: 0.5, Burst: 2}, 5); got != 2 {
		t.Errorf("full bucket after 4 s: %d passed, want 2", got)
	}
}

func TestNoLimit(t *testing.T) {
	l, _ := newLimiter(auth.Rate{})
	if got := allowN(l, auth.DigestOf("t"), nil, 1000); got != 1000 {
		t.Errorf("zero default rate: %d of 1000 passed", got)
	}
	if got := allowN(l, auth.DigestOf("t"), &auth.Rate{PerSecond: 1, Burst: 3}, 10); got != 3 {
		t.Errorf("own rate over a zero default: %d passed, want 3", got)
	}
	if l.Len() != 1 {
		t.Errorf("Len() = %d, want 1 (no bucket for unlimited calls)", l.Len())
	}
	// Burst below 1 counts as 1.
	l2, _ := newLimiter(auth.Rate{PerSecond: 1})
	if got := allowN(l2, auth.DigestOf("t"), nil, 10); got != 1 {
		t.Errorf("burst 0: %d passed, want 1", got)
	}
}

func TestSweep(t *testing.T) {
	l, fc := newLimiter(defaultRate)
	for i := range 100 {
		l.Allow(auth.DigestOf(string(rune('a'+i%26))+string(rune(i))), nil)
	}
	busy := auth.DigestOf("busy")
	allowN(l, busy, nil, 30) // empty: refills in 30 s
	if l.Len() != 101 {
		t.Fatalf("Len() = %d, want 101", l.Len())
	}
	fc.Advance(500 * time.Millisecond)
	if n := l.Sweep(); n != 0 {
		t.Errorf("Sweep before refill evicted %d, want 0", n)
	}
	fc.Advance(500 * time.Millisecond) // the 100 single-use buckets are full again
	if n := l.Sweep(); n != 100 {
		t.Errorf("Sweep after 1 s evicted %d, want 100", n)
	}
	if ok, _ := l.Allow(busy, nil); !ok {
		t.Error("busy token: one token should be back after 1 s")
	}
	if ok, _ := l.Allow(busy, nil); ok {
		t.Error("busy token lost its state in a sweep")
	}
	fc.Advance(30 * time.Second)
	if n := l.Sweep(); n != 1 || l.Len() != 0 {
		t.Errorf("final Sweep evicted %d, Len %d; want 1, 0", n, l.Len())
	}
	// An evicted token starts with a full bucket, as if it had been kept.
	if got := allowN(l, busy, nil, 40); got != 30 {
		t.Errorf("evicted token: %d passed, want 30", got)
	}
}

// TestAutomaticSweep checks the documented bound: a shard sweeps itself after
// max(1024, size after its last sweep) calls.
func TestAutomaticSweep(t *testing.T) {
	l, fc := newLimiter(defaultRate)
	const n = 3000
	for i := range uint32(n) {
		l.Allow(digest(7, i), nil) // all in shard 7
	}
	if got := l.Len(); got != n {
		t.Fatalf("Len() = %d, want %d (nothing idle yet)", got, n)
	}
	fc.Advance(2 * time.Second) // all full again
	hot := digest(7, n+1)
	calls := 0
	for l.Len() > 1 && calls < n+1024 {
		l.Allow(hot, &auth.Rate{PerSecond: 1e6, Burst: 1e6})
		calls++
	}
	if got := l.Len(); got != 1 {
		t.Errorf("after %d calls Len() = %d, want 1 (idle buckets evicted)", calls, got)
	}
	// Other shards are untouched by shard 7's sweep.
	l2, fc2 := newLimiter(defaultRate)
	l2.Allow(digest(8, 0), nil)
	fc2.Advance(time.Hour)
	for i := range 5000 {
		l2.Allow(digest(9, uint32(i)%4), nil)
	}
	if got := l2.Len(); got != 5 {
		t.Errorf("Len() = %d, want 5 (shard 8 is swept only by its own calls)", got)
	}
}

// TestConcurrentSameToken checks under -race that a burst is never exceeded
// when one token is used from many goroutines at once.
func TestConcurrentSameToken(t *testing.T) {
	l, _ := newLimiter(auth.Rate{PerSecond: 1, Burst: 100})
	d := auth.DigestOf("shared")
	var passed atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			passed.Add(int64(allowN(l, d, nil, 50)))
		})
	}
	wg.Wait()
	if got := passed.Load(); got != 100 {
		t.Errorf("%d of 800 passed, want exactly the burst of 100", got)
	}
}

// TestConcurrentTokens mixes Allow on many tokens, Sweep and a moving clock.
func TestConcurrentTokens(t *testing.T) {
	l, fc := newLimiter(auth.Rate{PerSecond: 1, Burst: 5})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				d := digest(byte(i%64), uint32(g*100+i%50))
				l.Allow(d, nil)
				if i%500 == 0 {
					fc.Advance(time.Second)
				}
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			l.Sweep()
			l.Len()
		}
	})
	wg.Wait()
	fc.Advance(time.Minute)
	l.Sweep()
	if got := l.Len(); got != 0 {
		t.Errorf("Len() after a minute and a sweep = %d, want 0", got)
	}
}

func TestAllowDoesNotAllocate(t *testing.T) {
	l, _ := newLimiter(defaultRate)
	d := auth.DigestOf("t")
	own := &auth.Rate{PerSecond: 2, Burst: 3}
	l.Allow(d, nil)
	allocs := testing.AllocsPerRun(5000, func() {
		l.Allow(d, nil) // mostly the deny path once empty
		l.Allow(d, own) // rate changes every call: adapt path
	})
	if allocs != 0 {
		t.Errorf("Allow allocates %v times per run, want 0", allocs)
	}
	// Wall clock, pass path. At 1 per second the bucket never goes idle, so the
	// automatic sweep never evicts (and recreates) it.
	lw := newWall(auth.Rate{PerSecond: 1, Burst: 1 << 30})
	lw.Allow(d, nil)
	allocs = testing.AllocsPerRun(100000, func() {
		if ok, _ := lw.Allow(d, nil); !ok {
			t.Fatal("denied")
		}
	})
	if allocs != 0 {
		t.Errorf("Allow (wall clock) allocates %v times per run, want 0", allocs)
	}
}

// benchRate always passes and keeps buckets busy (never idle, never evicted),
// so that the benchmarks measure existing buckets.
var benchRate = auth.Rate{PerSecond: 1, Burst: 1 << 30}

// BenchmarkAllow measures one token's bucket on the wall clock.
func BenchmarkAllow(b *testing.B) {
	l := newWall(benchRate)
	d := auth.DigestOf("bench")
	b.ReportAllocs()
	for b.Loop() {
		l.Allow(d, nil)
	}
}

// BenchmarkAllowParallel spreads 4096 tokens over the shards from every P.
func BenchmarkAllowParallel(b *testing.B) {
	l := newWall(benchRate)
	ds := make([]auth.Digest, 4096)
	for i := range ds {
		ds[i] = auth.DigestOf(string(rune(i)))
		l.Allow(ds[i], nil)
	}
	var seed atomic.Uint32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(7919))
		for pb.Next() {
			l.Allow(ds[i%len(ds)], nil)
			i++
		}
	})
}
