package lease_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/lease"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/google/go-cmp/cmp"
)

var errDisk = errors.New("disk on fire")

// tally is the work and failure callbacks of a Worker, counting their calls.
type tally struct {
	works    atomic.Int64
	failures []error
}

func (c *tally) work(context.Context)                { c.works.Add(1) }
func (c *tally) failed(_ context.Context, err error) { c.failures = append(c.failures, err) }

// TestWorkerRound runs one round by hand (no goroutine) from each state the
// lease can be in, over a memstore and a fake clock.
func TestWorkerRound(t *testing.T) {
	for _, tt := range []struct {
		name string
		// setup runs before a's round; b is the other would-be holder.
		setup   func(t *testing.T, st *memstore.Store, clk *clock.Fake, a, b *lease.Named)
		ended   bool // the round's context has ended
		held    bool // the round holds the lease and works
		failure error
		want    lease.Lease // stored after the round
	}{
		{name: "free lease: taken, work done", held: true, want: lease.Lease{Holder: "a", Until: t0.Add(ttl)}},
		{name: "own lease: renewed, work done", held: true,
			setup: func(t *testing.T, _ *memstore.Store, clk *clock.Fake, a, _ *lease.Named) {
				mustAcquire(t, a, true)
				clk.Advance(10 * time.Second)
			},
			want: lease.Lease{Holder: "a", Until: t0.Add(10*time.Second + ttl)}},
		{name: "another's live lease: no work",
			setup: func(t *testing.T, _ *memstore.Store, clk *clock.Fake, _, b *lease.Named) {
				mustAcquire(t, b, true)
				clk.Advance(ttl - time.Nanosecond)
			},
			want: lease.Lease{Holder: "b", Until: t0.Add(ttl)}},
		{name: "another's expired lease: taken over, work done", held: true,
			setup: func(t *testing.T, _ *memstore.Store, clk *clock.Fake, _, b *lease.Named) {
				mustAcquire(t, b, true)
				clk.Advance(ttl)
			},
			want: lease.Lease{Holder: "a", Until: t0.Add(2 * ttl)}},
		{name: "store fails: failure reported, no work", failure: errDisk,
			setup: func(_ *testing.T, st *memstore.Store, _ *clock.Fake, _, _ *lease.Named) { st.FailNext(errDisk) }},
		{name: "context ended: the failed take not reported", ended: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, clk, a, b := pair(t)
			if tt.setup != nil {
				tt.setup(t, st, clk, a, b)
			}
			var c tally
			w := lease.StartWorker(a, -1, c.work, c.failed)
			ctx, cancel := context.WithCancel(context.Background())
			if tt.ended {
				cancel()
			}
			defer cancel()
			if got := w.Round(ctx); got != tt.held {
				t.Errorf("Round = %v, want %v", got, tt.held)
			}
			want := int64(0)
			if tt.held {
				want = 1
			}
			if got := c.works.Load(); got != want {
				t.Errorf("work done %d times, want %d", got, want)
			}
			if w.Held() != tt.held {
				t.Errorf("Held = %v, want %v", w.Held(), tt.held)
			}
			switch {
			case tt.failure == nil && len(c.failures) != 0:
				t.Errorf("failures reported: %v, want none", c.failures)
			case tt.failure != nil && (len(c.failures) != 1 || !errors.Is(c.failures[0], tt.failure)):
				t.Errorf("failures reported: %v, want one that is %v", c.failures, tt.failure)
			}
			if diff := cmp.Diff(tt.want, stored(t, st)); diff != "" {
				t.Errorf("stored lease mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWorkerStop: Stop releases the lease if, and only if, a round held it,
// returns the release's failure, and does nothing more when called again.
func TestWorkerStop(t *testing.T) {
	for _, tt := range []struct {
		name string
		// setup runs the rounds before Stop; b is the other would-be holder.
		setup func(t *testing.T, st *memstore.Store, clk *clock.Fake, w *lease.Worker, b *lease.Named)
		err   error       // Stop's
		want  lease.Lease // stored after Stop
		// untouched: the failure setup queued is left for the next
		// transaction, which Stop did not make.
		untouched bool
	}{
		{name: "no round: nothing to release"},
		{name: "held: released",
			setup: func(t *testing.T, _ *memstore.Store, _ *clock.Fake, w *lease.Worker, _ *lease.Named) {
				mustRound(t, w, true)
			}},
		{name: "never held: another's lease untouched",
			setup: func(t *testing.T, _ *memstore.Store, _ *clock.Fake, w *lease.Worker, b *lease.Named) {
				mustAcquire(t, b, true)
				mustRound(t, w, false)
			},
			want: lease.Lease{Holder: "b", Until: t0.Add(ttl)}},
		{name: "held, then taken over: the new holder's lease untouched",
			setup: func(t *testing.T, _ *memstore.Store, clk *clock.Fake, w *lease.Worker, b *lease.Named) {
				mustRound(t, w, true)
				clk.Advance(ttl)
				mustAcquire(t, b, true)
			},
			want: lease.Lease{Holder: "b", Until: t0.Add(2 * ttl)}},
		{name: "never held: the store is not touched", untouched: true,
			setup: func(t *testing.T, st *memstore.Store, _ *clock.Fake, _ *lease.Worker, _ *lease.Named) {
				st.FailNext(errDisk)
			}},
		{name: "release fails: the error returned, the lease left to expire", err: errDisk,
			setup: func(t *testing.T, st *memstore.Store, _ *clock.Fake, w *lease.Worker, _ *lease.Named) {
				mustRound(t, w, true)
				st.FailNext(errDisk)
			},
			want: lease.Lease{Holder: "a", Until: t0.Add(ttl)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, clk, a, b := pair(t)
			var c tally
			w := lease.StartWorker(a, -1, c.work, c.failed)
			if tt.setup != nil {
				tt.setup(t, st, clk, w, b)
			}
			if err := w.Stop(); !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Errorf("Stop = %v, want %v", err, tt.err)
			}
			if err := w.Stop(); err != nil {
				t.Errorf("second Stop = %v, want nil", err)
			}
			if tt.untouched {
				if _, err := b.Acquire(context.Background()); !errors.Is(err, errDisk) {
					t.Fatalf("Acquire after Stop = %v: Stop took the failure meant for the next transaction", err)
				}
			}
			if diff := cmp.Diff(tt.want, stored(t, st)); diff != "" {
				t.Errorf("stored lease mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWorkerGoroutine: StartWorker with an interval runs a round at once; Stop
// cancels the round under way, waits for it to end, and releases the lease.
// The interval is an hour: only the first round runs.
func TestWorkerGoroutine(t *testing.T) {
	st, _, a, _ := pair(t)
	started := make(chan struct{})
	var ended atomic.Bool
	work := func(ctx context.Context) {
		close(started)
		<-ctx.Done() // Stop cancels the round under way
		ended.Store(true)
	}
	var failures atomic.Int64
	w := lease.StartWorker(a, time.Hour, work, func(context.Context, error) { failures.Add(1) })
	<-started
	if diff := cmp.Diff(lease.Lease{Holder: "a", Until: t0.Add(ttl)}, stored(t, st)); diff != "" {
		t.Errorf("stored lease during the first round mismatch (-want +got):\n%s", diff)
	}
	if err := w.Stop(); err != nil {
		t.Fatalf("Stop = %v", err)
	}
	if !ended.Load() {
		t.Error("Stop returned before the round under way ended")
	}
	if diff := cmp.Diff(lease.Lease{}, stored(t, st)); diff != "" {
		t.Errorf("stored lease after Stop mismatch (-want +got):\n%s", diff)
	}
	if n := failures.Load(); n != 0 {
		t.Errorf("%d failures reported", n)
	}
}

// TestWorkerTicks: the goroutine runs a round every interval (a millisecond:
// the one test that needs the ticker to fire), each renewing the lease.
func TestWorkerTicks(t *testing.T) {
	st, clk, a, _ := pair(t)
	// Each round, having renewed the lease, tells the test and waits for it
	// to move the clock: the next round renews from there.
	rounds, proceed := make(chan struct{}), make(chan struct{})
	w := lease.StartWorker(a, time.Millisecond, func(ctx context.Context) {
		select {
		case rounds <- struct{}{}:
		case <-ctx.Done():
			return
		}
		select {
		case <-proceed:
		case <-ctx.Done():
		}
	}, nil)
	for i := range 3 {
		<-rounds
		if i < 2 {
			clk.Advance(time.Second)
			proceed <- struct{}{}
		}
	}
	if diff := cmp.Diff(lease.Lease{Holder: "a", Until: t0.Add(2*time.Second + ttl)}, stored(t, st)); diff != "" {
		t.Errorf("stored lease after 3 rounds mismatch (-want +got):\n%s", diff)
	}
	if err := w.Stop(); err != nil {
		t.Fatalf("Stop = %v", err)
	}
}

// TestWorkerNoGoroutine: with an interval of 0 or less no round runs by
// itself; Stop returns at once.
func TestWorkerNoGoroutine(t *testing.T) {
	for _, every := range []time.Duration{0, -1, -time.Hour} {
		st, _, a, _ := pair(t)
		var c tally
		w := lease.StartWorker(a, every, c.work, c.failed)
		if err := w.Stop(); err != nil {
			t.Errorf("every %v: Stop = %v", every, err)
		}
		if n := c.works.Load(); n != 0 || w.Held() {
			t.Errorf("every %v: %d rounds of work, Held %v; want none", every, n, w.Held())
		}
		if diff := cmp.Diff(lease.Lease{}, stored(t, st)); diff != "" {
			t.Errorf("every %v: stored lease mismatch (-want +got):\n%s", every, diff)
		}
	}
}

func mustAcquire(t *testing.T, l *lease.Named, want bool) {
	t.Helper()
	if held, err := l.Acquire(context.Background()); err != nil || held != want {
		t.Fatalf("%s: Acquire = %v, %v; want %v", l.Holder, held, err, want)
	}
}

func mustRound(t *testing.T, w *lease.Worker, want bool) {
	t.Helper()
	if got := w.Round(context.Background()); got != want {
		t.Fatalf("Round = %v, want %v", got, want)
	}
}
