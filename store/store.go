// Package store declares Store, the gateway's persistence interface: ordered
// key-value buckets with all-or-nothing transactions. Every family (conversations,
// memory, prompts, tenant config, images, sessions, RAG, runs) keeps its data in
// buckets of its own through this one interface, so one bbolt file holds
// everything and a write that touches several records is never half-done.
//
// The default implementation is store/boltstore (one bbolt file); store/memstore
// serves tests; store/storetest is the conformance suite both pass.
package store

import (
	"context"
	"errors"
)

// Errors shared by every implementation; test them with errors.Is.
var (
	// ErrClosed is returned by every method of a Store after Close.
	ErrClosed = errors.New("store: closed")
	// ErrReadOnly is returned by Tx.Put and Tx.Delete inside a View.
	ErrReadOnly = errors.New("store: write in a read-only transaction")
	// ErrInvalid is returned (wrapped, with the reason) by Tx.Put for an empty
	// bucket name or key, a bucket name or key longer than MaxKeySize, or a nil
	// value, and by ReadString and ReadUint64 for a malformed key.
	ErrInvalid = errors.New("store: invalid bucket, key or value")
)

// MaxKeySize is the largest bucket name or key, in bytes, that Tx.Put accepts
// (bbolt's limit, enforced by every implementation so that fakes fail like the
// real thing).
const MaxKeySize = 32768

// Store is a transactional, ordered key-value store.
//
// All methods are safe for concurrent use. Transactions are serializable: a View
// sees a consistent snapshot and an Update's writes become visible all together
// when fn returns nil, or not at all when fn returns an error (which the method
// then returns unchanged, so callers can return their own sentinel errors from fn).
// Any other failure is returned wrapped; callers report it as storage_error.
type Store interface {
	// View runs fn in a read-only transaction.
	View(ctx context.Context, fn func(Tx) error) error
	// Update runs fn in a read-write transaction and commits it durably before
	// returning nil.
	Update(ctx context.Context, fn func(Tx) error) error
	// Batch is Update for writes that may be grouped with concurrent Batch calls
	// into one commit (group commit: one fsync for many requests). It returns only
	// after the commit that holds fn's writes is durable. fn may be called more
	// than once, so it must be idempotent and have no side effects outside tx.
	Batch(ctx context.Context, fn func(Tx) error) error
	// Close releases the store (and bbolt's file lock). Later calls return ErrClosed.
	Close() error
}

// Tx is a transaction over named buckets. Buckets spring into existence on the
// first Put; reading a bucket that was never written finds nothing. Reads see the
// transaction's own earlier writes.
//
// Byte slices handed out by Get and Scan are valid only until the transaction
// ends: copy what must outlive it. Slices passed to Put may be reused after Put
// returns. A Tx must not be used from more than one goroutine, nor after fn returns.
type Tx interface {
	// Get returns the value of key, or nil when the key is absent (a stored
	// empty value is returned as a non-nil empty slice).
	Get(bucket, key []byte) []byte
	// Put sets key to value (value may be empty but not nil). It returns
	// ErrReadOnly in a View and ErrInvalid (wrapped) for an empty or too long
	// bucket name or key, or a nil value.
	Put(bucket, key, value []byte) error
	// Delete removes key; deleting an absent key, or from an absent bucket, is
	// not an error. It returns ErrReadOnly in a View.
	Delete(bucket, key []byte) error
	// Scan calls fn for each key of bucket that starts with prefix, in ascending
	// byte order, or descending when reverse is true. Scanning stops early when fn
	// returns false or an error; the error is returned. fn must not modify the
	// bucket being scanned.
	Scan(bucket, prefix []byte, reverse bool, fn func(key, value []byte) (bool, error)) error
}
