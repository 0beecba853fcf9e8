package boltstore

import (
	"errors"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// committer is the group commit of Batch: one goroutine commits, in one
// transaction, every Batch call that arrived while the previous commit ran.
// A lone call commits at once (no timer), and under load each commit takes all
// that queued during the one before, so commits keep up with any write rate
// that fits in the transactions' CPU time.
type committer struct {
	db      *bolt.DB
	maxSize int

	mu      sync.Mutex
	pending []*batchCall
	wake    chan struct{} // capacity 1: "pending is not empty"
	stop    chan struct{}
	done    chan struct{}
	// observe, when set, hears the size of each commit (DB.ObserveCommits).
	observe atomic.Pointer[func(calls int)]
}

// batchCall is one Batch call waiting for its commit.
type batchCall struct {
	fn  func(*bolt.Tx) error
	err error // fn's error or bbolt's
	// panicked holds what fn panicked with; submit re-panics with it on the
	// caller's goroutine, as if fn had run there.
	panicked any
	done     chan struct{}
}

// errPanicked rolls back a transaction whose fn panicked.
var errPanicked = errors.New("boltstore: batch function panicked")

// run calls fn, turning a panic into errPanicked.
func (call *batchCall) run(btx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			call.panicked, err = p, errPanicked
		}
	}()
	return call.fn(btx)
}

func newCommitter(db *bolt.DB, maxSize int) *committer {
	c := &committer{db: db, maxSize: maxSize, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

// submit queues fn and waits until the commit that holds it is durable.
func (c *committer) submit(fn func(*bolt.Tx) error) error {
	call := &batchCall{fn: fn, done: make(chan struct{})}
	c.mu.Lock()
	c.pending = append(c.pending, call)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // already signalled
	}
	<-call.done
	if call.panicked != nil {
		panic(call.panicked)
	}
	return call.err
}

// close stops the loop after it has committed every queued call.
func (c *committer) close() {
	close(c.stop)
	<-c.done
}

func (c *committer) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.wake:
		case <-c.stop:
			c.drain()
			return
		}
		c.drain()
	}
}

// drain commits groups until nothing is queued.
func (c *committer) drain() {
	for {
		c.mu.Lock()
		n := min(len(c.pending), c.maxSize)
		group := c.pending[:n:n]
		c.pending = c.pending[n:]
		if len(c.pending) == 0 {
			c.pending = nil // let the backing array go
		}
		c.mu.Unlock()
		if n == 0 {
			return
		}
		c.commit(group)
	}
}

// commit runs group in one transaction. When an fn fails, the transaction is
// rolled back, that call gets its error, and the others are committed again
// without it (Batch's contract lets fn run more than once).
func (c *committer) commit(group []*batchCall) {
	for len(group) > 0 {
		failed := -1
		err := c.db.Update(func(btx *bolt.Tx) error {
			for i, call := range group {
				if err := call.run(btx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 {
			group[failed].err = err
			close(group[failed].done)
			group = append(group[:failed:failed], group[failed+1:]...)
			continue
		}
		if f := c.observe.Load(); f != nil {
			(*f)(len(group))
		}
		for _, call := range group {
			call.err = err
			close(call.done)
		}
		return
	}
}
