package lease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/lease"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/google/go-cmp/cmp"
)

var (
	t0     = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	bucket = []byte("test/lease")
	key    = []byte("purger")
)

const ttl = 30 * time.Second

// pair is two would-be holders of one lease over one store and clock.
func pair(t *testing.T) (*memstore.Store, *clock.Fake, *lease.Named, *lease.Named) {
	t.Helper()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	clk := clock.NewFake(t0)
	named := func(holder string) *lease.Named {
		return &lease.Named{Store: st, Clock: clk, Bucket: bucket, Key: key, Holder: holder, TTL: ttl}
	}
	return st, clk, named("a"), named("b")
}

// stored returns the lease as stored; the zero Lease when there is none.
func stored(t *testing.T, st store.Store) lease.Lease {
	t.Helper()
	var l lease.Lease
	if err := st.View(context.Background(), func(tx store.Tx) error {
		_, err := store.GetJSON(tx, bucket, key, &l)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestAcquire walks one lease through the moves of two holders: a takes it,
// b cannot while it lives, a renews it, it expires, b takes it over, b
// releases it, a takes it at once.
func TestAcquire(t *testing.T) {
	st, clk, a, b := pair(t)
	ctx := context.Background()
	for _, step := range []struct {
		name    string
		advance time.Duration
		who     *lease.Named
		release bool
		held    bool
		want    lease.Lease
	}{
		{name: "a takes the free lease", who: a, held: true, want: lease.Lease{Holder: "a", Until: t0.Add(ttl)}},
		{name: "b cannot take a's live lease", advance: 10 * time.Second, who: b, want: lease.Lease{Holder: "a", Until: t0.Add(ttl)}},
		{name: "a renews", who: a, held: true, want: lease.Lease{Holder: "a", Until: t0.Add(10*time.Second + ttl)}},
		{name: "b still cannot, a nanosecond before expiry", advance: ttl - time.Nanosecond, who: b,
			want: lease.Lease{Holder: "a", Until: t0.Add(10*time.Second + ttl)}},
		{name: "b takes it over at expiry", advance: time.Nanosecond, who: b, held: true,
			want: lease.Lease{Holder: "b", Until: t0.Add(10*time.Second + 2*ttl)}},
		{name: "a's late renewal fails", who: a, want: lease.Lease{Holder: "b", Until: t0.Add(10*time.Second + 2*ttl)}},
		{name: "a's release of b's lease changes nothing", who: a, release: true,
			want: lease.Lease{Holder: "b", Until: t0.Add(10*time.Second + 2*ttl)}},
		{name: "b releases", who: b, release: true, want: lease.Lease{}},
		{name: "a takes the released lease at once", who: a, held: true, want: lease.Lease{Holder: "a", Until: t0.Add(10*time.Second + ttl + ttl)}},
	} {
		clk.Advance(step.advance)
		if step.release {
			if err := step.who.Release(ctx); err != nil {
				t.Fatalf("%s: Release: %v", step.name, err)
			}
		} else if held, err := step.who.Acquire(ctx); err != nil || held != step.held {
			t.Fatalf("%s: Acquire = %v, %v; want %v", step.name, held, err, step.held)
		}
		if diff := cmp.Diff(step.want, stored(t, st)); diff != "" {
			t.Fatalf("%s: stored lease mismatch (-want +got):\n%s", step.name, diff)
		}
	}
}

// TestAcquireOnce: of many holders acquiring at once, exactly one holds the
// lease.
func TestAcquireOnce(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	clk := clock.NewFake(t0)
	const n = 16
	var wg sync.WaitGroup
	held := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := &lease.Named{Store: st, Clock: clk, Bucket: bucket, Key: key, Holder: lease.NewHolder(), TTL: ttl}
			held[i], errs[i] = l.Acquire(context.Background())
		}()
	}
	wg.Wait()
	count := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Acquire %d: %v", i, errs[i])
		}
		if held[i] {
			count++
		}
	}
	if count != 1 {
		t.Errorf("%d holders got the lease, want 1", count)
	}
}

func TestLive(t *testing.T) {
	for _, tt := range []struct {
		name string
		l    lease.Lease
		now  time.Time
		want bool
	}{
		{"before expiry", lease.Lease{Holder: "a", Until: t0}, t0.Add(-time.Nanosecond), true},
		{"at expiry", lease.Lease{Holder: "a", Until: t0}, t0, false},
		{"after expiry", lease.Lease{Holder: "a", Until: t0}, t0.Add(time.Hour), false},
		{"no holder", lease.Lease{Until: t0.Add(time.Hour)}, t0, false},
		{"zero", lease.Lease{}, t0, false},
	} {
		if got := tt.l.Live(tt.now); got != tt.want {
			t.Errorf("%s: Live = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	st, _, a, _ := pair(t)
	ctx := context.Background()
	errDisk := errors.New("disk on fire")
	st.FailNext(errDisk)
	if held, err := a.Acquire(ctx); held || !errors.Is(err, errDisk) {
		t.Errorf("Acquire on a failing store = %v, %v; want false, %v", held, err, errDisk)
	}
	st.FailNext(errDisk)
	if err := a.Release(ctx); !errors.Is(err, errDisk) {
		t.Errorf("Release on a failing store = %v, want %v", err, errDisk)
	}
	if err := st.Update(ctx, func(tx store.Tx) error { return tx.Put(bucket, key, []byte("{")) }); err != nil {
		t.Fatal(err)
	}
	if held, err := a.Acquire(ctx); held || err == nil {
		t.Errorf("Acquire over a corrupt lease = %v, %v; want an error", held, err)
	}
}

func TestNewHolder(t *testing.T) {
	a, b := lease.NewHolder(), lease.NewHolder()
	if len(a) != 32 || a == b {
		t.Errorf("NewHolder gave %q and %q: want two different 32-digit names", a, b)
	}
}
