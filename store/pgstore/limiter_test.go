package pgstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/ratelimit"
)

// hourly is one request an hour: nothing refills while a test runs.
func hourly(burst int) auth.Rate { return auth.Rate{PerSecond: 1.0 / 3600, Burst: burst} }

// allowN calls l.Allow n times and returns how many passed and the last
// retry-after.
func allowN(t *testing.T, l ratelimit.Limiter, d auth.Digest, r auth.Rate, n int) (passed int, wait time.Duration) {
	t.Helper()
	for range n {
		ok, ra, err := l.Allow(context.Background(), d, r)
		if err != nil {
			t.Fatalf("Allow: %v", err)
		}
		if ok {
			passed++
		}
		wait = ra
	}
	return passed, wait
}

// testRateShared: two gateways (two DBs on one database) share a token's
// bucket, and a denied request is told when the next one passes.
func testRateShared(t *testing.T, c *pgtest.Cluster) {
	url := c.NewDatabase(t)
	a, b := open(t, url).RateLimiter(), open(t, url).RateLimiter()
	d := auth.DigestOf("shared")
	passed := 0
	for i := range 20 {
		l := a
		if i%2 == 1 {
			l = b
		}
		n, _ := allowN(t, l, d, hourly(30), 3)
		passed += n
	}
	if passed != 30 {
		t.Errorf("%d of 60 requests over two gateways passed, want the burst of 30", passed)
	}
	if _, wait := allowN(t, b, d, hourly(30), 1); wait < time.Hour-time.Minute || wait > time.Hour {
		t.Errorf("retry after %v, want about an hour", wait)
	}
	// Another token has its own bucket; no limit needs no bucket.
	if n, _ := allowN(t, a, auth.DigestOf("other"), hourly(2), 5); n != 2 {
		t.Errorf("other token: %d passed, want 2", n)
	}
	if n, _ := allowN(t, a, d, auth.Rate{}, 5); n != 5 {
		t.Errorf("no rate: %d passed, want all 5", n)
	}
}

// testRateConcurrent: requests of one token racing on two gateways never
// pass more than the burst together.
func testRateConcurrent(t *testing.T, c *pgtest.Cluster) {
	url := c.NewDatabase(t)
	ls := []ratelimit.Limiter{open(t, url).RateLimiter(), open(t, url).RateLimiter()}
	d := auth.DigestOf("raced")
	var passed atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			n, _ := allowN(t, ls[g%2], d, hourly(50), 10)
			passed.Add(int64(n))
		})
	}
	wg.Wait()
	if got := passed.Load(); got != 50 {
		t.Errorf("%d of 160 concurrent requests passed, want the burst of 50", got)
	}
}

// testRateRefillAndChange: a bucket refills with the database's clock, and a
// lowered burst carries over at most the new burst's worth of used requests.
func testRateRefillAndChange(t *testing.T, c *pgtest.Cluster) {
	l := open(t, c.NewDatabase(t)).RateLimiter()
	// A million a second with a burst of one: each request, a round trip
	// after the last, finds its token back.
	if n, _ := allowN(t, l, auth.DigestOf("fast"), auth.Rate{PerSecond: 1e6, Burst: 1}, 50); n != 50 {
		t.Errorf("fast rate: %d of 50 passed, want all", n)
	}
	d := auth.DigestOf("lowered")
	if n, _ := allowN(t, l, d, hourly(10), 10); n != 10 {
		t.Fatalf("%d of the burst of 10 passed", n)
	}
	// At burst 2 the bucket counts as 2 used, not 10: the next request is an
	// hour away, not nine.
	n, wait := allowN(t, l, d, hourly(2), 1)
	if n != 0 || wait < time.Hour-time.Minute || wait > time.Hour {
		t.Errorf("after lowering the burst: %d passed, retry after %v; want 0, about an hour", n, wait)
	}
}
