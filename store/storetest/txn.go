package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/store"
)

// txMethod is one of the ways to run a transaction.
type txMethod struct {
	name string
	run  func(s store.Store, ctx context.Context, fn func(store.Tx) error) error
}

// txMethods are the ways to run a read-write transaction; allMethods adds View.
var (
	txMethods  = []txMethod{{"Update", store.Store.Update}, {"Batch", store.Store.Batch}}
	allMethods = []txMethod{{"View", store.Store.View}, txMethods[0], txMethods[1]}
)

// writeSome changes the store as much as a transaction can: overwrites, deletes,
// new keys in an existing and in a new bucket.
func writeSome(tx store.Tx) error {
	for _, w := range []struct{ b, k, v string }{
		{"b", "k1", "changed"}, {"b", "new", "v"}, {"newbucket", "k", "v"},
	} {
		if err := tx.Put([]byte(w.b), []byte(w.k), []byte(w.v)); err != nil {
			return err
		}
	}
	return tx.Delete([]byte("b"), []byte("k2"))
}

func testErrorRollsBack(t *testing.T, s store.Store) {
	original := []kv{{"k1", "v1"}, {"k2", "v2"}}
	putAll(t, s, "b", original...)
	for _, m := range txMethods {
		err := m.run(s, context.Background(), func(tx store.Tx) error {
			if err := writeSome(tx); err != nil {
				return err
			}
			return errSentinel
		})
		if err != errSentinel {
			t.Fatalf("%s = %v, want errSentinel", m.name, err)
		}
		if diff := cmp.Diff(original, contents(t, s, "b")); diff != "" {
			t.Errorf("after failed %s, contents mismatch (-want +got):\n%s", m.name, diff)
		}
		if got := contents(t, s, "newbucket"); len(got) != 0 {
			t.Errorf("after failed %s, new bucket holds %v", m.name, got)
		}
	}
}

// customError is an error type with a pointer identity, to check that errors
// come back as the same value and not merely errors.Is-equal.
type customError struct{ msg string }

func (e *customError) Error() string { return e.msg }

func testErrorReturnedUnchanged(t *testing.T, s store.Store) {
	for _, m := range allMethods {
		for _, want := range []error{
			errSentinel,
			fmt.Errorf("%s: wrapped: %w", m.name, errSentinel),
			&customError{m.name},
		} {
			got := m.run(s, context.Background(), func(store.Tx) error { return want })
			if got != want {
				t.Errorf("%s returned %v (%T), want fn's error %v unchanged", m.name, got, got, want)
			}
		}
	}
}

func testWriteInViewFails(t *testing.T, s store.Store) {
	putAll(t, s, "b", kv{"k", "v"})
	err := s.View(context.Background(), func(tx store.Tx) error {
		if err := tx.Put([]byte("b"), []byte("k"), []byte("changed")); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("Put in View = %v, want store.ErrReadOnly", err)
		}
		if err := tx.Put([]byte("new"), []byte("k"), []byte("v")); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("Put in View into new bucket = %v, want store.ErrReadOnly", err)
		}
		if err := tx.Delete([]byte("b"), []byte("k")); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("Delete in View = %v, want store.ErrReadOnly", err)
		}
		if err := tx.Delete([]byte("absent"), []byte("k")); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("Delete in View from absent bucket = %v, want store.ErrReadOnly", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if diff := cmp.Diff([]kv{{"k", "v"}}, contents(t, s, "b")); diff != "" {
		t.Errorf("contents mismatch (-want +got):\n%s", diff)
	}
	if got := contents(t, s, "new"); len(got) != 0 {
		t.Errorf("Put in View created a bucket holding %v", got)
	}
}

// testPanicReleasesStore checks that a panic in fn reaches the caller, writes
// nothing and leaves the store usable.
func testPanicReleasesStore(t *testing.T, s store.Store) {
	for _, m := range allMethods {
		func() {
			defer func() {
				if r := recover(); r != "storetest panic" {
					t.Errorf("%s: recovered %v, want the panic of fn", m.name, r)
				}
			}()
			_ = m.run(s, context.Background(), func(tx store.Tx) error {
				_ = tx.Put([]byte("b"), []byte("k"), []byte("v")) // fails in a View
				panic("storetest panic")
			})
		}()
	}
	putAll(t, s, "other", kv{"k", "v"})
	if got := contents(t, s, "b"); len(got) != 0 {
		t.Errorf("panicking fns wrote %v", got)
	}
}

func testBatchCommits(t *testing.T, s store.Store) {
	err := s.Batch(context.Background(), func(tx store.Tx) error {
		return tx.Put([]byte("b"), []byte("k"), []byte("v"))
	})
	if err != nil {
		t.Fatalf("Batch: %v", err)
	}
	if v, ok := get(t, s, "b", "k"); !ok || v != "v" {
		t.Errorf("Get after Batch = %q, %v; want %q, true", v, ok, "v")
	}
}

// testConcurrentBatch runs Batch from many goroutines: each writes its own key
// and increments a shared counter (read-modify-write, correct only if
// transactions are serializable and a re-run fn sees a rolled-back state).
func testConcurrentBatch(t *testing.T, s store.Store) {
	const goroutines, perGoroutine = 50, 10
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				err := s.Batch(context.Background(), func(tx store.Tx) error {
					if err := increment(tx); err != nil {
						return err
					}
					return tx.Put([]byte("b"), fmt.Appendf(nil, "g%03d-%03d", g, i), []byte("v"))
				})
				if err != nil {
					t.Errorf("Batch: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := len(contents(t, s, "b")); got != goroutines*perGoroutine {
		t.Errorf("%d keys written, want %d", got, goroutines*perGoroutine)
	}
	if v, _ := get(t, s, "counter", "n"); v != fmt.Sprint(goroutines*perGoroutine) {
		t.Errorf("counter = %q, want %d", v, goroutines*perGoroutine)
	}
}

func increment(tx store.Tx) error {
	var n int
	if v := tx.Get([]byte("counter"), []byte("n")); v != nil {
		if _, err := fmt.Sscan(string(v), &n); err != nil {
			return err
		}
	}
	return tx.Put([]byte("counter"), []byte("n"), fmt.Append(nil, n+1))
}

// testConcurrentBatchWithFailures mixes failing Batch calls with succeeding
// ones: each failing call gets its own error back and leaves nothing, the
// others all land (bbolt re-runs a group without the failing fn).
func testConcurrentBatchWithFailures(t *testing.T, s store.Store) {
	const calls = 64
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			fail := i%4 == 0
			want := &customError{fmt.Sprint("call ", i)}
			err := s.Batch(context.Background(), func(tx store.Tx) error {
				if err := tx.Put([]byte("b"), fmt.Appendf(nil, "k%02d", i), []byte("v")); err != nil {
					return err
				}
				if err := increment(tx); err != nil {
					return err
				}
				if fail {
					return want
				}
				return nil
			})
			switch {
			case fail && err != want:
				t.Errorf("failing Batch %d = %v, want its own error", i, err)
			case !fail && err != nil:
				t.Errorf("Batch %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	var want []kv
	for i := range calls {
		if i%4 != 0 {
			want = append(want, kv{fmt.Sprintf("k%02d", i), "v"})
		}
	}
	if diff := cmp.Diff(want, contents(t, s, "b")); diff != "" {
		t.Errorf("contents mismatch (-want +got):\n%s", diff)
	}
	if v, _ := get(t, s, "counter", "n"); v != fmt.Sprint(len(want)) {
		t.Errorf("counter = %q, want %d", v, len(want))
	}
}

// testSnapshotReads runs readers against writers that keep an invariant (every
// key of the bucket holds the same value): a reader that sees two values saw a
// half-done or a moving transaction.
func testSnapshotReads(t *testing.T, s store.Store) {
	const keys, writes = 20, 100
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	writeAll := func(tx store.Tx, n int) error {
		for k := range keys {
			if err := tx.Put([]byte("b"), fmt.Appendf(nil, "k%02d", k), fmt.Append(nil, n)); err != nil {
				return err
			}
		}
		return nil
	}
	update(t, s, func(tx store.Tx) error { return writeAll(tx, 0) })

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				err := s.View(context.Background(), func(tx store.Tx) error {
					first := string(tx.Get([]byte("b"), []byte("k00")))
					return tx.Scan([]byte("b"), nil, false, func(k, v []byte) (bool, error) {
						if string(v) != first {
							return false, fmt.Errorf("key %s = %s, k00 = %s: not a snapshot", k, v, first)
						}
						return true, nil
					})
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for n := 1; n <= writes; n++ {
		run := txMethods[n%2].run
		err := run(s, context.Background(), func(tx store.Tx) error {
			if err := writeAll(tx, n); err != nil {
				return err
			}
			if n%3 == 0 {
				return errSentinel // rolled back: readers must not see it either
			}
			return nil
		})
		if err != nil && err != errSentinel {
			t.Fatalf("write %d: %v", n, err)
		}
	}
	cancel()
	wg.Wait()
}

// testRepeatedWrites writes keys several times over in one transaction, in
// every order of puts and deletes (a put after a delete, a delete after a
// put, puts of new values, deletes of absent keys) and checks that the
// last write of each key is what was committed.
func testRepeatedWrites(t *testing.T, s store.Store) {
	putAll(t, s, "w", kv{"k0", "old"}, kv{"k3", "old"}, kv{"k5", "old"})
	want := map[string]string{"k0": "old", "k3": "old", "k5": "old"}
	r := rand.New(rand.NewPCG(2, 2))
	for round := range 5 {
		ops := make([]kv, 40) // V "" deletes K
		for i := range ops {
			ops[i].K = fmt.Sprintf("k%d", r.IntN(8))
			if r.IntN(3) > 0 {
				ops[i].V = fmt.Sprintf("r%d-%d", round, i)
			}
		}
		update(t, s, func(tx store.Tx) error { // fn may run twice: ops stay as they are
			for _, op := range ops {
				var err error
				if op.V == "" {
					err = tx.Delete([]byte("w"), []byte(op.K))
				} else {
					err = tx.Put([]byte("w"), []byte(op.K), []byte(op.V))
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		for _, op := range ops {
			if op.V == "" {
				delete(want, op.K)
			} else {
				want[op.K] = op.V
			}
		}
		var wantKV []kv
		for k, v := range want {
			wantKV = append(wantKV, kv{k, v})
		}
		slices.SortFunc(wantKV, func(a, b kv) int { return strings.Compare(a.K, b.K) })
		if diff := cmp.Diff(wantKV, contents(t, s, "w")); diff != "" {
			t.Fatalf("round %d: committed (-want +got):\n%s", round, diff)
		}
	}
}
