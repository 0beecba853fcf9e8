package storetest

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/store"
)

// prefetchKeys are scanKeys, an empty value's key and enough keys under one
// prefix ("m") that a Scan of it needs several pages of any implementation
// that reads ahead less than all of them.
func prefetchKeys() []string {
	keys := append([]string{}, scanKeys...)
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("m%03d", i))
	}
	return keys
}

// prefetchReads reads ahead present, absent and empty keys, prefixes with
// one, many, no keys and no end, and a bucket never written.
var prefetchReads = []store.Read{
	{Bucket: []byte("p"), Key: []byte("abc")},
	{Bucket: []byte("p"), Key: []byte("nothing")},
	{Bucket: []byte("p"), Key: []byte("empty")},
	{Bucket: []byte("p"), Key: []byte("a"), Prefix: true},
	{Bucket: []byte("p"), Key: []byte("m"), Prefix: true},
	{Bucket: []byte("p"), Key: []byte("zz"), Prefix: true},
	{Bucket: []byte("p"), Key: []byte("\xff\xff"), Prefix: true},
	{Bucket: []byte("never"), Key: []byte("a")},
	{Bucket: []byte("never"), Key: []byte("a"), Prefix: true},
}

// readAll is what tx answers for every read of prefetchReads, and for a
// reverse Scan of each prefix, in one string per read.
func readAll(tx store.Tx) ([]string, error) {
	var got []string
	for _, r := range prefetchReads {
		if !r.Prefix {
			v := tx.Get(r.Bucket, r.Key)
			got = append(got, fmt.Sprintf("get %q %q: %q %t", r.Bucket, r.Key, v, v != nil))
			continue
		}
		for _, reverse := range []bool{false, true} {
			kvs, err := scan(tx, string(r.Bucket), string(r.Key), reverse)
			if err != nil {
				return nil, err
			}
			got = append(got, fmt.Sprintf("scan %q %q %t: %q", r.Bucket, r.Key, reverse, kvs))
		}
	}
	return got, nil
}

// testPrefetch checks store.Prefetcher's promise: reading ahead changes no
// answer, before or after the transaction's own writes.
func testPrefetch(t *testing.T, s store.Store) {
	putShuffled(t, s, "p", prefetchKeys())
	putAll(t, s, "p", kv{"empty", ""})
	var want []string
	view(t, s, func(tx store.Tx) (err error) {
		if _, ok := tx.(store.Prefetcher); !ok {
			t.Skip("the store's Tx does not implement store.Prefetcher")
		}
		want, err = readAll(tx)
		return err
	})
	view(t, s, func(tx store.Tx) error {
		tx.(store.Prefetcher).Prefetch(prefetchReads...)
		for range 2 { // answered from what was read ahead, then again
			got, err := readAll(tx)
			if err != nil {
				return err
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("reads after Prefetch (-without +with):\n%s", diff)
			}
		}
		return nil
	})
}

// testPrefetchAndWrites checks that a transaction's reads see its writes
// made before and after a Prefetch of the same keys, and that an Update that
// begins with a Prefetch commits its writes.
func testPrefetchAndWrites(t *testing.T, s store.Store) {
	putShuffled(t, s, "p", scanKeys)
	update(t, s, func(tx store.Tx) error {
		pf, ok := tx.(store.Prefetcher)
		if !ok {
			t.Skip("the store's Tx does not implement store.Prefetcher")
		}
		pf.Prefetch(store.Read{Bucket: []byte("p"), Key: []byte("abc")})
		return tx.Put([]byte("p"), []byte("first"), tx.Get([]byte("p"), []byte("abc")))
	})
	if got, _ := get(t, s, "p", "first"); got != "vabc" {
		t.Errorf("an Update that began with a Prefetch wrote %q, want %q", got, "vabc")
	}
	update(t, s, func(tx store.Tx) error {
		pf, ok := tx.(store.Prefetcher)
		if !ok {
			t.Skip("the store's Tx does not implement store.Prefetcher")
		}
		if err := tx.Put([]byte("p"), []byte("abc"), []byte("before")); err != nil {
			return err
		}
		pf.Prefetch(store.Read{Bucket: []byte("p"), Key: []byte("abc")}, store.Read{Bucket: []byte("p"), Key: []byte("a"), Prefix: true})
		if got := string(tx.Get([]byte("p"), []byte("abc"))); got != "before" {
			t.Errorf("Get after a Put and Prefetch = %q, want %q", got, "before")
		}
		if err := tx.Put([]byte("p"), []byte("abc"), []byte("after")); err != nil {
			return err
		}
		if got := string(tx.Get([]byte("p"), []byte("abc"))); got != "after" {
			t.Errorf("Get after Prefetch and a Put = %q, want %q", got, "after")
		}
		pf.Prefetch(store.Read{Bucket: []byte("p"), Key: []byte("ab"), Prefix: true})
		if err := tx.Delete([]byte("p"), []byte("ab")); err != nil {
			return err
		}
		got, err := scan(tx, "p", "ab", false)
		if err != nil {
			return err
		}
		if diff := cmp.Diff([]kv{{"abc", "after"}, {"abd", "vabd"}}, got); diff != "" {
			t.Errorf("Scan after Prefetch and writes (-want +got):\n%s", diff)
		}
		return nil
	})
}
