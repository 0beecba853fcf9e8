package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTallyRounds checks that each round's figures are its own: its
// successful requests over its elapsed time, the CPU over its requests that
// were sent (dropped ones cost the server nothing), and its TTFB p50, while
// the totals still pool every round.
func TestTallyRounds(t *testing.T) {
	tl := newTally()
	for range 100 {
		tl.add(sample{Latency: time.Millisecond, TTFB: 200 * time.Microsecond})
	}
	tl.add(sample{Err: errDropped})
	tl.add(sample{Err: errors.New("HTTP 500")})
	tl.addRound(loadResult{Elapsed: time.Second}, 101*time.Millisecond, 0)
	for range 50 {
		tl.add(sample{Latency: time.Millisecond, TTFB: 800 * time.Microsecond})
	}
	tl.addRound(loadResult{Elapsed: 500 * time.Millisecond}, 25*time.Millisecond, 0)

	r := tl.report(targetGateway, 0)
	want := []roundReport{
		{Rate: 100, CPUPer1k: 1, TTFBP50: 0.2},
		{Rate: 100, CPUPer1k: 0.5, TTFBP50: 0.8},
	}
	if diff := cmp.Diff(want, r.Rounds, cmp.Comparer(near)); diff != "" {
		t.Errorf("rounds (-want +got):\n%s", diff)
	}
	if r.OK != 150 || r.Rate != 100 {
		t.Errorf("pooled: %d ok at %.1f/s, want 150 at 100/s", r.OK, r.Rate)
	}
}

// near compares figures read from histogram buckets, which are a few
// percent wide.
func near(a, b float64) bool { return a == b || (b != 0 && a/b > 0.95 && a/b < 1.05) }

// TestRoundRatios checks the per-round ratios: round i of the gateway against
// round i of the proxy, a TTFB ratio of what each adds over direct's round i,
// and that they reach the goals' verdicts as a range.
func TestRoundRatios(t *testing.T) {
	rounds := func(rates, ttfbs []float64) []roundReport {
		out := make([]roundReport, len(rates))
		for i := range rates {
			out[i] = roundReport{Rate: rates[i], TTFBP50: ttfbs[i]}
		}
		return out
	}
	rs := scenarioReport{Name: "peak", Mode: "closed", Targets: []targetReport{
		{Target: targetDirect, OK: 1, Rate: 20000, Rounds: rounds([]float64{20000, 20000, 20000}, []float64{0.3, 0.3, 0.3})},
		{Target: targetProxy, OK: 1, Rate: 10000, Rounds: rounds([]float64{10000, 8000, 12000}, []float64{0.5, 0.3, 0.7})},
		{Target: targetGateway, OK: 1, Rate: 12000, Rounds: rounds([]float64{12000, 10000, 12000}, []float64{0.6, 0.5, 0.7})},
	}}
	a := addedOver(rs)
	if diff := cmp.Diff([]float64{1.2, 1.25, 1}, a.RoundRates); diff != "" {
		t.Errorf("rate ratios (-want +got):\n%s", diff)
	}
	// Round 2: the proxy adds nothing measurable over direct, so no ratio.
	if diff := cmp.Diff([]float64{1.5, 1}, a.RoundTTFB); diff != "" {
		t.Errorf("TTFB ratios (-want +got):\n%s", diff)
	}
	rs.Added = a
	if g := peakGoal(&rs); !strings.Contains(g.Measured, "1.00-1.25x over its 3 rounds") {
		t.Errorf("peak goal: %q does not give the rounds' range", g.Measured)
	}
	r := 1.2
	a.RatioTTFB, a.RatioTTFB99 = &r, &r
	if g := ttfbGoal(&rs); !strings.Contains(g.Measured, "1.00-1.50x over its 2 rounds") {
		t.Errorf("TTFB goal: %q does not give the rounds' range", g.Measured)
	}
}
