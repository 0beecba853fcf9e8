package pgstore

import (
	"fmt"
	"time"
)

// Defaults of the options; see the package documentation for the reasoning.
const (
	// DefaultMaxAttempts is how many times a transaction is tried at most.
	DefaultMaxAttempts = 10
	// DefaultConnectTimeout bounds one connection attempt when the URL sets no
	// connect_timeout.
	DefaultConnectTimeout = 5 * time.Second
)

// An Option configures Open.
type Option func(*options)

type options struct {
	maxAttempts int
}

func defaultOptions() options {
	return options{maxAttempts: DefaultMaxAttempts}
}

// WithMaxAttempts sets how many times View, Update and Batch try a transaction
// that fails for a reason worth retrying (a serialization failure, a deadlock,
// a connection lost before the commit, a database that cannot be reached)
// before they return the failure. It must be at least 1 (no retry).
// Default DefaultMaxAttempts (10: about 3 seconds of waits in all, enough to
// ride out a restart of the database).
func WithMaxAttempts(n int) Option {
	return func(o *options) { o.maxAttempts = n }
}

func (o options) validate() error {
	if o.maxAttempts < 1 {
		return fmt.Errorf("max attempts %d: must be at least 1", o.maxAttempts)
	}
	return nil
}
