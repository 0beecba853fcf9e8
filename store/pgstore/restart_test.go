package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/pgstore"
)

// TestDatabaseRestart restarts the database under a store (a cluster of its
// own, since every session is cut): the store's pooled connections die with
// it, transactions in flight and those that start while it is down are run
// again once it is back, and the data stays.
func TestDatabaseRestart(t *testing.T) {
	t.Parallel()
	c := pgtest.New(t)
	url := c.NewDatabase(t)
	db := open(t, url)
	ctx := context.Background()
	increment := func(tx store.Tx) error {
		n, err := getInt(tx, "counter")
		if err != nil {
			return err
		}
		return putInt(tx, "counter", n+1)
	}
	if err := db.Update(ctx, increment); err != nil {
		t.Fatal(err)
	}

	// Every pooled connection is dead after a restart.
	c.Restart(t)
	if n := readInt(t, db, "counter"); n != 1 {
		t.Fatalf("counter after a restart = %d, want 1", n)
	}

	// A restart in the middle of a transaction: it runs again, once.
	calls := 0
	err := db.Update(ctx, func(tx store.Tx) error {
		calls++
		if calls == 1 {
			tx.Get([]byte("b"), []byte("counter"))
			c.Restart(t)
		}
		return increment(tx)
	})
	if err != nil || calls != 2 {
		t.Errorf("Update across a restart = %v after %d calls, want nil after 2", err, calls)
	}

	// Down for a moment: a transaction started meanwhile waits it out.
	c.Stop(t)
	done := make(chan error, 1)
	go func() { done <- db.Update(ctx, increment) }()
	time.Sleep(300 * time.Millisecond)
	c.Start(t)
	if err := <-done; err != nil {
		t.Errorf("Update while the database was down for 300ms: %v", err)
	}
	if n := readInt(t, db, "counter"); n != 3 {
		t.Errorf("counter = %d after three increments, want 3", n)
	}

	// Down for good: a transaction fails once its attempts are spent, and
	// the rate limiter reports its failure (the gateway then fails closed or
	// open, as configured) rather than passing the request.
	quick := open(t, url, pgstore.WithMaxAttempts(2), pgstore.WithLimiterTimeout(time.Second))
	c.Stop(t)
	if ok, _, err := quick.RateLimiter().Allow(ctx, auth.DigestOf("t"), auth.Rate{PerSecond: 1, Burst: 5}); ok || err == nil {
		t.Errorf("Allow with the database down = %v, %v; want false and an error", ok, err)
	}
	start := time.Now()
	if err := quick.Update(ctx, increment); err == nil {
		t.Error("Update with the database down succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Update with the database down took %v to fail", d)
	}
	c.Start(t)
}
