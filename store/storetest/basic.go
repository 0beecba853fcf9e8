package storetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/store"
)

func testGetPutDelete(t *testing.T, s store.Store) {
	b := []byte("b")
	update(t, s, func(tx store.Tx) error {
		if err := tx.Put(b, []byte("k1"), []byte("v1")); err != nil {
			return err
		}
		return tx.Put(b, []byte("k2"), []byte("v2"))
	})
	if v, ok := get(t, s, "b", "k1"); !ok || v != "v1" {
		t.Errorf("Get(k1) = %q, %v; want %q, true", v, ok, "v1")
	}

	// Overwrite one key, delete the other, delete absent keys.
	update(t, s, func(tx store.Tx) error {
		if err := tx.Put(b, []byte("k1"), []byte("v1bis")); err != nil {
			return err
		}
		if err := tx.Delete(b, []byte("k2")); err != nil {
			return err
		}
		if err := tx.Delete(b, []byte("absent")); err != nil {
			return err
		}
		return tx.Delete([]byte("absent bucket"), []byte("k1"))
	})
	want := []kv{{"k1", "v1bis"}}
	if diff := cmp.Diff(want, contents(t, s, "b")); diff != "" {
		t.Errorf("contents mismatch (-want +got):\n%s", diff)
	}
	if v, ok := get(t, s, "b", "k2"); ok {
		t.Errorf("Get(deleted k2) = %q, want nil", v)
	}
	if v, ok := get(t, s, "b", "never"); ok {
		t.Errorf("Get(absent key) = %q, want nil", v)
	}
}

func testAbsentBucket(t *testing.T, s store.Store) {
	putAll(t, s, "other", kv{"k", "v"})
	check := func(tx store.Tx) error {
		if v := tx.Get([]byte("nope"), []byte("k")); v != nil {
			t.Errorf("Get in absent bucket = %q, want nil", v)
		}
		for _, reverse := range []bool{false, true} {
			got, err := scan(tx, "nope", "", reverse)
			if err != nil || len(got) != 0 {
				t.Errorf("Scan(absent bucket, reverse=%v) = %v, %v; want nothing, nil", reverse, got, err)
			}
		}
		return nil
	}
	view(t, s, check)
	update(t, s, check)
}

func testEmptyValue(t *testing.T, s store.Store) {
	putAll(t, s, "b", kv{"empty", ""})
	view(t, s, func(tx store.Tx) error {
		if v := tx.Get([]byte("b"), []byte("empty")); v == nil || len(v) != 0 {
			t.Errorf("Get(empty value) = %#v, want non-nil empty slice", v)
		}
		return nil
	})
	if diff := cmp.Diff([]kv{{"empty", ""}}, contents(t, s, "b")); diff != "" {
		t.Errorf("Scan mismatch (-want +got):\n%s", diff)
	}
}

func testInvalidPut(t *testing.T, s store.Store) {
	long := bytes.Repeat([]byte("k"), store.MaxKeySize+1)
	tests := []struct {
		name               string
		bucket, key, value []byte
	}{
		{"empty bucket", []byte{}, []byte("k"), []byte("v")},
		{"nil bucket", nil, []byte("k"), []byte("v")},
		{"long bucket", long, []byte("k"), []byte("v")},
		{"empty key", []byte("b"), []byte{}, []byte("v")},
		{"nil key", []byte("b"), nil, []byte("v")},
		{"long key", []byte("b"), long, []byte("v")},
		{"nil value", []byte("b"), []byte("k"), nil},
	}
	for _, tt := range tests {
		update(t, s, func(tx store.Tx) error {
			if err := tx.Put(tt.bucket, tt.key, tt.value); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("Put(%s) error = %v, want store.ErrInvalid", tt.name, err)
			}
			return nil
		})
	}
	if got := contents(t, s, "b"); len(got) != 0 {
		t.Errorf("invalid Puts wrote %v", got)
	}
	// The largest key is accepted.
	update(t, s, func(tx store.Tx) error {
		return tx.Put([]byte("b"), long[:store.MaxKeySize], []byte("v"))
	})
}

func testBucketsAreSeparate(t *testing.T, s store.Store) {
	putAll(t, s, "a", kv{"k", "in a"})
	putAll(t, s, "ab", kv{"k", "in ab"}, kv{"k2", "x"})
	if diff := cmp.Diff([]kv{{"k", "in a"}}, contents(t, s, "a")); diff != "" {
		t.Errorf("bucket a mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]kv{{"k", "in ab"}, {"k2", "x"}}, contents(t, s, "ab")); diff != "" {
		t.Errorf("bucket ab mismatch (-want +got):\n%s", diff)
	}
}

// testPutCopiesArguments checks that the caller may reuse the slices given to
// Put as soon as it returns.
func testPutCopiesArguments(t *testing.T, s store.Store) {
	update(t, s, func(tx store.Tx) error {
		key, value := []byte("key1"), []byte("value1")
		if err := tx.Put([]byte("b"), key, value); err != nil {
			return err
		}
		copy(key, "key2")
		copy(value, "value2")
		if err := tx.Put([]byte("b"), key, value); err != nil {
			return err
		}
		copy(key, "XXXX")
		copy(value, "XXXXXX")
		if v := tx.Get([]byte("b"), []byte("key1")); string(v) != "value1" {
			t.Errorf("Get(key1) in the Update = %q, want %q", v, "value1")
		}
		return nil
	})
	want := []kv{{"key1", "value1"}, {"key2", "value2"}}
	if diff := cmp.Diff(want, contents(t, s, "b")); diff != "" {
		t.Errorf("contents mismatch (-want +got):\n%s", diff)
	}
}

// testValuesOutliveTx shows the pattern for values used after their
// transaction: copy them inside fn. The copies stay intact while the store
// changes under them.
func testValuesOutliveTx(t *testing.T, s store.Store) {
	putAll(t, s, "b", kv{"k1", "first"}, kv{"k2", "second"})
	var got []byte
	var keys [][]byte
	view(t, s, func(tx store.Tx) error {
		keys = nil // the store may run the callback again
		got = bytes.Clone(tx.Get([]byte("b"), []byte("k1")))
		return tx.Scan([]byte("b"), nil, false, func(k, _ []byte) (bool, error) {
			keys = append(keys, bytes.Clone(k))
			return true, nil
		})
	})
	// Enough writes to make bbolt reuse or remap pages.
	for i := range 50 {
		update(t, s, func(tx store.Tx) error {
			if err := tx.Delete([]byte("b"), []byte("k2")); err != nil {
				return err
			}
			return tx.Put([]byte("b"), []byte("k1"), bytes.Repeat([]byte{byte(i)}, 4096))
		})
	}
	if string(got) != "first" {
		t.Errorf("copied value = %q, want %q", got, "first")
	}
	if diff := cmp.Diff([]string{"k1", "k2"}, toStrings(keys)); diff != "" {
		t.Errorf("copied keys mismatch (-want +got):\n%s", diff)
	}
}

func toStrings(bs [][]byte) []string {
	var out []string
	for _, b := range bs {
		out = append(out, string(b))
	}
	return out
}
