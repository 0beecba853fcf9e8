package guard_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/guard"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestCachedHitAndExpiry(t *testing.T) {
	inner := &fakeClassifier{v: flags("moderation", "hate")}
	clk := clock.NewFake(t0)
	c := guard.Cached(inner, clk, time.Minute, 10)
	ctx := context.Background()
	in := guard.Input{Texts: []string{"a", "b"}, Images: []string{"https://img/1.png"}}

	v, err := c.Classify(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(flags("moderation", "hate"), v); diff != "" {
		t.Errorf("Classify mismatch (-want +got):\n%s", diff)
	}
	v.Categories[0].Name = "changed by the caller"

	clk.Advance(time.Minute - time.Nanosecond)
	v, err = c.Classify(ctx, guard.Input{Texts: []string{"a", "b"}, Images: []string{"https://img/1.png"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(flags("moderation", "hate"), v); diff != "" {
		t.Errorf("cached Classify mismatch (-want +got):\n%s", diff)
	}
	if n := inner.calls.Load(); n != 1 {
		t.Errorf("inner called %d times, want 1 (a hit)", n)
	}

	// Inputs that differ anywhere are other keys.
	for _, other := range []guard.Input{
		{Texts: []string{"ab"}, Images: []string{"https://img/1.png"}},
		{Texts: []string{"a"}, Images: []string{"b", "https://img/1.png"}},
		{Texts: []string{"a", "b"}},
		{Texts: []string{"a", "b", ""}, Images: []string{"https://img/1.png"}},
	} {
		before := inner.calls.Load()
		if _, err := c.Classify(ctx, other); err != nil {
			t.Fatal(err)
		}
		if inner.calls.Load() != before+1 {
			t.Errorf("Classify(%+v) was a hit", other)
		}
	}

	clk.Advance(time.Nanosecond) // a minute after the first call
	before := inner.calls.Load()
	if _, err := c.Classify(ctx, in); err != nil {
		t.Fatal(err)
	}
	if inner.calls.Load() != before+1 {
		t.Error("Classify after the TTL was a hit")
	}
}

func TestCachedCleanVerdictsErrorsNot(t *testing.T) {
	inner := &fakeClassifier{err: errors.New("guard: moderation: classifier unavailable")}
	c := guard.Cached(inner, clock.NewFake(t0), 0, 0)
	in := guard.Input{Texts: []string{"x"}}
	for range 2 {
		if _, err := c.Classify(context.Background(), in); err == nil {
			t.Fatal("no error")
		}
	}
	if n := inner.calls.Load(); n != 2 {
		t.Errorf("inner called %d times after two errors, want 2 (errors are not cached)", n)
	}
	inner.err = nil
	for range 2 {
		if v, err := c.Classify(context.Background(), in); err != nil || v.Flagged() {
			t.Fatalf("Classify = %v, %v", v, err)
		}
	}
	if n := inner.calls.Load(); n != 3 {
		t.Errorf("inner called %d times, want 3 (a clean verdict is cached)", n)
	}
}

func TestCachedBound(t *testing.T) {
	inner := &fakeClassifier{}
	clk := clock.NewFake(t0)
	c := guard.Cached(inner, clk, time.Minute, 2)
	calls := func(text string) int32 {
		t.Helper()
		before := inner.calls.Load()
		if _, err := c.Classify(context.Background(), guard.Input{Texts: []string{text}}); err != nil {
			t.Fatal(err)
		}
		return inner.calls.Load() - before
	}
	for _, s := range []string{"a", "b", "c"} {
		clk.Advance(time.Second)
		calls(s)
	}
	if calls("c") != 0 || calls("b") != 0 {
		t.Error("the two newest entries are not cached")
	}
	if calls("a") != 1 {
		t.Error("the oldest entry was not evicted")
	}
	// a evicted b; c is still there.
	if calls("c") != 0 || calls("b") != 1 {
		t.Error("eviction order is not oldest first")
	}

	// Expired entries make room before live ones are evicted.
	clk.Advance(2 * time.Minute)
	calls("d")
	clk.Advance(time.Second)
	calls("e")
	if calls("d") != 0 || calls("e") != 0 {
		t.Error("entries stored after the others expired are not cached")
	}
}

func TestCachedConcurrent(t *testing.T) {
	inner := &fakeClassifier{v: flags("rules", "hate")}
	c := guard.Cached(inner, nil, time.Minute, 8)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				in := guard.Input{Texts: []string{fmt.Sprint((g + i) % 20)}}
				if v, err := c.Classify(context.Background(), in); err != nil || v.Param() != "hate" {
					t.Errorf("Classify = %v, %v", v, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestCachedForgetsOnReload: a verdict given under the old rules is not
// served once the rules file was reloaded, through the wrappers gatewayd
// and the gateway put around it.
func TestCachedForgetsOnReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	write := func(rules string) {
		if err := os.WriteFile(path, []byte(rules), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"categories":{"violence":{"terms":["massacre"]}}}`)
	rf, err := guard.NewRulesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := guard.Cached(guard.WithTimeout(guard.Chain{rf, &fakeClassifier{}}, time.Second), clock.NewFake(t0), time.Minute, 10)
	in := guard.Input{Texts: []string{"plan the heist"}}
	if v, err := c.Classify(context.Background(), in); err != nil || v.Flagged() {
		t.Fatalf("before the reload: %v, %v; want clean", v, err)
	}
	write(`{"categories":{"illicit":{"terms":["heist"]}}}`)
	if err := rf.Reload(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Classify(context.Background(), in); err != nil || v.Param() != "illicit" {
		t.Errorf("after the reload: %v, %v; want illicit", v, err)
	}
	if got := guard.Version(c); got != 1 {
		t.Errorf("Version = %d, want 1 (one reload)", got)
	}
}
