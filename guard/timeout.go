package guard

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultTimeout bounds one classification (GATEWAY_GUARD_TIMEOUT's default).
const DefaultTimeout = 2 * time.Second

// WithTimeout returns a Classifier that gives each Classify of c at most d
// (d <= 0 means DefaultTimeout), through the context: c must honour ctx, as
// the classifiers of this package do. When the time is up, the error wraps
// context.DeadlineExceeded (and, from the HTTP classifiers, ErrUnavailable).
// Put it inside Cached, so that a cached verdict is not held to a deadline,
// and around the Chain, so that one deadline covers all its members.
func WithTimeout(c Classifier, d time.Duration) Classifier {
	if d <= 0 {
		d = DefaultTimeout
	}
	return &timeout{c: c, d: d, cause: fmt.Errorf("no answer within %v: %w", d, context.DeadlineExceeded)}
}

type timeout struct {
	c     Classifier
	d     time.Duration
	cause error // of the deadline; wraps context.DeadlineExceeded
}

func (t *timeout) Classify(ctx context.Context, in Input) (Verdict, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, t.d, t.cause)
	defer cancel()
	v, err := t.c.Classify(ctx, in)
	// net/http reports the cause; a classifier that returns ctx.Err() only
	// context.DeadlineExceeded: then say which deadline it was.
	if err != nil && errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, t.cause) && context.Cause(ctx) == t.cause {
		err = fmt.Errorf("guard: %w: %w", t.cause, err)
	}
	return v, err
}
