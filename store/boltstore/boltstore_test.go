package boltstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/boltstore"
	"github.com/chatgw/gateway/store/storetest"
)

// mustOpen opens a DB in a fresh temporary directory, closed at the end of the
// test.
func mustOpen(t testing.TB, opts ...boltstore.Option) *boltstore.DB {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "test.db"), opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return mustOpen(t) })
}

func TestOpenCreatesDirectoryAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "gateway.db")
	db, err := boltstore.Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("file mode = %v, want 0600", mode)
	}
	if got := db.Path(); got != path {
		t.Errorf("Path() = %q, want %q", got, path)
	}
}

func TestSecondOpenTimesOut(t *testing.T) {
	db := mustOpen(t)
	start := time.Now()
	_, err := boltstore.Open(db.Path(), boltstore.WithLockTimeout(100*time.Millisecond))
	if err == nil {
		t.Fatal("second Open of a locked file succeeded")
	}
	if !strings.Contains(err.Error(), "locked") || !strings.Contains(err.Error(), db.Path()) {
		t.Errorf("error %q does not say that the file is locked", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second Open took %v", d)
	}

	// Close releases the lock.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := boltstore.Open(db.Path(), boltstore.WithLockTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	db2.Close()
}

func TestDataSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	err := db.Batch(ctx, func(tx store.Tx) error {
		return tx.Put([]byte("b"), []byte("k"), []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := boltstore.Open(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	err = db2.View(ctx, func(tx store.Tx) error {
		if v := tx.Get([]byte("b"), []byte("k")); string(v) != "v" {
			t.Errorf("Get after reopen = %q, want %q", v, "v")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notBolt := filepath.Join(dir, "not.db")
	if err := os.WriteFile(notBolt, []byte(strings.Repeat("not a bbolt file ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		opts []boltstore.Option
		want string
	}{
		{"not a bbolt file", notBolt, nil, "boltstore.Open " + notBolt},
		{"directory is a file", filepath.Join(notBolt, "x.db"), nil, "boltstore.Open: mkdir"},
		{"zero lock timeout", filepath.Join(dir, "x.db"), []boltstore.Option{boltstore.WithLockTimeout(0)}, "lock timeout"},
		{"zero batch size", filepath.Join(dir, "x.db"), []boltstore.Option{boltstore.WithMaxBatchSize(0)}, "max batch size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := boltstore.Open(tt.path, tt.opts...)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// TestBatchGroupIsolatesFailures runs many Batch calls at once, some failing or
// panicking: each failing call gets its own error (or panic) and writes nothing,
// and every other call is committed.
func TestBatchGroupIsolatesFailures(t *testing.T) {
	db := mustOpen(t)
	ctx := context.Background()
	errOdd := errors.New("odd")
	const n = 200
	var wg sync.WaitGroup
	results := make([]any, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					results[i] = p
				}
			}()
			results[i] = db.Batch(ctx, func(tx store.Tx) error {
				if err := tx.Put([]byte("b"), store.AppendUint64(nil, uint64(i)), []byte("v")); err != nil {
					return err
				}
				switch {
				case i%10 == 7:
					panic("seven")
				case i%2 == 1:
					return errOdd
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i, got := range results {
		var want any
		switch {
		case i%10 == 7:
			want = "seven"
		case i%2 == 1:
			want = errOdd
		}
		if got != want {
			t.Errorf("call %d: got %v, want %v", i, got, want)
		}
	}
	err := db.View(ctx, func(tx store.Tx) error {
		for i := range n {
			stored := tx.Get([]byte("b"), store.AppendUint64(nil, uint64(i))) != nil
			if stored != (i%2 == 0) {
				t.Errorf("key %d stored = %v", i, stored)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestObserveCommits: every Batch call is in exactly one observed commit, and
// a commit holds at most the maximum batch size; after ObserveCommits(nil)
// nothing is observed.
func TestObserveCommits(t *testing.T) {
	db := mustOpen(t, boltstore.WithMaxBatchSize(4))
	var (
		mu    sync.Mutex
		sizes []int
	)
	db.ObserveCommits(func(n int) {
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, n)
	})
	const calls = 50
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			key := []byte{byte(i)}
			if err := db.Batch(context.Background(), func(tx store.Tx) error { return tx.Put([]byte("b"), key, key) }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	total := 0
	for _, n := range sizes {
		if n < 1 || n > 4 {
			t.Errorf("a commit of %d calls, want 1 to 4", n)
		}
		total += n
	}
	mu.Unlock()
	if total != calls {
		t.Errorf("observed commits hold %d calls, want %d", total, calls)
	}
	db.ObserveCommits(nil)
	if err := db.Batch(context.Background(), func(tx store.Tx) error { return tx.Put([]byte("b"), []byte("x"), []byte("y")) }); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	after := 0
	for _, n := range sizes {
		after += n
	}
	if after != calls {
		t.Errorf("%d calls observed after ObserveCommits(nil)", after-calls)
	}
}
