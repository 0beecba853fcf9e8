// Package memstore is an in-memory store.Store for tests.
//
// It has the semantics of store/boltstore (it passes the same conformance suite,
// store/storetest) without a file: transactions are all-or-nothing, a View reads
// a consistent snapshot and does not block writers, one Update or Batch runs at a
// time, and Scan walks keys in byte order.
//
// It is stricter than bbolt where that finds bugs early. Every slice that Get
// and Scan hand out is a private copy that is overwritten with 0xEE bytes when
// the transaction ends, so code that keeps a value without copying it reads
// garbage at once instead of failing only when bbolt happens to remap its file.
// View, Update and Batch run fn twice (the contract allows it: a database
// store retries a transaction that conflicted), the first run discarded, so
// that a fn with effects outside its transaction, or one that does not reset
// what it accumulates, misbehaves in tests too. A Tx used after its
// transaction ended panics.
//
// FailNext and FailWith make transactions fail, to test the storage_error paths
// of callers.
package memstore

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/chatgw/gateway/store"
)

var _ store.Store = (*Store)(nil)

// data maps a bucket name to the bucket's keys and values. A published data map,
// its buckets and its values are never modified again (writers copy what they
// change), so a View may read the map it started with without holding a lock.
type data map[string]map[string][]byte

// Store is an in-memory store.Store. Create it with New; the zero value is not
// usable.
type Store struct {
	writeMu sync.Mutex // held by the one running Update or Batch, and by Close

	mu       sync.Mutex // guards the fields below
	data     data
	closed   bool
	failNext []error
	failWith func(op string) error
}

// New returns an empty Store.
func New() *Store {
	return &Store{data: data{}}
}

// View runs fn in a read-only transaction over a snapshot of the store.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	snap, err := s.begin(ctx, "View")
	if err != nil {
		return err
	}
	rehearsal := &tx{base: snap}
	err = fn(rehearsal)
	rehearsal.end()
	if err != nil {
		return err
	}
	t := &tx{base: snap}
	defer t.end()
	return fn(t)
}

// Update runs fn in a read-write transaction. Its writes are buffered in the
// transaction and published all together when fn returns nil.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	return s.update(ctx, "Update", fn)
}

// Batch is Update. fn runs twice in both: first in a transaction that is
// discarded, then in the one that commits, as bbolt's Batch does when another
// fn of the group fails and a database store does when it retries. A fn that
// is not idempotent (with effects outside tx) thus shows in tests. When the
// first run fails, its error is returned and fn does not run again. (An
// in-memory commit costs nothing, so there is nothing to group.)
func (s *Store) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return s.update(ctx, "Batch", fn)
}

// Close releases the store's data, after waiting for a running Update or Batch.
// Later calls of every method return store.ErrClosed.
func (s *Store) Close() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	s.closed = true
	s.data = nil
	return nil
}

func (s *Store) update(ctx context.Context, op string, fn func(store.Tx) error) error {
	// Check before waiting for the writer lock, so that a closed or failing
	// store answers at once.
	if _, err := s.begin(ctx, op); err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	base, closed := s.data, s.closed
	s.mu.Unlock()
	if closed {
		return store.ErrClosed
	}

	if err := rehearse(base, fn); err != nil {
		return err
	}
	t := &tx{base: base, writable: true}
	defer t.end()
	if err := fn(t); err != nil {
		return err
	}
	if len(t.dirty) == 0 {
		return nil
	}
	next := maps.Clone(base)
	maps.Copy(next, t.dirty)
	s.mu.Lock()
	s.data = next
	s.mu.Unlock()
	return nil
}

// rehearse runs fn in a writable transaction over base and discards it.
func rehearse(base data, fn func(store.Tx) error) error {
	t := &tx{base: base, writable: true}
	defer t.end()
	return fn(t)
}

// begin checks the store's state and ctx before a transaction, consumes an
// injected failure, and returns the current data.
func (s *Store) begin(ctx context.Context, op string) (data, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.injected(op); err != nil {
		return nil, fmt.Errorf("memstore.%s: %w", op, err)
	}
	return s.data, nil
}
