package guard_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/guard"
)

// fakeClassifier answers every Classify with v and err after delay (or when
// ctx is done), counting calls; a non-nil panicWith makes it panic.
type fakeClassifier struct {
	v         guard.Verdict
	err       error
	delay     time.Duration
	panicWith any
	calls     atomic.Int32

	mu   sync.Mutex
	seen []guard.Input
}

func (f *fakeClassifier) Classify(ctx context.Context, in guard.Input) (guard.Verdict, error) {
	f.calls.Add(1)
	f.mu.Lock()
	f.seen = append(f.seen, in)
	f.mu.Unlock()
	if f.panicWith != nil {
		panic(f.panicWith)
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return guard.Verdict{}, ctx.Err()
		}
	}
	return f.v, f.err
}

// flags returns a verdict of the named categories from classifier by.
func flags(by string, names ...string) guard.Verdict {
	var v guard.Verdict
	for _, n := range names {
		v.Categories = append(v.Categories, guard.Category{Name: n, Score: 1, Native: n, Classifier: by})
	}
	return v
}

func TestVerdictParam(t *testing.T) {
	tests := []struct {
		v    guard.Verdict
		want string
	}{
		{guard.Verdict{}, ""},
		{flags("rules", "violence"), "violence"},
		{flags("rules", "violence", "hate", "self-harm/intent", "hate", "harassment"), "harassment,hate,self-harm/intent,violence"},
		{guard.Verdict{Categories: append(flags("rules", "hate").Categories, flags("moderation", "hate", "illicit").Categories...)}, "hate,illicit"},
	}
	for _, tt := range tests {
		if got := tt.v.Param(); got != tt.want {
			t.Errorf("Param(%v) = %q, want %q", tt.v, got, tt.want)
		}
		if got := tt.v.Flagged(); got != (tt.want != "") {
			t.Errorf("Flagged(%v) = %v", tt.v, got)
		}
	}
}
