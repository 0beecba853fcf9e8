package httpx_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/chatgw/gateway/internal/httpx"
	"github.com/google/go-cmp/cmp"
)

// op is one step of a metered request: an upstream call (backend "" for a
// failed one) or the report of an answer's usage object.
type op struct {
	call           bool
	alias, backend string
	usage          string
}

func call(alias, backend string) op { return op{call: true, alias: alias, backend: backend} }
func report(usage string) op        { return op{usage: usage} }

func TestMeter(t *testing.T) {
	const u12x5 = `{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}`
	for _, tc := range []struct {
		name string
		ops  []op
		want httpx.MeterTotals
	}{
		{"no call", nil, httpx.MeterTotals{}},
		{"one answer", []op{call("lm-4-scout", "local"), report(u12x5)},
			httpx.MeterTotals{Calls: 1, Alias: "lm-4-scout", Backend: "local", InputTokens: 12, OutputTokens: 5}},
		{"answer read twice counts once", []op{call("a", "local"), report(u12x5), report(u12x5)},
			httpx.MeterTotals{Calls: 1, Alias: "a", Backend: "local", InputTokens: 12, OutputTokens: 5}},
		{"tool rounds add up", []op{call("a", "local"), report(u12x5), call("a", "cloudA"), report(`{"prompt_tokens":20,"completion_tokens":1}`)},
			httpx.MeterTotals{Calls: 2, Alias: "a", Backend: "cloudA", InputTokens: 32, OutputTokens: 6}},
		{"answer without usage", []op{call("a", "local"), report(``)},
			httpx.MeterTotals{Calls: 1, Alias: "a", Backend: "local", UsageMissing: true}},
		{"earlier answer without usage", []op{call("a", "local"), call("b", "local"), report(u12x5)},
			httpx.MeterTotals{Calls: 2, Alias: "b", Backend: "local", InputTokens: 12, OutputTokens: 5, UsageMissing: true}},
		{"failed call", []op{call("a", "")},
			httpx.MeterTotals{Calls: 1, Alias: "a"}},
		{"failed last call keeps the backend that answered", []op{call("a", "cloudB"), report(u12x5), call("b", "")},
			httpx.MeterTotals{Calls: 2, Alias: "b", Backend: "cloudB", InputTokens: 12, OutputTokens: 5}},
		{"images", []op{call("lm-image", "cloudA"), report(`{"input_tokens":50,"output_tokens":4160,"total_tokens":4210}`)},
			httpx.MeterTotals{Calls: 1, Alias: "lm-image", Backend: "cloudA", InputTokens: 50, OutputTokens: 4160}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := meteredContext()
			m := httpx.MeterOf(ctx)
			if m == nil {
				t.Fatal("MeterOf a started meter = nil")
			}
			for _, o := range tc.ops {
				if o.call {
					m.Call(o.alias, o.backend)
				} else {
					m.Report(json.RawMessage(o.usage))
				}
			}
			if diff := cmp.Diff(tc.want, m.Totals()); diff != "" {
				t.Errorf("Totals mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// meteredContext is the context of a request whose Meter was started.
func meteredContext() context.Context {
	info := new(httpx.Info)
	info.Init("req-1", slog.New(slog.DiscardHandler))
	info.Meter.Start()
	return httpx.WithInfo(context.Background(), info)
}

func TestMeterOfUnmetered(t *testing.T) {
	info := new(httpx.Info)
	info.Init("req-1", slog.New(slog.DiscardHandler))
	for name, ctx := range map[string]context.Context{
		"no Info":     context.Background(),
		"not started": httpx.WithInfo(context.Background(), info),
	} {
		m := httpx.MeterOf(ctx)
		if m != nil {
			t.Errorf("%s: MeterOf = %p, want nil", name, m)
		}
		// A nil Meter's methods do nothing.
		m.Call("a", "local")
		m.Report(json.RawMessage(`{"prompt_tokens":1}`))
		if got := m.Totals(); got != (httpx.MeterTotals{}) {
			t.Errorf("%s: nil Meter's Totals = %+v", name, got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { httpx.MeterOf(context.Background()) }); n != 0 {
		t.Errorf("MeterOf allocates %v times", n)
	}
}

// TestMeterConcurrent: a request's goroutines may meter at once (run with
// -race); every report lands in some call.
func TestMeterConcurrent(t *testing.T) {
	m := httpx.MeterOf(meteredContext())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				m.Call("a", "local")
				m.Report(json.RawMessage(`{"prompt_tokens":1,"completion_tokens":1}`))
				_ = m.Totals()
			}
		})
	}
	wg.Wait()
	if got := m.Totals(); got.Calls != 800 || got.InputTokens > 800 {
		t.Errorf("Totals = %+v, want 800 calls and at most 800 input tokens", got)
	}
}
