package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chatgw/gateway/store"
)

var _ store.Store = (*DB)(nil)

// Transaction modes: every transaction is SERIALIZABLE; see the package
// documentation for why Views are too.
var (
	readTx  = txMode{begin: sqlBeginRead, readOnly: true}
	writeTx = txMode{begin: sqlBeginWrite}
)

// txMode is how a transaction begins.
type txMode struct {
	begin    string
	readOnly bool
}

// DB is a store.Store on a PostgreSQL database. Create it with Open.
type DB struct {
	pool         *pgxpool.Pool
	maxAttempts  int
	limitTimeout time.Duration
	// retried, when set (by tests), is called before each retry with the
	// attempt that failed and its failure.
	retried func(attempt int, err error)
	// observe, when set, hears of every attempt run again (ObserveRetries).
	observe atomic.Pointer[func(op, reason string)]

	mu     sync.Mutex // guards closed and the calls to active.Add
	closed bool
	active sync.WaitGroup // running View, Update and Batch calls, awaited by Close
}

// Open connects to the PostgreSQL database of url (postgres://... or
// postgresql://..., with pgx's parameters, such as pool_max_conns), applies
// the schema migrations it lacks and returns the store. It fails when the
// database cannot be reached, refuses the login, or holds a schema newer than
// this build knows. The error never holds the URL's password.
func Open(ctx context.Context, url string, opts ...Option) (*DB, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("pgstore.Open: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(url) // its errors mask the password
	if err != nil {
		return nil, fmt.Errorf("pgstore.Open: %w", err)
	}
	if o.tracer != nil {
		cfg.ConnConfig.Tracer = o.tracer
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore.Open: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore.Open: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore.Open: schema migration: %w", err)
	}
	return &DB{pool: pool, maxAttempts: o.maxAttempts, limitTimeout: o.limitTimeout}, nil
}

// View runs fn in a read-only SERIALIZABLE transaction. fn may run more than
// once (see the package documentation on retries).
func (d *DB) View(ctx context.Context, fn func(store.Tx) error) error {
	return d.run(ctx, "View", readTx, fn)
}

// Update runs fn in a read-write SERIALIZABLE transaction and commits it. fn
// may run more than once (see the package documentation on retries).
func (d *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	return d.run(ctx, "Update", writeTx, fn)
}

// Batch is Update: PostgreSQL already shares one WAL flush among the commits
// that come in together (group commit), so there is nothing to group here.
func (d *DB) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return d.run(ctx, "Batch", writeTx, fn)
}

// Close waits for running transactions, then closes the pool's connections.
// Later calls of every method return store.ErrClosed.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return store.ErrClosed
	}
	d.closed = true
	d.mu.Unlock()
	d.active.Wait()
	d.pool.Close()
	return nil
}

// run runs fn in transactions of mode txo until one commits, fn fails, or the
// failure is not worth another attempt. It returns fn's error unchanged and
// wraps the others.
func (d *DB) run(ctx context.Context, op string, mode txMode, fn func(store.Tx) error) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.active.Done()
	if err := ctx.Err(); err != nil {
		return err
	}
	spec := new(speculation)
	for attempt := 1; ; attempt++ {
		r := d.attempt(ctx, mode, fn, spec)
		switch {
		case r.rerun != "":
			// Not a failure: a View committed with its Prefetch read more
			// than it, or an Update's assumption did not hold. It runs
			// again at once, which speculation bounds.
			d.observed(op, r.rerun)
			attempt--
			continue
		case r.fnErr != nil:
			return r.fnErr
		case r.err == nil:
			return nil
		}
		err := r.err
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		if !r.retry || ctx.Err() != nil || attempt == d.maxAttempts {
			if attempt > 1 {
				return fmt.Errorf("pgstore.%s: attempt %d of %d: %w", op, attempt, d.maxAttempts, err)
			}
			return fmt.Errorf("pgstore.%s: %w", op, err)
		}
		if d.retried != nil {
			d.retried(attempt, err)
		}
		d.observed(op, retryReason(err))
		t := time.NewTimer(backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("pgstore.%s: %w (waiting to retry after: %w)", op, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// Why a transaction ran again, as ObserveRetries reports it.
const (
	// RetrySerialization: PostgreSQL aborted the transaction to keep
	// transactions serializable (SQLSTATE 40001).
	RetrySerialization = "serialization"
	// RetryDeadlock: PostgreSQL broke a deadlock by aborting it (40P01).
	RetryDeadlock = "deadlock"
	// RetryConnection: the connection failed before the COMMIT, or the
	// server went away, or could not be reached.
	RetryConnection = "connection"
	// RetryReadAhead: a View committed with its Prefetch read beyond it
	// (no failure: see store.Prefetcher).
	RetryReadAhead = "read_ahead"
	// RetryAssumption: a value an Update assumed had changed (no failure:
	// see store.Assumer).
	RetryAssumption = "assumption"
)

// ObserveRetries makes f hear of every attempt of a transaction run again,
// before it runs: op is "View", "Update" or "Batch", reason one of the
// Retry constants. f is called on the caller's goroutine, so it must be
// quick; it is how the gateway's metrics count retries, which callers
// otherwise see only as latency. A later call replaces f; nil stops the
// calls.
func (d *DB) ObserveRetries(f func(op, reason string)) {
	if f == nil {
		d.observe.Store(nil)
		return
	}
	d.observe.Store(&f)
}

// observed tells ObserveRetries' f, if any, of a retry.
func (d *DB) observed(op, reason string) {
	if f := d.observe.Load(); f != nil {
		(*f)(op, reason)
	}
}

// retryReason is the Retry constant of err, a failure worth another attempt.
func retryReason(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case codeSerializationFailure:
			return RetrySerialization
		case codeDeadlockDetected:
			return RetryDeadlock
		}
	}
	return RetryConnection
}

// outcome is what one attempt at a transaction came to.
type outcome struct {
	fnErr error  // fn's own error: the transaction was rolled back
	err   error  // the store's failure: nil when the transaction committed
	retry bool   // err left nothing behind and is worth another attempt
	rerun string // why fn runs again at once, learning from this attempt: RetryReadAhead or RetryAssumption
}

// attempt runs fn in one transaction on a connection of the pool (BEGIN
// with fn's first statement, COMMIT with its last writes; ROLLBACK when fn
// fails) and tells what came of it. A panic in fn leaves the connection in
// its transaction, and the pool closes such a connection on release.
func (d *DB) attempt(ctx context.Context, mode txMode, fn func(store.Tx) error, spec *speculation) outcome {
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		// No connection: nothing ran.
		return outcome{err: fmt.Errorf("begin: %w", err), retry: transient(err)}
	}
	defer c.Release()
	t := &tx{ctx: ctx, conn: c.Conn(), begin: mode.begin, readOnly: mode.readOnly, spec: spec}
	fnErr := t.run(fn)
	switch {
	case t.early && errors.Is(t.err, errMissed):
		// The View committed with its Prefetch, and fn read beyond it.
		return outcome{err: t.err, rerun: RetryReadAhead}
	case assumptionFailed(t.err):
		t.rollback()
		spec.noAssume = true
		return outcome{err: t.err, rerun: RetryAssumption}
	case t.err != nil:
		// A statement failed, so the transaction is lost, whatever fn made
		// of it (a failed Get looked like an absent key). Nothing was
		// committed: a lost connection is worth another attempt too.
		t.rollback()
		return outcome{err: t.err, retry: transient(t.err) || t.connLost}
	case fnErr != nil:
		t.rollback()
		return outcome{fnErr: fnErr}
	}
	committed, err := t.commit()
	if committed {
		return outcome{}
	}
	t.rollback()
	var pgErr *pgconn.PgError
	switch {
	case assumptionFailed(err):
		// Its writes went with the check, which refused them all.
		spec.noAssume = true
		return outcome{err: err, rerun: RetryAssumption}
	case errors.As(err, &pgErr) || errors.Is(err, pgx.ErrTxCommitRollback):
		// PostgreSQL refused a write or the COMMIT: the transaction was
		// rolled back, and a serialization failure, a deadlock or the
		// server going away are worth another attempt.
		return outcome{err: fmt.Errorf("commit: %w", err), retry: transient(err)}
	case pgconn.SafeToRetry(err):
		// The batch was never sent.
		return outcome{err: fmt.Errorf("commit: %w", err), retry: true}
	default:
		// The COMMIT was sent and no answer came: it may have been applied
		// or not. Trying again could apply fn twice.
		return outcome{err: fmt.Errorf("commit, outcome unknown (all of the transaction's writes were applied or none): %w", err)}
	}
}

// run calls fn with t, and ends t for good when fn returns: a Tx kept past
// fn must not reach the connection, which goes back to the pool.
func (t *tx) run(fn func(store.Tx) error) error {
	defer t.end()
	return fn(t)
}

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

// backoff is the wait before attempt+1: 10ms doubling up to 500ms, less up
// to half of it at random, so that transactions that failed together do not
// collide again.
func backoff(attempt int) time.Duration {
	d := min(10*time.Millisecond<<min(attempt-1, 10), 500*time.Millisecond)
	return d/2 + rand.N(d/2+1)
}
