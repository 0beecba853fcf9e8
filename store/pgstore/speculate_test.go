package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/pgstore"
)

// testSpeculativeView checks the Views that commit with their Prefetch and
// then read beyond it: each one's answer is that of one transaction, fn runs
// again as often as the rule says, and fn's error from an incomplete attempt
// (a record it took for absent) is never the View's.
func testSpeculativeView(t *testing.T, c *pgtest.Cluster) {
	rt := new(roundTrips)
	db := open(t, c.NewDatabase(t), pgstore.WithTracer(rt))
	retried := watchRetries(db)
	ctx := context.Background()
	b := []byte("b")
	head := store.Read{Bucket: b, Key: []byte("head")}
	long := store.Read{Bucket: b, Key: []byte("long/"), Prefix: true}
	err := db.Update(ctx, func(tx store.Tx) error {
		for _, kv := range [][2]string{{"head", "v1"}, {"v1", "first"}, {"v2", "second"}} {
			if err := tx.Put(b, []byte(kv[0]), []byte(kv[1])); err != nil {
				return err
			}
		}
		for i := range 1100 { // more than one page read ahead
			if err := tx.Put(b, fmt.Appendf(nil, "long/%04d", i), []byte("x")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// follow reads the head, then the record it names: a dependent read.
	follow := func(tx store.Tx) (string, error) {
		tx.(store.Prefetcher).Prefetch(head)
		v := tx.Get(b, tx.Get(head.Bucket, head.Key))
		if v == nil {
			return "", errors.New("the head names no record")
		}
		return string(v), nil
	}
	type result struct {
		Got        string
		Calls      int
		RoundTrips int64
		Reruns     []string // as ObserveRetries reports them
	}
	rerun := []string{"View read_ahead"}
	tests := []struct {
		name string
		fn   func(tx store.Tx, call int) (string, error)
		want result
	}{
		{"a dependent read is read ahead the second time", func(tx store.Tx, _ int) (string, error) {
			return follow(tx)
		}, result{"first", 2, 2, rerun}},
		{"a dependent read that moves runs without speculating", func(tx store.Tx, call int) (string, error) {
			if call == 2 { // after the first attempt read it, the head moves
				err := db.Update(ctx, func(tx store.Tx) error { return tx.Put(head.Bucket, head.Key, []byte("v2")) })
				if err != nil {
					t.Fatal(err)
				}
			}
			return follow(tx)
		}, result{"second", 3, 2 + 1 + 3, append(rerun, rerun...)}}, // the Update, two speculations, then BEGIN with the Prefetch, the Get, COMMIT
		{"a prefix longer than its page read ahead", func(tx store.Tx, _ int) (string, error) {
			tx.(store.Prefetcher).Prefetch(long)
			n := 0
			err := tx.Scan(long.Bucket, long.Key, false, func(_, _ []byte) (bool, error) { n++; return true, nil })
			return fmt.Sprint(n, " keys"), err
		}, result{"1100 keys", 2, 1 + 4, rerun}}, // the speculation, then BEGIN with the Prefetch (64 rows), pages of 256 and 1024, COMMIT
	}
	for _, tt := range tests {
		rt.n.Store(0)
		var got result
		err := db.View(ctx, func(tx store.Tx) (err error) {
			got.Calls++
			got.Got, err = tt.fn(tx, got.Calls)
			return err
		})
		got.RoundTrips, got.Reruns = rt.n.Load(), retried.reported()
		if err != nil {
			t.Errorf("%s: View = %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// testAssumptionRetried: an Update whose assumption does not hold runs again
// at once without it, which ObserveRetries hears of, and commits what the
// second run wrote.
func testAssumptionRetried(t *testing.T, c *pgtest.Cluster) {
	db := open(t, c.NewDatabase(t))
	retried := watchRetries(db)
	ctx := context.Background()
	if err := db.Update(ctx, func(tx store.Tx) error { return putInt(tx, "counter", 5) }); err != nil {
		t.Fatal(err)
	}
	calls := 0
	err := db.Update(ctx, func(tx store.Tx) error {
		calls++
		tx.(store.Assumer).Assume([]byte("b"), []byte("counter"), []byte("1")) // stale
		n, err := getInt(tx, "counter")
		if err != nil {
			return err
		}
		return putInt(tx, "counter", n+1)
	})
	if err != nil || calls != 2 {
		t.Errorf("Update with a stale assumption = %v after %d calls, want nil after 2", err, calls)
	}
	if n := readInt(t, db, "counter"); n != 6 {
		t.Errorf("counter = %d, want 6: the increment of the value stored, not of the one assumed", n)
	}
	testkit.Diff(t, "retries ObserveRetries heard", []string{"Update assumption"}, retried.reported())
}
