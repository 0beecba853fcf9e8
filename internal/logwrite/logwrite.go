// Package logwrite makes a request's log lines cheap: a Writer that gathers
// the lines many goroutines write into few writes of the file under it, and
// Log, which logs a record without taking the caller's program counter.
//
// A gateway logs a line per request and one per upstream attempt. Written
// straight to stderr, each line is a write system call, made while the
// handler's mutex is held, and a wake-up of whatever reads the other end of
// a pipe. At a gateway's peak the lines took about a tenth of its CPU, the
// write system calls a quarter of that and runtime.Callers an eighth. The
// Writer's lines still go out at once when the file is idle: a line waits
// only while the write before it is in progress, or for at most Linger after
// it, and then goes out with every other line that arrived meanwhile.
package logwrite

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Linger is how long the Writer waits after a write before it makes the
// next. A busy gateway's lines come tens of microseconds apart, and a write
// takes about as long, so without the wait nearly every line would be a
// write system call and a wake-up of the Writer's goroutine of its own; with
// it, a millisecond's lines go out in one. A line that comes while the file
// is idle and the last write is older than Linger goes out at once.
const Linger = time.Millisecond

// MaxPending is how many bytes of lines a Writer holds while the file under
// it is slow before Write waits for it, as a write to the file itself would.
const MaxPending = 1 << 20

// Writer is an io.Writer that writes to the file under it from one goroutine
// of its own, gathering what is written while a write is in progress into
// the next one. Each Write's bytes go out whole, in the order of the Writes;
// Write returns before they are written, and errors of the file under it are
// returned by Close. Close writes what is pending.
type Writer struct {
	out io.Writer

	mu      sync.Mutex
	drained sync.Cond // signalled when pending was taken for writing
	pending []byte
	spare   []byte // the buffer of the last write, reused for the next
	closed  bool
	waiting int   // Writes waiting for room
	err     error // the first error of out

	wake chan struct{} // capacity 1: pending has bytes
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the goroutine has written the last bytes

	// linger returns what the goroutine waits on after a write: Linger's
	// timer, or in tests a channel the test closes.
	linger func() <-chan time.Time
}

// New returns a Writer writing to out, and starts its goroutine; Close stops
// it.
func New(out io.Writer) *Writer {
	t := time.NewTimer(Linger)
	t.Stop()
	return start(out, func() <-chan time.Time {
		t.Reset(Linger)
		return t.C
	})
}

func start(out io.Writer, linger func() <-chan time.Time) *Writer {
	w := &Writer{out: out, linger: linger, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	w.drained.L = &w.mu
	go w.run()
	return w
}

// Write queues a copy of p. It waits only while MaxPending bytes are queued
// already. After Close it writes p to the file itself.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	for len(w.pending) > 0 && len(w.pending)+len(p) > MaxPending && !w.closed {
		w.waiting++
		w.drained.Wait()
		w.waiting--
	}
	if w.closed {
		w.mu.Unlock()
		<-w.done // after the queued lines
		return w.out.Write(p)
	}
	first := len(w.pending) == 0
	w.pending = append(w.pending, p...)
	w.mu.Unlock()
	if first { // the Writes after it are in the write its wake-up brings
		select {
		case w.wake <- struct{}{}:
		default: // a wake-up is already due
		}
	}
	return len(p), nil
}

// Close writes what is queued, stops the goroutine and returns the first
// error the file gave. Writes after Close go to the file directly.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done
		return w.firstErr()
	}
	w.closed = true
	w.drained.Broadcast()
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	return w.firstErr()
}

func (w *Writer) firstErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// run writes what is pending each time it is woken, and after a write waits
// for the linger to pass, until Close; then it writes the rest, which holds
// every Write that returned before Close.
func (w *Writer) run() {
	defer close(w.done)
	for {
		select {
		case <-w.wake:
		case <-w.stop:
			w.flush()
			return
		}
		if !w.flush() {
			continue
		}
		select {
		case <-w.linger():
		case <-w.stop:
			w.flush()
			return
		}
	}
}

// flush writes the pending bytes, outside the lock so that Writes go on
// queueing meanwhile, and reports whether there were any.
func (w *Writer) flush() bool {
	w.mu.Lock()
	b := w.pending
	w.pending = w.spare[:0]
	w.spare = nil
	w.drained.Broadcast()
	w.mu.Unlock()
	if len(b) == 0 {
		w.putSpare(b)
		return false
	}
	_, err := w.out.Write(b)
	w.putSpare(b)
	if err != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = err
		}
		w.mu.Unlock()
	}
	return true
}

// putSpare keeps b for the next flush, unless it grew large in a burst: the
// Writer does not keep a megabyte for good.
func (w *Writer) putSpare(b []byte) {
	if cap(b) > 256<<10 {
		return
	}
	w.mu.Lock()
	w.spare = b[:0]
	w.mu.Unlock()
}

// Log logs a record of msg and attrs at level through l's handler, as
// l.LogAttrs would, without the caller's program counter that LogAttrs
// takes with runtime.Callers for every record (a fifth of a microsecond):
// the lines of the hot path come from one place each, so a handler that
// adds the source would name the same line of the gateway every time.
func Log(ctx context.Context, l *slog.Logger, level slog.Level, msg string, attrs ...slog.Attr) {
	h := l.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, msg, 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(ctx, r) // as LogAttrs: a handler's error has nowhere to go
}
