package boltstore

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/chatgw/gateway/store"
)

// tx is a store.Tx over a bbolt transaction. Store buckets are top-level bbolt
// buckets; nested buckets are never created.
type tx struct {
	btx *bolt.Tx
}

func (t *tx) Get(bucket, key []byte) []byte {
	b := t.btx.Bucket(bucket)
	if b == nil {
		return nil
	}
	return b.Get(key)
}

func (t *tx) Put(bucket, key, value []byte) error {
	if !t.btx.Writable() {
		return fmt.Errorf("boltstore.Put: %w", store.ErrReadOnly)
	}
	if err := store.CheckPut(bucket, key, value); err != nil {
		return fmt.Errorf("boltstore.Put: %w", err)
	}
	b, err := t.btx.CreateBucketIfNotExists(bucket)
	if err != nil {
		return fmt.Errorf("boltstore.Put: bucket %q: %w", bucket, err)
	}
	// bbolt keeps a reference to value until the commit; the contract lets the
	// caller reuse it at once. (bbolt copies the key itself.)
	if err := b.Put(key, bytes.Clone(value)); err != nil {
		return fmt.Errorf("boltstore.Put: %w", err)
	}
	return nil
}

func (t *tx) Delete(bucket, key []byte) error {
	if !t.btx.Writable() {
		return fmt.Errorf("boltstore.Delete: %w", store.ErrReadOnly)
	}
	b := t.btx.Bucket(bucket)
	if b == nil || len(key) == 0 {
		return nil
	}
	if err := b.Delete(key); err != nil {
		return fmt.Errorf("boltstore.Delete: %w", err)
	}
	return nil
}

func (t *tx) Scan(bucket, prefix []byte, reverse bool, fn func(key, value []byte) (bool, error)) error {
	b := t.btx.Bucket(bucket)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	var k, v []byte
	next := c.Next
	if !reverse {
		k, v = c.Seek(prefix)
	} else {
		next = c.Prev
		k, v = seekLast(c, prefix)
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = next() {
		if v == nil { // a nested bucket: never created by this package
			continue
		}
		more, err := fn(k, v)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// seekLast moves c to the last key that may start with prefix: the key before
// the first one past the prefix's range, or the bucket's last key when that
// range runs to the end (prefix empty or made only of 0xff bytes).
func seekLast(c *bolt.Cursor, prefix []byte) (k, v []byte) {
	end := store.PrefixEnd(prefix)
	if end == nil {
		return c.Last()
	}
	if k, _ := c.Seek(end); k == nil {
		return c.Last()
	}
	return c.Prev()
}
