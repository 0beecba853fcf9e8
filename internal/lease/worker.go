package lease

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Worker does a piece of background work in rounds, each only while its
// holder holds a Named lease: of several replicas running the same Worker
// over one store, one does the work, and another takes over when the lease
// expires or is released. A round takes or renews the lease, then does the
// work if it holds it. StartWorker runs a round at once and then at every
// interval, in a goroutine of its own, until Stop; Round runs one by hand.
// Its methods are safe for concurrent use.
type Worker struct {
	lease  *Named
	work   func(ctx context.Context)
	failed func(ctx context.Context, err error)

	// held is set once a round held the lease: Stop releases it then, and
	// only then.
	held     atomic.Bool
	cancel   context.CancelFunc
	done     chan struct{} // closed when the goroutine returned
	stopOnce sync.Once
}

// StartWorker returns a Worker that does work while it holds l, and starts
// its goroutine: a round at once, then one every interval, until Stop. When
// every is 0 or negative no goroutine runs: rounds happen only when Round is
// called. work gets the round's context, which Stop cancels; it reports its
// own failures, and a failed round is retried at the next. failed, when not
// nil, is told of a round's failure to take or renew the lease (that round
// does no work), unless the round's context had ended.
func StartWorker(l *Named, every time.Duration, work func(ctx context.Context), failed func(ctx context.Context, err error)) *Worker {
	w := &Worker{lease: l, work: work, failed: failed, cancel: func() {}, done: make(chan struct{})}
	if every <= 0 {
		close(w.done)
		return w
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.run(ctx, every)
	return w
}

// run runs a round at once and then every interval until ctx ends.
func (w *Worker) run(ctx context.Context, every time.Duration) {
	defer close(w.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		w.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Round runs one round, as the goroutine does: it takes or renews the lease
// and, if this Worker holds it, does the work with ctx and returns true. It
// returns false when another holder has the lease, and when taking it failed
// (reported to failed).
func (w *Worker) Round(ctx context.Context) bool {
	held, err := w.lease.Acquire(ctx)
	if err != nil {
		if w.failed != nil && ctx.Err() == nil {
			w.failed(ctx, err)
		}
		return false
	}
	if !held {
		return false
	}
	w.held.Store(true)
	w.work(ctx)
	return true
}

// Held reports whether a round of this Worker has ever held the lease (it
// may have expired since).
func (w *Worker) Held() bool { return w.held.Load() }

// Stop stops the goroutine, cancelling a round under way, and waits for it
// to return. It then releases the lease if a round ever held it, so that
// another holder takes over at its next round rather than after the lease
// expired, and returns Release's error. Stop is safe to call more than once:
// later calls wait for the first to end and return nil.
func (w *Worker) Stop() error {
	var err error
	w.stopOnce.Do(func() {
		w.cancel()
		<-w.done
		if w.held.Load() {
			err = w.lease.Release(context.Background())
		}
	})
	return err
}
