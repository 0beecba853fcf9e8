// Package storetest is the conformance suite of store.Store: every
// implementation runs it from its own tests, as testing/slogtest does for
// slog handlers.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			db, err := boltstore.Open(filepath.Join(t.TempDir(), "test.db"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			return db
//		})
//	}
//
// The suite checks the contract documented on store.Store and store.Tx, and
// nothing more: what an implementation does beyond it (memstore's poisoning of
// stale values, boltstore's file handling) is tested beside it.
//
// # Values outliving a transaction
//
// Slices returned by Tx.Get and passed to Scan's fn belong to the store and are
// valid only until the transaction ends: bbolt hands out pointers into its
// memory map, which a later write may remap or reuse. Code that keeps a value
// must copy it inside fn (bytes.Clone, string(v), json.Unmarshal...). The suite
// shows the pattern (the ValuesOutliveTx test); it cannot catch the mistake,
// which memstore makes visible by overwriting handed-out slices when the
// transaction ends.
package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/chatgw/gateway/store"
)

// Run runs the conformance suite against the stores that newStore returns, one
// fresh empty store per subtest. Run closes every store it gets (and accepts
// store.ErrClosed from stores it already closed), so newStore needs to register
// only its own cleanup, such as t.TempDir's.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"GetPutDelete", testGetPutDelete},
		{"AbsentBucket", testAbsentBucket},
		{"EmptyValue", testEmptyValue},
		{"InvalidPut", testInvalidPut},
		{"BucketsAreSeparate", testBucketsAreSeparate},
		{"PutCopiesArguments", testPutCopiesArguments},
		{"ValuesOutliveTx", testValuesOutliveTx},
		{"ScanOrder", testScanOrder},
		{"ScanPrefix", testScanPrefix},
		{"ScanManyKeys", testScanManyKeys},
		{"ScanStopsEarly", testScanStopsEarly},
		{"ReadsSeeOwnWrites", testReadsSeeOwnWrites},
		{"RepeatedWrites", testRepeatedWrites},
		{"ErrorRollsBack", testErrorRollsBack},
		{"ErrorReturnedUnchanged", testErrorReturnedUnchanged},
		{"WriteInViewFails", testWriteInViewFails},
		{"PanicReleasesStore", testPanicReleasesStore},
		{"BatchCommits", testBatchCommits},
		{"ConcurrentBatch", testConcurrentBatch},
		{"ConcurrentBatchWithFailures", testConcurrentBatchWithFailures},
		{"SnapshotReads", testSnapshotReads},
		{"Prefetch", testPrefetch},
		{"PrefetchAndWrites", testPrefetchAndWrites},
		{"Assume", testAssume},
		{"CanceledContext", testCanceledContext},
		{"Close", testClose},
		{"CloseWhileBusy", testCloseWhileBusy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

// kv is a key and value as strings, for readable diffs.
type kv struct{ K, V string }

// errSentinel is what fns return to test error paths.
var errSentinel = errors.New("storetest: sentinel")

func update(t *testing.T, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func view(t *testing.T, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// putAll writes pairs into bucket in one Update.
func putAll(t *testing.T, s store.Store, bucket string, pairs ...kv) {
	t.Helper()
	update(t, s, func(tx store.Tx) error {
		for _, p := range pairs {
			if err := tx.Put([]byte(bucket), []byte(p.K), []byte(p.V)); err != nil {
				return err
			}
		}
		return nil
	})
}

// scan collects what tx.Scan visits.
func scan(tx store.Tx, bucket, prefix string, reverse bool) ([]kv, error) {
	var got []kv
	err := tx.Scan([]byte(bucket), []byte(prefix), reverse, func(k, v []byte) (bool, error) {
		got = append(got, kv{string(k), string(v)})
		return true, nil
	})
	return got, err
}

// contents returns every pair of bucket, in ascending order, read in a View.
func contents(t *testing.T, s store.Store, bucket string) []kv {
	t.Helper()
	var got []kv
	view(t, s, func(tx store.Tx) error {
		var err error
		got, err = scan(tx, bucket, "", false)
		return err
	})
	return got
}

// get returns the value of key read in a View, and whether it is present.
func get(t *testing.T, s store.Store, bucket, key string) (string, bool) {
	t.Helper()
	var v []byte
	view(t, s, func(tx store.Tx) error {
		v = clone(tx.Get([]byte(bucket), []byte(key)))
		return nil
	})
	return string(v), v != nil
}

// clone copies b, keeping nil and empty apart.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
