package boltstore

import (
	"fmt"
	"time"
)

// Defaults of the options; see the package documentation for the reasoning.
const (
	// DefaultLockTimeout is how long Open waits for the file lock.
	DefaultLockTimeout = time.Second
	// DefaultMaxBatchSize is how many Batch calls one commit takes at most.
	DefaultMaxBatchSize = 256
)

// An Option configures Open.
type Option func(*options)

type options struct {
	lockTimeout  time.Duration
	maxBatchSize int
}

func defaultOptions() options {
	return options{
		lockTimeout:  DefaultLockTimeout,
		maxBatchSize: DefaultMaxBatchSize,
	}
}

// WithLockTimeout sets how long Open waits for the exclusive lock on the file
// when another DB (in this process or another) holds it. It must be positive.
// Default DefaultLockTimeout (1s).
func WithLockTimeout(d time.Duration) Option {
	return func(o *options) { o.lockTimeout = d }
}

// WithMaxBatchSize sets how many Batch calls one commit holds at most. It must
// be positive.
// Default DefaultMaxBatchSize (256).
func WithMaxBatchSize(n int) Option {
	return func(o *options) { o.maxBatchSize = n }
}

func (o options) validate() error {
	switch {
	case o.lockTimeout <= 0:
		return fmt.Errorf("lock timeout %v: must be positive", o.lockTimeout)
	case o.maxBatchSize <= 0:
		return fmt.Errorf("max batch size %d: must be positive", o.maxBatchSize)
	}
	return nil
}
