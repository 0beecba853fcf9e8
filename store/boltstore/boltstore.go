package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/chatgw/gateway/store"
)

var _ store.Store = (*DB)(nil)

// DB is a store.Store over one bbolt file. Create it with Open.
type DB struct {
	bolt  *bolt.DB
	path  string
	batch *committer

	mu     sync.Mutex // guards closed and the calls to active.Add
	closed bool
	active sync.WaitGroup // running View, Update and Batch calls, awaited by Close
}

// Open opens the bbolt file at path, creating it (mode 0600) and its directory
// (mode 0700) if needed. It fails if another DB holds the file's lock for longer
// than the lock timeout (WithLockTimeout).
func Open(path string, opts ...Option) (*DB, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("boltstore.Open: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("boltstore.Open: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.lockTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("boltstore.Open: %s is locked by another process or DB (waited %v): %w", path, o.lockTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore.Open %s: %w", path, err)
	}
	return &DB{bolt: db, path: path, batch: newCommitter(db, o.maxBatchSize)}, nil
}

// Path returns the path of the file, as given to Open.
func (d *DB) Path() string { return d.path }

// View runs fn in a read-only transaction (bbolt's DB.View).
func (d *DB) View(ctx context.Context, fn func(store.Tx) error) error {
	return d.run(ctx, "View", d.bolt.View, fn)
}

// Update runs fn in a read-write transaction and commits it (bbolt's DB.Update).
func (d *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	return d.run(ctx, "Update", d.bolt.Update, fn)
}

// Batch runs fn in a read-write transaction that it may share with concurrent
// Batch calls; see the package documentation on group commit. fn may run more
// than once, and on another goroutine than the caller's.
func (d *DB) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return d.run(ctx, "Batch", d.batch.submit, fn)
}

// ObserveCommits makes f hear of every group commit of Batch: it is called
// with the number of Batch calls the commit held, after the commit, on the
// goroutine that commits (so it must be quick), for the gateway's metrics. A
// later call replaces f; nil stops the calls.
func (d *DB) ObserveCommits(f func(calls int)) {
	if f == nil {
		d.batch.observe.Store(nil)
		return
	}
	d.batch.observe.Store(&f)
}

// Close waits for running transactions, then closes the file and releases its
// lock. Later calls of every method return store.ErrClosed.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return store.ErrClosed
	}
	d.closed = true
	d.mu.Unlock()

	d.active.Wait()
	d.batch.close()
	if err := d.bolt.Close(); err != nil {
		return fmt.Errorf("boltstore.Close: %w", err)
	}
	return nil
}

// run runs fn through one of bbolt's transaction methods. It returns fn's error
// unchanged and wraps bbolt's.
func (d *DB) run(ctx context.Context, op string, boltTx func(func(*bolt.Tx) error) error, fn func(store.Tx) error) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.active.Done()
	if err := ctx.Err(); err != nil {
		return err
	}

	// fn's error travels through bbolt in a *fnError, so that it can be told
	// from bbolt's own errors (even when a Batch re-runs fn alone).
	err := boltTx(func(btx *bolt.Tx) error {
		if err := fn(&tx{btx: btx}); err != nil {
			return &fnError{err}
		}
		return nil
	})
	fe, isFnErr := err.(*fnError)
	switch {
	case err == nil:
		return nil
	case isFnErr:
		return fe.err
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return store.ErrClosed
	default:
		return fmt.Errorf("boltstore.%s: %w", op, err)
	}
}

// fnError carries an error returned by a transaction's fn through bbolt.
type fnError struct{ err error }

func (e *fnError) Error() string { return e.err.Error() }

// enter registers a running call, or returns store.ErrClosed.
func (d *DB) enter() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return store.ErrClosed
	}
	d.active.Add(1)
	return nil
}
