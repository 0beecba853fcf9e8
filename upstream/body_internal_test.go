package upstream

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestResponseBodyClosedWhileRead pins the order that decides an attempt's
// outcome when Close ends a Read that waits: the Read fails and records its
// outcome before Close reports the attempt. A caller that closed the body
// itself leaves the attempt ok; one whose context ended makes it cancelled.
func TestResponseBodyClosedWhileRead(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		canceled bool
		want     string
	}{
		{"closed by the caller", false, OutcomeOK},
		{"the caller went away", true, OutcomeCancelled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rc := &waitingBody{unblock: make(chan struct{}), readDone: make(chan struct{})}
			obs := &lastAttempt{}
			b := &responseBody{rc: rc, ctx: ctx, actx: ctx, call: &call{cancel: func(error) {}, timer: time.AfterFunc(time.Hour, func() {})},
				obs: obs, att: Attempt{Outcome: OutcomeOK, Status: 200, start: time.Now()}}
			go func() {
				b.Read(make([]byte, 16))
				close(rc.readDone)
			}()
			if tt.canceled {
				cancel()
			}
			b.Close()
			if got := obs.get(); got.Outcome != tt.want {
				t.Errorf("outcome %q, want %q", got.Outcome, tt.want)
			}
		})
	}
}

// waitingBody is a body whose Read waits until Close, then fails; Close
// returns only once that Read has returned through responseBody (readDone),
// so responseBody.Close reports the attempt after the failed Read.
type waitingBody struct {
	unblock  chan struct{}
	readDone chan struct{}
}

func (w *waitingBody) Read([]byte) (int, error) {
	<-w.unblock
	return 0, errors.New("use of closed network connection")
}

func (w *waitingBody) Close() error {
	close(w.unblock)
	<-w.readDone
	return nil
}

type lastAttempt struct {
	mu sync.Mutex
	a  Attempt
}

func (l *lastAttempt) ObserveAttempt(_ context.Context, a Attempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.a = a
}

func (l *lastAttempt) get() Attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.a
}
