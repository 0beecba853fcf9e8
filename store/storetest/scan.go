package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/store"
)

// scanKeys are chosen around the edges of prefix ranges: 0x00 and 0xff bytes,
// keys that are prefixes of others, a key right past a prefix's range.
var scanKeys = []string{
	"\x00", "\x00\xff", "\x01",
	"a", "a\x00", "a\x00\x00", "a\xff", "a\xff\x00", "a\xff\xff", "a\xff\xff\xff",
	"aa", "ab", "abc", "abd", "ac",
	"b", "b\x00",
	"\xfe\xff", "\xff", "\xff\x00", "\xff\xff", "\xff\xff\x01", "\xff\xff\xff",
}

// putShuffled writes keys (each key's value is "v"+key) in a random order, in
// several transactions.
func putShuffled(t *testing.T, s store.Store, bucket string, keys []string) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 1))
	shuffled := slices.Clone(keys)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for chunk := range slices.Chunk(shuffled, 7) {
		var pairs []kv
		for _, k := range chunk {
			pairs = append(pairs, kv{k, "v" + k})
		}
		putAll(t, s, bucket, pairs...)
	}
}

// wantScan is the reference Scan: filter, sort, maybe reverse.
func wantScan(keys []string, prefix string, reverse bool) []kv {
	var want []kv
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			want = append(want, kv{k, "v" + k})
		}
	}
	slices.SortFunc(want, func(a, b kv) int { return strings.Compare(a.K, b.K) })
	if reverse {
		slices.Reverse(want)
	}
	return want
}

func testScanOrder(t *testing.T, s store.Store) {
	putShuffled(t, s, "b", scanKeys)
	for _, reverse := range []bool{false, true} {
		view(t, s, func(tx store.Tx) error {
			got, err := scan(tx, "b", "", reverse)
			if err != nil {
				return err
			}
			if diff := cmp.Diff(wantScan(scanKeys, "", reverse), got); diff != "" {
				t.Errorf("Scan(reverse=%v) mismatch (-want +got):\n%s", reverse, diff)
			}
			return nil
		})
	}
}

func testScanPrefix(t *testing.T, s store.Store) {
	putShuffled(t, s, "b", scanKeys)
	prefixes := []string{
		"", "\x00", "a", "a\x00", "a\xff", "a\xff\xff", "aa", "ab", "abc", "abcd",
		"a\x01", "b", "b\x00", "c", "\xfe", "\xff", "\xff\xff", "\xff\xff\xff", "\xff\xff\xff\xff",
	}
	for _, prefix := range prefixes {
		for _, reverse := range []bool{false, true} {
			view(t, s, func(tx store.Tx) error {
				got, err := scan(tx, "b", prefix, reverse)
				if err != nil {
					return err
				}
				if diff := cmp.Diff(wantScan(scanKeys, prefix, reverse), got); diff != "" {
					t.Errorf("Scan(prefix %q, reverse=%v) mismatch (-want +got):\n%s", prefix, reverse, diff)
				}
				return nil
			})
		}
	}
}

// testScanManyKeys uses enough keys to span many bbolt pages, under prefixes
// whose ranges end inside and at the end of the bucket.
func testScanManyKeys(t *testing.T, s store.Store) {
	var keys []string
	for _, p := range []string{"p0", "p1", "p\xff"} {
		for i := range 1500 {
			keys = append(keys, string(store.AppendUint64([]byte(p), uint64(i)*7919)))
		}
	}
	putShuffled(t, s, "b", keys)
	for _, prefix := range []string{"", "p0", "p1", "p\xff", "p\xff\x00\x00", "p2"} {
		for _, reverse := range []bool{false, true} {
			view(t, s, func(tx store.Tx) error {
				got, err := scan(tx, "b", prefix, reverse)
				if err != nil {
					return err
				}
				want := wantScan(keys, prefix, reverse)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Scan(prefix %q, reverse=%v): %d keys, want %d; mismatch (-want +got):\n%s", prefix, reverse, len(got), len(want), diff)
				}
				return nil
			})
		}
	}
}

func testScanStopsEarly(t *testing.T, s store.Store) {
	putShuffled(t, s, "b", scanKeys)
	for _, reverse := range []bool{false, true} {
		view(t, s, func(tx store.Tx) error {
			var got []kv
			err := tx.Scan([]byte("b"), []byte("a"), reverse, func(k, v []byte) (bool, error) {
				got = append(got, kv{string(k), string(v)})
				return len(got) < 3, nil
			})
			if err != nil {
				t.Errorf("Scan stopped by false: error %v, want nil", err)
			}
			if diff := cmp.Diff(wantScan(scanKeys, "a", reverse)[:3], got); diff != "" {
				t.Errorf("Scan(reverse=%v) stopped after 3 mismatch (-want +got):\n%s", reverse, diff)
			}

			calls := 0
			fnErr := fmt.Errorf("wrapped: %w", errSentinel)
			err = tx.Scan([]byte("b"), nil, reverse, func(k, v []byte) (bool, error) {
				calls++
				return true, fnErr
			})
			if err != fnErr || calls != 1 {
				t.Errorf("Scan with failing fn = %v after %d calls, want fn's error unchanged after 1", err, calls)
			}
			return nil
		})
	}
}

// testReadsSeeOwnWrites checks Get and Scan inside an Update against the
// writes made earlier in it.
func testReadsSeeOwnWrites(t *testing.T, s store.Store) {
	putAll(t, s, "b", kv{"a", "va"}, kv{"c", "vc"}, kv{"e", "ve"})
	update(t, s, func(tx store.Tx) error {
		b := []byte("b")
		for _, k := range []string{"b", "d", "f"} {
			if err := tx.Put(b, []byte(k), []byte("v"+k)); err != nil {
				return err
			}
		}
		if err := tx.Put(b, []byte("a"), []byte("new")); err != nil {
			return err
		}
		if err := tx.Delete(b, []byte("c")); err != nil {
			return err
		}
		if err := tx.Put([]byte("fresh"), []byte("k"), []byte("v")); err != nil {
			return err
		}

		if v := tx.Get(b, []byte("a")); string(v) != "new" {
			t.Errorf("Get(a) = %q, want %q", v, "new")
		}
		if v := tx.Get(b, []byte("c")); v != nil {
			t.Errorf("Get(deleted c) = %q, want nil", v)
		}
		if v := tx.Get([]byte("fresh"), []byte("k")); string(v) != "v" {
			t.Errorf("Get in new bucket = %q, want %q", v, "v")
		}
		want := []kv{{"a", "new"}, {"b", "vb"}, {"d", "vd"}, {"e", "ve"}, {"f", "vf"}}
		for _, reverse := range []bool{false, true} {
			got, err := scan(tx, "b", "", reverse)
			if err != nil {
				return err
			}
			w := slices.Clone(want)
			if reverse {
				slices.Reverse(w)
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("Scan(reverse=%v) in the Update mismatch (-want +got):\n%s", reverse, diff)
			}
		}
		return nil
	})
}
