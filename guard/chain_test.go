package guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/guard"
)

func TestChain(t *testing.T) {
	unavailable := errors.New("guard: moderation: classifier unavailable")
	malformed := errors.New("guard: llama_guard: malformed answer")
	tests := []struct {
		name      string
		chain     guard.Chain
		want      guard.Verdict
		wantErrs  []error
		wantParam string
	}{
		{"empty", guard.Chain{}, guard.Verdict{}, nil, ""},
		{"one", guard.Chain{&fakeClassifier{v: flags("rules", "hate")}}, flags("rules", "hate"), nil, "hate"},
		{"all clean", guard.Chain{&fakeClassifier{}, &fakeClassifier{}}, guard.Verdict{}, nil, ""},
		{"one flags", guard.Chain{&fakeClassifier{}, &fakeClassifier{v: flags("moderation", "violence")}},
			flags("moderation", "violence"), nil, "violence"},
		{"both flag, chain order", guard.Chain{
			&fakeClassifier{v: flags("rules", "violence", "hate")},
			&fakeClassifier{v: flags("moderation", "hate", "sexual")},
		}, guard.Verdict{Categories: append(flags("rules", "violence", "hate").Categories, flags("moderation", "hate", "sexual").Categories...)},
			nil, "hate,sexual,violence"},
		{"one fails, one flags: partial verdict and the error", guard.Chain{
			&fakeClassifier{err: unavailable},
			&fakeClassifier{v: flags("rules", "hate")},
		}, flags("rules", "hate"), []error{unavailable}, "hate"},
		{"one fails, one clean", guard.Chain{&fakeClassifier{}, &fakeClassifier{err: malformed}},
			guard.Verdict{}, []error{malformed}, ""},
		{"both fail", guard.Chain{&fakeClassifier{err: unavailable}, &fakeClassifier{err: malformed}},
			guard.Verdict{}, []error{unavailable, malformed}, ""},
		{"a panic is a failure", guard.Chain{&fakeClassifier{panicWith: "boom"}, &fakeClassifier{v: flags("rules", "hate")}},
			flags("rules", "hate"), []error{}, "hate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := guard.Input{Texts: []string{"x"}}
			v, err := tt.chain.Classify(context.Background(), in)
			if diff := cmp.Diff(tt.want, v); diff != "" {
				t.Errorf("Classify mismatch (-want +got):\n%s", diff)
			}
			if got := v.Param(); got != tt.wantParam {
				t.Errorf("Param = %q, want %q", got, tt.wantParam)
			}
			if (err != nil) != (tt.wantErrs != nil) {
				t.Fatalf("Classify error = %v, want errors %v", err, tt.wantErrs)
			}
			for _, w := range tt.wantErrs {
				if !errors.Is(err, w) {
					t.Errorf("Classify error %q does not wrap %q", err, w)
				}
			}
			for _, c := range tt.chain {
				if n := c.(*fakeClassifier).calls.Load(); n != 1 {
					t.Errorf("a classifier was called %d times, want once", n)
				}
			}
		})
	}
	_, err := guard.Chain{&fakeClassifier{panicWith: "boom"}, &fakeClassifier{}}.Classify(context.Background(), guard.Input{})
	if err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("Classify with a panicking member: %v", err)
	}
}

// The members run concurrently, under one deadline.
func TestChainConcurrentUnderTimeout(t *testing.T) {
	slow := &fakeClassifier{delay: 10 * time.Second, v: flags("moderation", "violence")}
	quick := &fakeClassifier{delay: 20 * time.Millisecond, v: flags("rules", "hate")}
	also := &fakeClassifier{delay: 20 * time.Millisecond, v: flags("llama_guard", "sexual")}
	c := guard.WithTimeout(guard.Chain{slow, quick, also}, 200*time.Millisecond)
	start := time.Now()
	v, err := c.Classify(context.Background(), guard.Input{Texts: []string{"x"}})
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Classify took %v", d)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Errorf("Classify error = %v, want the time-out", err)
	}
	if got := v.Param(); got != "hate,sexual" {
		t.Errorf("partial verdict = %q, want hate,sexual", got)
	}

	// Two members of 100 ms each take about 100 ms together.
	a := &fakeClassifier{delay: 100 * time.Millisecond}
	b := &fakeClassifier{delay: 100 * time.Millisecond}
	start = time.Now()
	if _, err := (guard.Chain{a, b}).Classify(context.Background(), guard.Input{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= 190*time.Millisecond {
		t.Errorf("two 100ms members took %v: not concurrent", d)
	}
}

func TestWithTimeout(t *testing.T) {
	// Within the time: the verdict as it is.
	c := guard.WithTimeout(&fakeClassifier{v: flags("rules", "hate")}, 0)
	if v, err := c.Classify(context.Background(), guard.Input{}); err != nil || v.Param() != "hate" {
		t.Errorf("Classify = %v, %v", v, err)
	}
	// The caller's own deadline is not reported as the guard's.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := guard.WithTimeout(&fakeClassifier{delay: time.Second}, time.Minute).Classify(ctx, guard.Input{})
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "no answer within") {
		t.Errorf("Classify past the caller's deadline = %v", err)
	}
}
