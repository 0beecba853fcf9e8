// Package shutdown is the signal that ends a gateway's answers in flight: a
// relay registers what to do when the gateway shuts down (close the upstream
// body it reads) and removes it when the answer ends.
//
// context.AfterFunc on one shared context would do the same, at the price of
// that context's mutex and its map of children, taken twice by every request
// of the gateway: a lock every request contends on, on the hot path. A
// Signal spreads its registrations over shards, each with its own mutex and
// an intrusive list, picked at random, so that concurrent requests seldom
// meet.
package shutdown

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// shards is how many independent lists a Signal keeps: enough that the
// handlers of a few CPUs rarely share one.
const shards = 16

// A Signal is raised once, by End; until then Watch registers functions to
// run when it is. The zero Signal is ready to use; it must not be copied.
type Signal struct {
	ended  atomic.Bool
	shards [shards]shard
}

type shard struct {
	mu   sync.Mutex
	head *Watch   // the newest registration; a doubly linked list
	_    [48]byte // one cache line per shard: mutex, head and this
}

// A Watch is one registration of Signal.Watch.
type Watch struct {
	s          *shard
	f          func()
	prev, next *Watch
	linked     bool // guarded by s.mu
}

// Ended reports whether End was called.
func (s *Signal) Ended() bool { return s.ended.Load() }

// Watch arranges for f to run in a goroutine of its own when End is called,
// or at once (in a goroutine) if it was already called, like
// context.AfterFunc. Stop undoes it.
func (s *Signal) Watch(f func()) *Watch {
	// math/rand/v2's global source is per thread: nothing shared is
	// written to choose the shard.
	w := &Watch{f: f, s: &s.shards[rand.IntN(shards)]}
	w.s.mu.Lock()
	if s.ended.Load() {
		// End has passed or is passing this shard: its list may already
		// have been taken, so run f here rather than link it.
		w.s.mu.Unlock()
		go f()
		return w
	}
	w.next = w.s.head
	if w.next != nil {
		w.next.prev = w
	}
	w.s.head, w.linked = w, true
	w.s.mu.Unlock()
	return w
}

// Stop removes the registration. It reports whether it stopped f from
// running: false when End had already started it.
func (w *Watch) Stop() bool {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !w.linked {
		return false
	}
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		s.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	}
	w.prev, w.next, w.linked = nil, nil, false
	return true
}

// End raises the signal: every function registered and not stopped runs,
// each in a goroutine of its own, and so does every one registered later.
// Calls after the first do nothing.
func (s *Signal) End() {
	if s.ended.Swap(true) {
		return
	}
	// A Watch checks ended under its shard's lock, so each registration
	// is either linked before this takes the shard's list or runs at once.
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		w := sh.head
		sh.head = nil
		for n := w; n != nil; n = n.next {
			n.linked = false
		}
		sh.mu.Unlock()
		for ; w != nil; w = w.next {
			go w.f()
		}
	}
}
