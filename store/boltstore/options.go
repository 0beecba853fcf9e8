package boltstore

import (
	"fmt"
	"time"
)

// Defaults of the options; see the package documentation for the reasoning.
const (
	// DefaultLockTimeout is how long Open waits for the file lock.
	DefaultLockTimeout = time.Second
	// DefaultMaxBatchDelay is how long a Batch waits for others to join it.
	DefaultMaxBatchDelay = 2 * time.Millisecond
	// DefaultMaxBatchSize is how many Batch calls one commit takes at most.
	DefaultMaxBatchSize = 256
)

// An Option configures Open.
type Option func(*options)

type options struct {
	lockTimeout   time.Duration
	maxBatchDelay time.Duration
	maxBatchSize  int
}

func defaultOptions() options {
	return options{
		lockTimeout:   DefaultLockTimeout,
		maxBatchDelay: DefaultMaxBatchDelay,
		maxBatchSize:  DefaultMaxBatchSize,
	}
}

// WithLockTimeout sets how long Open waits for the exclusive lock on the file
// when another DB (in this process or another) holds it. It must be positive.
// Default DefaultLockTimeout (1s).
func WithLockTimeout(d time.Duration) Option {
	return func(o *options) { o.lockTimeout = d }
}

// WithMaxBatchDelay sets how long the first Batch call of a group waits for
// others before committing. Zero closes each group almost at once, so only calls
// that arrive together share a commit. It must not be negative. Default
// DefaultMaxBatchDelay (2ms).
func WithMaxBatchDelay(d time.Duration) Option {
	return func(o *options) { o.maxBatchDelay = d }
}

// WithMaxBatchSize sets how many Batch calls one commit holds at most; a full
// group commits at once without waiting for the delay. It must be positive.
// Default DefaultMaxBatchSize (256).
func WithMaxBatchSize(n int) Option {
	return func(o *options) { o.maxBatchSize = n }
}

func (o options) validate() error {
	switch {
	case o.lockTimeout <= 0:
		return fmt.Errorf("lock timeout %v: must be positive", o.lockTimeout)
	case o.maxBatchDelay < 0:
		return fmt.Errorf("max batch delay %v: must not be negative", o.maxBatchDelay)
	case o.maxBatchSize <= 0:
		return fmt.Errorf("max batch size %d: must be positive", o.maxBatchSize)
	}
	return nil
}
