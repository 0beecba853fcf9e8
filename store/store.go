// Package store declares Store, the gateway's persistence interface: ordered
// key-value buckets with all-or-nothing transactions. Every family (conversations,
// memory, prompts, tenant config, images, sessions, RAG, runs) keeps its data in
// buckets of its own through this one interface, so one bbolt file holds
// everything and a write that touches several records is never half-done.
//
// The default implementation is store/boltstore (one bbolt file);
// store/pgstore keeps the buckets in PostgreSQL, for several gateways sharing
// one database; store/memstore serves tests; store/storetest is the
// conformance suite all three pass.
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
// then returns unchanged, so callers can return their own sentinel errors from fn;
// unless a read or write of the transaction failed, see below).
// Any other failure is returned wrapped; callers report it as storage_error.
//
// # fn may run more than once
//
// The fn of View and Update, not only Batch's, may be called more than once:
// a store on a database server runs a transaction again from the start when
// the database aborted it to keep transactions serializable (a serialization
// failure, a deadlock) or its connection was lost before the commit
// (store/pgstore does both), runs a View again when it read beyond what
// the Prefetch it began with read (see Prefetcher), and an Update when a
// value it assumed had changed (see Assumer). Only the last run's
// transaction counts. So fn
// must have no effects outside tx that a second run would repeat, and what
// it hands out through variables it captures must be assigned afresh by each
// run (reset slices, counters and flags at its start; never append to or
// change in place what the caller gave it) so that the caller sees the last
// run's results alone.
//
// # A failed read fails the transaction
//
// Tx.Get has no error to return, and a read can fail on a database server.
// When a read or write of a transaction fails (Get, Scan, Put or Delete, for
// another reason than the arguments or ErrReadOnly), the transaction is lost:
// Get returns nil and Scan, Put and Delete that failure from then on, nothing
// is committed, and the method returns the failure (wrapped), or runs fn
// again, whatever fn returned, even nil or its own error. A failed read thus
// never passes for an absent key: neither the writes nor the answer that fn
// based on the nil it got are kept. (bbolt and memstore reads do not fail.)
type Store interface {
	// View runs fn in a read-only transaction. fn may run more than once.
	View(ctx context.Context, fn func(Tx) error) error
	// Update runs fn in a read-write transaction and commits it durably before
	// returning nil. fn may run more than once (see Store).
	Update(ctx context.Context, fn func(Tx) error) error
	// Batch is Update for writes that may be grouped with concurrent Batch calls
	// into one commit (group commit: one fsync for many requests). It returns only
	// after the commit that holds fn's writes is durable. fn may be called more
	// than once (for the reasons of Store, and when another fn of its group
	// fails), so it must be idempotent and have no side effects outside tx.
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
	// empty value is returned as a non-nil empty slice). It also returns nil
	// when the read fails, and the transaction then fails (see Store).
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

// Prefetcher is implemented by a Tx whose reads are round trips to a server
// (store/pgstore): Prefetch sends the reads at once, in one round trip, so
// that the Gets and Scans of them that follow are answered from memory.
// A transaction that knows what it will read (a /c1 turn reads the tenant's
// config, the conversation and the injected prompts, each family in turn)
// then pays one round trip instead of one per read.
//
// Prefetch is a hint and changes no answer: a read that was not prefetched
// reads as usual, a Get or forward Scan of what was prefetched returns what
// it would have returned without it, and a Put or Delete after Prefetch
// drops what was read ahead (later reads see the write). A failed Prefetch
// fails the transaction, as a failed Get does (see Store). The Tx may keep
// the reads' slices until it ends: the caller must not change them. Callers
// test for the interface (tx.(store.Prefetcher)) so that building the reads
// costs nothing on a store whose reads are local (bbolt, memstore).
//
// A View that begins with a Prefetch may be committed with it, in the same
// round trip (store/pgstore does so); a read fn makes beyond it then runs fn
// again (see Store), prefetching that read too. A View pays least when its
// first Prefetch names every read it can know of ahead.
type Prefetcher interface {
	Prefetch(reads ...Read)
}

// Read is one read of Prefetcher.Prefetch: the value of Key in Bucket, or,
// when Prefix is set, the first keys of Bucket that start with Key, in
// ascending order (the beginning of a forward Scan of that prefix).
type Read struct {
	Bucket, Key []byte
	Prefix      bool
}

// Assumer is implemented by a Tx whose reads are round trips to a server
// (store/pgstore): Assume(bucket, key, value) says that key held value (nil:
// was absent) when the caller read it in an earlier transaction. A Get of
// key in this transaction then answers value at once, and the transaction
// checks the assumption along with its writes, in the same round trip,
// instead of reading key before them. An Update that reads one record and
// writes what follows from it (a /c1 turn's Append) is then one round trip
// instead of two.
//
// Assume is a hint and changes no answer: when key no longer holds value,
// the transaction is rolled back and fn runs again without the assumption,
// reading key as usual (see Store: fn may run more than once), so only a
// run whose assumptions held, or that made none, counts. It is honoured in
// an Update or Batch before the transaction's first write, and ignored in a
// View or after a write. The Tx may keep the slices until it ends: the
// caller must not change them. Callers test for the interface, as for
// Prefetcher.
type Assumer interface {
	Assume(bucket, key, value []byte)
}
