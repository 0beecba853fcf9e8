package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/chatgw/gateway/store"
)

// testAssume checks store.Assumer's promise: an assumption changes no
// answer, whether it holds or not, in what fn reads and in what it writes.
func testAssume(t *testing.T, s store.Store) {
	putAll(t, s, "a", kv{"k", "v1"}, kv{"empty", ""})
	b := []byte("a")
	str := func(v []byte) string { return fmt.Sprintf("%q %t", v, v != nil) }
	tests := []struct {
		name    string
		key     string
		assumed []byte
		before  bool // the key is written before the Assume, which is then ignored
		after   bool // the key is written after the Assume, before the Get
		noWrite bool // fn writes nothing
		want    string
	}{
		{"holds", "k", []byte("v1"), false, false, false, str([]byte("v1"))},
		{"another value", "k", []byte("stale"), false, false, false, str([]byte("v1"))},
		{"absent, but present", "k", nil, false, false, false, str([]byte("v1"))},
		{"present, but absent", "none", []byte("x"), false, false, false, str(nil)},
		{"empty, and empty", "empty", []byte{}, false, false, false, str([]byte{})},
		{"empty, but absent", "none", []byte{}, false, false, false, str(nil)},
		{"absent, but empty", "empty", nil, false, false, false, str([]byte{})},
		{"wrong, and fn writes nothing", "k", []byte("stale"), false, false, true, str([]byte("v1"))},
		{"the key written before", "k", []byte("v1"), true, false, false, str([]byte("new"))},
		{"the key written after", "k", []byte("v1"), false, true, false, str([]byte("new"))},
	}
	for i, tt := range tests {
		out := []byte(fmt.Sprint("out", i))
		var got string
		update(t, s, func(tx store.Tx) error {
			a, ok := tx.(store.Assumer)
			if !ok {
				t.Skip("the store's Tx does not implement store.Assumer")
			}
			if tt.before {
				if err := tx.Put(b, []byte(tt.key), []byte("new")); err != nil {
					return err
				}
			}
			a.Assume(b, []byte(tt.key), tt.assumed)
			if tt.after {
				if err := tx.Put(b, []byte(tt.key), []byte("new")); err != nil {
					return err
				}
			}
			got = str(tx.Get(b, []byte(tt.key)))
			if tt.noWrite {
				return nil
			}
			return tx.Put(b, out, []byte(got))
		})
		if got != tt.want {
			t.Errorf("%s: Get = %s, want %s", tt.name, got, tt.want)
		}
		if stored, _ := get(t, s, "a", string(out)); !tt.noWrite && stored != tt.want {
			t.Errorf("%s: wrote %s, want %s", tt.name, stored, tt.want)
		}
		if tt.before || tt.after { // as it was for the next cases
			putAll(t, s, "a", kv{tt.key, "v1"})
		}
	}

	var got []byte
	err := s.View(context.Background(), func(tx store.Tx) error {
		tx.(store.Assumer).Assume(b, []byte("k"), []byte("stale"))
		got = clone(tx.Get(b, []byte("k")))
		return nil
	})
	if err != nil || string(got) != "v1" {
		t.Errorf("View after an Assume: Get = %q, %v; want %q (ignored in a View)", got, err, "v1")
	}
}
