package memstore

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/chatgw/gateway/store"
)

// poison is the byte that overwrites the slices a transaction handed out, once
// it has ended.
const poison = 0xEE

// tx is a store.Tx over a snapshot. A writable tx copies a bucket into dirty on
// its first write to it; reads look in dirty first, so they see the
// transaction's own writes, and the published data is never modified.
type tx struct {
	base     data
	dirty    data
	writable bool
	done     bool
	handed   [][]byte // copies handed out by Get and Scan, poisoned by end
}

func (t *tx) Get(bucket, key []byte) []byte {
	t.check("Get")
	v, ok := t.bucket(bucket)[string(key)]
	if !ok {
		return nil
	}
	return t.hand(v)
}

func (t *tx) Put(bucket, key, value []byte) error {
	t.check("Put")
	if !t.writable {
		return fmt.Errorf("memstore.Put: %w", store.ErrReadOnly)
	}
	if err := store.CheckPut(bucket, key, value); err != nil {
		return fmt.Errorf("memstore.Put: %w", err)
	}
	t.writableBucket(bucket)[string(key)] = bytes.Clone(value)
	return nil
}

func (t *tx) Delete(bucket, key []byte) error {
	t.check("Delete")
	if !t.writable {
		return fmt.Errorf("memstore.Delete: %w", store.ErrReadOnly)
	}
	if _, ok := t.bucket(bucket)[string(key)]; ok {
		delete(t.writableBucket(bucket), string(key))
	}
	return nil
}

func (t *tx) Scan(bucket, prefix []byte, reverse bool, fn func(key, value []byte) (bool, error)) error {
	t.check("Scan")
	b := t.bucket(bucket)
	var keys []string
	for k := range b {
		if strings.HasPrefix(k, string(prefix)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if reverse {
		slices.Reverse(keys)
	}
	for _, k := range keys {
		more, err := fn(t.hand([]byte(k)), t.hand(b[k]))
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// bucket returns the bucket as this transaction sees it; nil (which reads as
// empty) when it does not exist.
func (t *tx) bucket(name []byte) map[string][]byte {
	if b, ok := t.dirty[string(name)]; ok {
		return b
	}
	return t.base[string(name)]
}

// writableBucket returns this transaction's private copy of the bucket, making
// it on first use.
func (t *tx) writableBucket(name []byte) map[string][]byte {
	if b, ok := t.dirty[string(name)]; ok {
		return b
	}
	b := maps.Clone(t.base[string(name)])
	if b == nil {
		b = map[string][]byte{}
	}
	if t.dirty == nil {
		t.dirty = data{}
	}
	t.dirty[string(name)] = b
	return b
}

// hand returns a copy of v that end will poison. A stored empty value stays a
// non-nil empty slice.
func (t *tx) hand(v []byte) []byte {
	c := bytes.Clone(v)
	if c == nil {
		c = []byte{}
	}
	t.handed = append(t.handed, c)
	return c
}

// end marks the transaction over and poisons every slice it handed out.
func (t *tx) end() {
	t.done = true
	for _, b := range t.handed {
		for i := range b {
			b[i] = poison
		}
	}
	t.handed = nil
}

func (t *tx) check(method string) {
	if t.done {
		panic("memstore: Tx." + method + " called after its transaction ended")
	}
}
