package pgstore

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Defaults of the options; see the package documentation for the reasoning.
const (
	// DefaultMaxAttempts is how many times a transaction is tried at most.
	DefaultMaxAttempts = 20
	// DefaultConnectTimeout bounds one connection attempt when the URL sets no
	// connect_timeout.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultLimiterTimeout bounds one rate-limit statement, waiting for a
	// connection included: a healthy database answers in well under a
	// millisecond, and a request must not hang on one that does not.
	DefaultLimiterTimeout = 2 * time.Second
)

// An Option configures Open.
type Option func(*options)

type options struct {
	maxAttempts  int
	limitTimeout time.Duration
	tracer       pgx.QueryTracer // set by tests (export_test.go) to count round trips
}

func defaultOptions() options {
	return options{maxAttempts: DefaultMaxAttempts, limitTimeout: DefaultLimiterTimeout}
}

// WithMaxAttempts sets how many times View, Update and Batch try a transaction
// that fails for a reason worth retrying (a serialization failure, a deadlock,
// a connection lost before the commit, a database that cannot be reached)
// before they return the failure. It must be at least 1 (no retry).
// Default DefaultMaxAttempts (20: 3.6 to 7.1 seconds of waits in all, enough
// to ride out a restart of the database, and to let a transaction through
// that meets a serialization failure time after time under heavy
// contention: see the package documentation).
func WithMaxAttempts(n int) Option {
	return func(o *options) { o.maxAttempts = n }
}

// WithLimiterTimeout sets how long the rate limiter (RateLimiter) waits for
// the database before it reports a failure. It must be positive. Default
// DefaultLimiterTimeout.
func WithLimiterTimeout(d time.Duration) Option {
	return func(o *options) { o.limitTimeout = d }
}

func (o options) validate() error {
	if o.maxAttempts < 1 {
		return fmt.Errorf("max attempts %d: must be at least 1", o.maxAttempts)
	}
	if o.limitTimeout <= 0 {
		return fmt.Errorf("limiter time-out %v: must be positive", o.limitTimeout)
	}
	return nil
}
