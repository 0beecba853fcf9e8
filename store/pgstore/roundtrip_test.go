package pgstore_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/pgstore"
)

// roundTrips counts what a connection sends and waits for: each statement
// sent alone and each batch is one round trip.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// testRoundTrips counts the round trips of the transactions the gateway runs
// most: on a database server the round trips, not the statements, set a
// transaction's latency and much of its CPU. A /c1 turn's Append reads the
// conversation's record and then writes five keys.
func testRoundTrips(t *testing.T, c *pgtest.Cluster) {
	rt := new(roundTrips)
	db := open(t, c.NewDatabase(t), pgstore.WithTracer(rt))
	ctx := context.Background()
	b := []byte("b")
	put := func(tx store.Tx, k string) error { return tx.Put(b, []byte(k), []byte("v")) }
	seed := func(tx store.Tx) error { return put(tx, "k") }
	// appendLike is an Append: a read, then five writes; assuming the
	// read's answer when assumed is not nil.
	appendLike := func(tx store.Tx, assumed []byte) error {
		if assumed != nil {
			tx.(store.Assumer).Assume(b, []byte("k"), assumed)
		}
		tx.Get(b, []byte("k"))
		for _, k := range []string{"m1", "m2", "i1", "i2"} {
			if err := put(tx, k); err != nil {
				return err
			}
		}
		return tx.Delete(b, []byte("old"))
	}
	tests := []struct {
		name string
		run  func(context.Context, func(store.Tx) error) error
		fn   func(store.Tx) error
	}{
		{"View: one Get", db.View, func(tx store.Tx) error { tx.Get(b, []byte("k")); return nil }},
		{"View: two Gets", db.View, func(tx store.Tx) error { tx.Get(b, []byte("k")); tx.Get(b, []byte("x")); return nil }},
		{"View: a Scan", db.View, func(tx store.Tx) error {
			return tx.Scan(b, nil, false, func(_, _ []byte) (bool, error) { return true, nil })
		}},
		{"View: a Prefetch of two Gets and a Scan, then those reads", db.View, func(tx store.Tx) error {
			tx.(store.Prefetcher).Prefetch(store.Read{Bucket: b, Key: []byte("k")}, store.Read{Bucket: b, Key: []byte("x")},
				store.Read{Bucket: b, Key: []byte("m"), Prefix: true})
			tx.Get(b, []byte("k"))
			tx.Get(b, []byte("x"))
			return tx.Scan(b, []byte("m"), false, func(_, _ []byte) (bool, error) { return true, nil })
		}},
		{"View: a Prefetch, then a Get it did not read", db.View, func(tx store.Tx) error {
			tx.(store.Prefetcher).Prefetch(store.Read{Bucket: b, Key: []byte("k")})
			tx.Get(b, []byte("k"))
			tx.Get(b, []byte("x"))
			return nil
		}},
		{"View: a Prefetch, then a reverse Scan", db.View, func(tx store.Tx) error {
			tx.(store.Prefetcher).Prefetch(store.Read{Bucket: b, Key: []byte("k")})
			return tx.Scan(b, []byte("m"), true, func(_, _ []byte) (bool, error) { return true, nil })
		}},
		{"View: a Get, then a Prefetch", db.View, func(tx store.Tx) error {
			tx.Get(b, []byte("x"))
			tx.(store.Prefetcher).Prefetch(store.Read{Bucket: b, Key: []byte("k")})
			tx.Get(b, []byte("k"))
			return nil
		}},
		{"Update: a Prefetch", db.Update, func(tx store.Tx) error {
			tx.(store.Prefetcher).Prefetch(store.Read{Bucket: b, Key: []byte("k")})
			tx.Get(b, []byte("k"))
			return nil
		}},
		{"Update: a Get then five writes (an Append)", db.Update, func(tx store.Tx) error { return appendLike(tx, nil) }},
		{"Update: an Assume that holds, its Get, then five writes", db.Update, func(tx store.Tx) error {
			return appendLike(tx, []byte("v"))
		}},
		{"Update: an Assume that does not hold, its Get, then five writes", db.Update, func(tx store.Tx) error {
			return appendLike(tx, []byte("stale"))
		}},
		{"Update: writes only", db.Update, func(tx store.Tx) error { return put(tx, "w") }},
		{"Update: nothing", db.Update, func(store.Tx) error { return nil }},
	}
	if err := db.Update(ctx, seed); err != nil { // and prepares the statements
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, tt := range tests {
		tt.run(ctx, tt.fn) // once to prepare its statements on the connection
		rt.n.Store(0)
		if err := tt.run(ctx, tt.fn); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got[tt.name] = rt.n.Load()
	}
	want := map[string]int64{
		"View: one Get":  2, // BEGIN with the Get, COMMIT
		"View: two Gets": 3,
		"View: a Scan":   2,
		"View: a Prefetch of two Gets and a Scan, then those reads":       1, // BEGIN, the three reads and COMMIT at once
		"View: a Prefetch, then a Get it did not read":                    2, // again, with that Get in the Prefetch
		"View: a Prefetch, then a reverse Scan":                           4, // then as without speculating: BEGIN with the Prefetch, the Scan, COMMIT
		"View: a Get, then a Prefetch":                                    3, // BEGIN with the Get, the Prefetch, COMMIT
		"Update: a Prefetch":                                              2, // an Update never commits early
		"Update: a Get then five writes (an Append)":                      2, // BEGIN with the Get; the writes with COMMIT
		"Update: an Assume that holds, its Get, then five writes":         1, // BEGIN, the check, the writes and COMMIT at once
		"Update: an Assume that does not hold, its Get, then five writes": 4, // refused, ROLLBACK, then as without it
		"Update: writes only":                                             1, // BEGIN, the writes and COMMIT at once
		"Update: nothing":                                                 0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trips per transaction (-want +got):\n%s", diff)
	}
}
