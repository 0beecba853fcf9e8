package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
}

var errDisk = errors.New("disk on fire")

func noop(store.Tx) error { return nil }

func TestFailNext(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	s.FailNext(errDisk)
	s.FailNext(errDisk)

	called := false
	err := s.Update(ctx, func(tx store.Tx) error {
		called = true
		return tx.Put([]byte("b"), []byte("k"), []byte("v"))
	})
	if !errors.Is(err, errDisk) || called {
		t.Errorf("first Update = %v (fn called: %v), want errDisk without calling fn", err, called)
	}
	if err := s.View(ctx, noop); !errors.Is(err, errDisk) {
		t.Errorf("second transaction = %v, want errDisk", err)
	}
	if err := s.Batch(ctx, noop); err != nil {
		t.Errorf("third transaction = %v, want nil", err)
	}
}

func TestFailWith(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	var ops []string
	s.FailWith(func(op string) error {
		ops = append(ops, op)
		if op == "View" {
			return nil
		}
		return errDisk
	})
	if err := s.View(ctx, noop); err != nil {
		t.Errorf("View = %v, want nil", err)
	}
	if err := s.Update(ctx, noop); !errors.Is(err, errDisk) {
		t.Errorf("Update = %v, want errDisk", err)
	}
	if err := s.Batch(ctx, noop); !errors.Is(err, errDisk) {
		t.Errorf("Batch = %v, want errDisk", err)
	}
	if diff := cmp.Diff([]string{"View", "Update", "Batch"}, ops); diff != "" {
		t.Errorf("ops mismatch (-want +got):\n%s", diff)
	}
	s.FailWith(nil)
	if err := s.Update(ctx, noop); err != nil {
		t.Errorf("Update after FailWith(nil) = %v, want nil", err)
	}
}

// TestStaleValuesArePoisoned checks that slices kept past their transaction
// no longer hold the value, so that the bug shows in tests.
func TestStaleValuesArePoisoned(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	err := s.Update(ctx, func(tx store.Tx) error {
		return tx.Put([]byte("b"), []byte("key"), []byte("value"))
	})
	if err != nil {
		t.Fatal(err)
	}
	var kept, keptKey, keptValue []byte
	err = s.View(ctx, func(tx store.Tx) error {
		kept = tx.Get([]byte("b"), []byte("key"))
		return tx.Scan([]byte("b"), nil, false, func(k, v []byte) (bool, error) {
			keptKey, keptValue = k, v
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{kept, keptKey, keptValue} {
		if string(b) == "value" || string(b) == "key" {
			t.Errorf("slice kept after the View still reads %q", b)
		}
	}
	// The store itself is unaffected.
	err = s.View(ctx, func(tx store.Tx) error {
		if v := tx.Get([]byte("b"), []byte("key")); string(v) != "value" {
			t.Errorf("Get = %q, want %q", v, "value")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMutatingHandedOutValue(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	err := s.Update(ctx, func(tx store.Tx) error {
		if err := tx.Put([]byte("b"), []byte("k"), []byte("value")); err != nil {
			return err
		}
		copy(tx.Get([]byte("b"), []byte("k")), "XXXXX")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx store.Tx) error {
		if v := tx.Get([]byte("b"), []byte("k")); string(v) != "value" {
			t.Errorf("Get = %q, want %q", v, "value")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTxAfterEndPanics(t *testing.T) {
	s := memstore.New()
	var leaked store.Tx
	if err := s.View(context.Background(), func(tx store.Tx) error { leaked = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Get on an ended Tx did not panic")
		}
	}()
	leaked.Get([]byte("b"), []byte("k"))
}

func TestBatchRunsFnTwice(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	calls := 0
	err := s.Batch(ctx, func(tx store.Tx) error {
		calls++
		return tx.Put([]byte("b"), []byte("k"), fmt.Append(nil, calls))
	})
	if err != nil || calls != 2 {
		t.Fatalf("Batch = %v after %d calls of fn, want nil after 2", err, calls)
	}
	err = s.View(ctx, func(tx store.Tx) error {
		if v := tx.Get([]byte("b"), []byte("k")); string(v) != "2" {
			t.Errorf("Get = %q, want the second run's %q", v, "2")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	calls = 0
	if err := s.Batch(ctx, func(store.Tx) error { calls++; return errDisk }); err != errDisk || calls != 1 {
		t.Errorf("failing Batch = %v after %d calls, want errDisk after 1", err, calls)
	}
}
