package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/store"
)

func testCanceledContext(t *testing.T, s store.Store) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, m := range allMethods {
		for _, c := range []struct {
			ctx  context.Context
			want error
		}{{canceled, context.Canceled}, {expired, context.DeadlineExceeded}} {
			called := false
			err := m.run(s, c.ctx, func(tx store.Tx) error {
				called = true
				return nil
			})
			if !errors.Is(err, c.want) || called {
				t.Errorf("%s with done context = %v (fn called: %v), want %v without calling fn", m.name, err, called, c.want)
			}
		}
	}
	// The store still works.
	putAll(t, s, "b", kv{"k", "v"})
}

func testClose(t *testing.T, s store.Store) {
	putAll(t, s, "b", kv{"k", "v"})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, m := range allMethods {
		called := false
		err := m.run(s, context.Background(), func(tx store.Tx) error {
			called = true
			return nil
		})
		if !errors.Is(err, store.ErrClosed) || called {
			t.Errorf("%s after Close = %v (fn called: %v), want store.ErrClosed without calling fn", m.name, err, called)
		}
	}
	if err := s.Close(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("second Close = %v, want store.ErrClosed", err)
	}
}

// testCloseWhileBusy closes the store while a transaction runs and others keep
// starting: the running one completes, Close waits for it, and every call
// returns nil or store.ErrClosed, without panic or hang.
func testCloseWhileBusy(t *testing.T, s store.Store) {
	inFn, release := make(chan struct{}), make(chan struct{})
	updateErr := make(chan error, 1)
	go func() {
		var once sync.Once // the store may run the callback more than once
		updateErr <- s.Update(context.Background(), func(tx store.Tx) error {
			once.Do(func() { close(inFn) })
			<-release
			return tx.Put([]byte("b"), []byte("k"), []byte("v"))
		})
	}()
	<-inFn

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 6 {
		m := allMethods[i%len(allMethods)]
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := m.run(s, context.Background(), func(tx store.Tx) error {
					if m.name == "View" {
						tx.Get([]byte("b"), []byte("k"))
						return nil
					}
					return tx.Put([]byte("other"), []byte("k"), []byte("v"))
				})
				if errors.Is(err, store.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("%s during Close: %v", m.name, err)
					return
				}
			}
		})
	}

	closeErr := make(chan error, 1)
	go func() { closeErr <- s.Close() }()
	time.Sleep(20 * time.Millisecond) // let Close start waiting
	close(release)
	select {
	case err := <-updateErr:
		if err != nil {
			t.Errorf("Update running when Close was called = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Update running when Close was called did not return")
	}
	select {
	case err := <-closeErr:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	close(stop)
	wg.Wait()
	if err := s.View(context.Background(), func(store.Tx) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("View after Close = %v, want store.ErrClosed", err)
	}
}
