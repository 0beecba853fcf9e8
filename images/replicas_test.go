package images_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/images"
)

// TestPurgerLease: of two Services over one store (two replicas), only the
// one holding the purge lease purges; the other takes over when the lease
// expires (its holder died) or is released (its holder closed). Rounds are
// run by hand (PurgeInterval -1), time is the fake clock's.
func TestPurgerLease(t *testing.T) {
	e := newEnv(t)
	const leaseFor = 2 * time.Hour
	a := e.startWith(t, images.Config{PurgeInterval: -1, PurgeLease: leaseFor})
	b := e.startWith(t, images.Config{PurgeInterval: -1, PurgeLease: leaseFor})
	ctx := context.Background()
	for _, step := range []struct {
		name     string
		generate bool          // one image with ttl_hours 1 first
		advance  time.Duration // then the clock moves
		round    *images.Service
		closeB   bool // b closes before the round
		purged   bool // the round held the lease and purged
		stored   int  // images stored after the round
	}{
		{name: "a takes the free lease", round: a, purged: true},
		{name: "b does not purge while a holds it", generate: true, advance: time.Hour, round: b, stored: 1},
		{name: "a purges and renews", round: a, purged: true},
		{name: "a dies; b waits for its lease", generate: true, advance: time.Hour, round: b, stored: 1},
		{name: "b still waits a nanosecond before expiry", advance: time.Hour - time.Nanosecond, round: b, stored: 1},
		{name: "b takes over at expiry", advance: time.Nanosecond, round: b, purged: true},
		{name: "a, back, does not purge", generate: true, advance: time.Hour, round: a, stored: 1},
		{name: "b closes: a takes over at once", closeB: true, round: a, purged: true},
	} {
		if step.generate {
			e.mustGenerate(t, acme, `{"prompt":"p","ttl_hours":1}`)
		}
		e.clk.Advance(step.advance)
		if step.closeB {
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if got := images.PurgeRound(ctx, step.round); got != step.purged {
			t.Errorf("%s: round purged %v, want %v", step.name, got, step.purged)
		}
		if got := e.bucketSizes(t)["img/meta"]; got != step.stored {
			t.Errorf("%s: %d images stored, want %d", step.name, got, step.stored)
		}
	}
}

// TestPurgerOnOneReplica: two Services with running purgers over one store:
// every expired image is purged by the same one, and the other takes over
// once the first closes.
func TestPurgerOnOneReplica(t *testing.T) {
	e := newEnv(t)
	var purges [2]purgeCounter
	svcs := [2]*images.Service{}
	for i := range svcs {
		svcs[i] = e.startWith(t, images.Config{PurgeInterval: 5 * time.Millisecond, PurgeLease: 24 * time.Hour,
			Logger: slog.New(&purges[i])})
	}
	expireOne := func() {
		t.Helper()
		e.mustGenerate(t, acme, `{"prompt":"p","ttl_hours":1}`)
		e.clk.Advance(time.Hour)
		for deadline := time.Now().Add(10 * time.Second); e.bucketSizes(t)["img/meta"] != 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("expired image not purged within 10 s")
			}
		}
	}
	for range 3 {
		expireOne()
	}
	got := [2]int64{purges[0].n.Load(), purges[1].n.Load()}
	holder := 0
	if got[1] > 0 {
		holder = 1
	}
	if got[holder] != 3 || got[1-holder] != 0 {
		t.Fatalf("purges by the two replicas: %v; want 3 by one of them", got)
	}
	if err := svcs[holder].Close(); err != nil {
		t.Fatal(err)
	}
	expireOne()
	if n := purges[1-holder].n.Load(); n != 1 {
		t.Errorf("the other replica purged %d times after the holder closed, want 1", n)
	}
}

// purgeCounter is a slog.Handler that counts the purger's "expired images
// purged" lines.
type purgeCounter struct{ n atomic.Int64 }

func (c *purgeCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *purgeCounter) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *purgeCounter) WithGroup(string) slog.Handler            { return c }
func (c *purgeCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "expired images purged" {
		c.n.Add(1)
	}
	return nil
}
