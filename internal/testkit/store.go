package testkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/chatgw/gateway/store"
)

// ErrCut is the error of a CutStore's writes while it is cut off.
var ErrCut = errors.New("testkit: the store is cut off")

// CutStore is a store.Store a test cuts off from the code that writes to
// it, as a full disk or a process that died is: while Cut is set, Update
// and Batch fail with ErrCut without running their callback; reads go on.
type CutStore struct {
	store.Store
	Cut atomic.Bool
}

// Update runs Store.Update, or fails with ErrCut while the store is cut off.
func (c *CutStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	if c.Cut.Load() {
		return ErrCut
	}
	return c.Store.Update(ctx, fn)
}

// Batch runs Store.Batch, or fails with ErrCut while the store is cut off.
func (c *CutStore) Batch(ctx context.Context, fn func(store.Tx) error) error {
	if c.Cut.Load() {
		return ErrCut
	}
	return c.Store.Batch(ctx, fn)
}

// ReadAhead is a store.Store whose transactions implement store.Prefetcher
// and store.Assumer over a store whose own do not (memstore, bbolt), and
// which records the reads that would cost a round trip of their own on a
// store that reads ahead and assumes: in a View that called Prefetch, the
// reads it did not name; in an Update or Batch, the reads neither a
// Prefetch nor an Assume covered. A test of code that prefetches and
// assumes checks with Missed that none of its reads is such a round trip.
type ReadAhead struct {
	store.Store
	mu     sync.Mutex
	missed []string
}

// Missed returns the reads that a Prefetch or Assume of their transaction
// did not cover (and that no write came between), as "get|scan bucket key"
// in the order they were made; and forgets them.
func (r *ReadAhead) Missed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.missed
	r.missed = nil
	return m
}

// View runs Store.View with a transaction that reads ahead.
func (r *ReadAhead) View(ctx context.Context, fn func(store.Tx) error) error {
	return r.Store.View(ctx, func(tx store.Tx) error { return fn(&aheadTx{Tx: tx, r: r}) })
}

// Update runs Store.Update with a transaction that reads ahead.
func (r *ReadAhead) Update(ctx context.Context, fn func(store.Tx) error) error {
	return r.Store.Update(ctx, func(tx store.Tx) error { return fn(&aheadTx{Tx: tx, r: r, write: true}) })
}

// Batch runs Store.Batch with a transaction that reads ahead.
func (r *ReadAhead) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return r.Store.Batch(ctx, func(tx store.Tx) error { return fn(&aheadTx{Tx: tx, r: r, write: true}) })
}

// aheadTx is a Tx of ReadAhead: reads stay the wrapped Tx's; Prefetch and
// Assume only note what they were given, until a write, as pgstore keeps
// what it read or assumed (Assume is ignored in a View).
type aheadTx struct {
	store.Tx
	r          *ReadAhead
	write      bool // an Update or Batch
	prefetched bool
	ahead      []store.Read
}

func (t *aheadTx) Prefetch(reads ...store.Read) {
	t.prefetched = true
	t.ahead = append(t.ahead, reads...)
}

func (t *aheadTx) Assume(bucket, key, _ []byte) {
	if t.write {
		t.ahead = append(t.ahead, store.Read{Bucket: bucket, Key: key})
	}
}

func (t *aheadTx) Get(bucket, key []byte) []byte {
	t.check("get", bucket, key, false)
	return t.Tx.Get(bucket, key)
}

func (t *aheadTx) Scan(bucket, prefix []byte, reverse bool, fn func(key, value []byte) (bool, error)) error {
	t.check("scan", bucket, prefix, !reverse)
	return t.Tx.Scan(bucket, prefix, reverse, fn)
}

func (t *aheadTx) Put(bucket, key, value []byte) error {
	t.ahead = nil
	return t.Tx.Put(bucket, key, value)
}

func (t *aheadTx) Delete(bucket, key []byte) error {
	t.ahead = nil
	return t.Tx.Delete(bucket, key)
}

// check records a read that no Prefetch or Assume of its transaction
// covered, in a View that prefetched or in any Update or Batch; a Prefix
// read answers forward Scans of that prefix only.
func (t *aheadTx) check(op string, bucket, key []byte, forward bool) {
	if !t.prefetched && !t.write {
		return
	}
	prefix := op == "scan"
	for _, a := range t.ahead {
		if a.Prefix == prefix && (forward || !prefix) && bytes.Equal(a.Bucket, bucket) && bytes.Equal(a.Key, key) {
			return
		}
	}
	t.r.mu.Lock()
	t.r.missed = append(t.r.missed, fmt.Sprintf("%s %s %q", op, bucket, key))
	t.r.mu.Unlock()
}
