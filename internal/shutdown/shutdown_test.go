package shutdown_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/chatgw/gateway/internal/shutdown"
)

// TestSignal: a function registered before End runs once when End is
// called, unless Stop removed it first; one registered after End runs at
// once; Stop reports whether it kept the function from running.
func TestSignal(t *testing.T) {
	tests := []struct {
		name     string
		steps    string // W: Watch, S: Stop, E: End
		wantRuns int32
		wantStop bool
	}{
		{"watch, end", "WE", 1, false},
		{"watch, end, stop", "WES", 1, false},
		{"watch, stop, end", "WSE", 0, true},
		{"end, watch", "EW", 1, false},
		{"end, watch, stop", "EWS", 1, false},
		{"watch, end twice", "WEE", 1, false},
		{"watch, stop twice, end", "WSSE", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					s       shutdown.Signal
					w       *shutdown.Watch
					runs    atomic.Int32
					stopped bool
				)
				for _, step := range tt.steps {
					switch step {
					case 'W':
						w = s.Watch(func() { runs.Add(1) })
					case 'S':
						stopped = w.Stop()
					case 'E':
						s.End()
					}
				}
				synctest.Wait() // the functions run in goroutines of their own
				if got := runs.Load(); got != tt.wantRuns {
					t.Errorf("f ran %d times, want %d", got, tt.wantRuns)
				}
				if stopped != tt.wantStop {
					t.Errorf("the last Stop = %v, want %v", stopped, tt.wantStop)
				}
				if s.Ended() != contains(tt.steps, 'E') {
					t.Errorf("Ended() = %v after %s", s.Ended(), tt.steps)
				}
			})
		})
	}
}

func contains(steps string, c rune) bool {
	for _, s := range steps {
		if s == c {
			return true
		}
	}
	return false
}

// TestSignalConcurrent registers and stops functions from many goroutines
// while End runs: each function runs exactly when its Stop reports false.
func TestSignalConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 2000
		var (
			s       shutdown.Signal
			ran     [n]atomic.Int32
			stopped [n]bool
			wg      sync.WaitGroup
		)
		for i := range n {
			wg.Go(func() {
				w := s.Watch(func() { ran[i].Add(1) })
				if i%2 == 0 {
					stopped[i] = w.Stop()
				}
			})
			if i == n/2 {
				wg.Go(s.End)
			}
		}
		wg.Wait()
		synctest.Wait()
		for i := range n {
			want := int32(1)
			if stopped[i] {
				want = 0
			}
			if got := ran[i].Load(); got != want {
				t.Fatalf("function %d ran %d times, its Stop reported %v", i, got, stopped[i])
			}
		}
	})
}

// BenchmarkWatch is a request's registration and removal from parallel
// goroutines, against context.AfterFunc on one shared context.
func BenchmarkWatch(b *testing.B) {
	b.Run("signal", func(b *testing.B) {
		var s shutdown.Signal
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				s.Watch(func() {}).Stop()
			}
		})
	})
	b.Run("context.AfterFunc", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				context.AfterFunc(ctx, func() {})()
			}
		})
	})
}
