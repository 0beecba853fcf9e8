package main

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJudgeGoals checks each goal's verdict on a report at, just past and
// without its threshold.
func TestJudgeGoals(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	open := func(name string, a *added, targets ...targetReport) scenarioReport {
		return scenarioReport{Name: name, Mode: "open", Added: a, Targets: targets}
	}
	good := &report{
		Scenarios: []scenarioReport{
			open("v1-sse 500/s", &added{RatioTTFB: f(1.2), RatioTTFB99: f(1.5)}),
			open("c1-sse 1000/s", &added{GatewayP99: 9.9}, targetReport{Target: targetGateway}),
			open("c1-sse 3000/s", nil, targetReport{Target: targetGateway, Rate: 2975, Persisted: &persistReport{AckedTurns: 2975}}),
			{Name: "peak", Mode: "closed", Added: &added{GatewayRate: f(1.3)},
				Targets: []targetReport{{Target: targetProxy, Rate: 10000}, {Target: targetGateway, Rate: 13000}}},
		},
		Slow: []slowReport{
			{Target: targetProxy, Upstream: "http/1.1", Streams: 2000, MaxOpen: 2000, KBPerStream: 58},
			{Target: targetGateway, Upstream: "http/1.1", Streams: 2000, MaxOpen: 2000, KBPerStream: 58},
			{Target: targetGateway, Upstream: "h2c", Streams: 10000, OK: 10000, PeakRSSMB: 599.9},
		},
	}
	bad := &report{
		Scenarios: []scenarioReport{
			open("v1-sse 500/s", &added{RatioTTFB: f(1.21), RatioTTFB99: f(1.5)}),
			open("c1-sse 1000/s", &added{GatewayP99: 10}, targetReport{Target: targetGateway}),
			open("c1-sse 3000/s", nil, targetReport{Target: targetGateway, Rate: 3000, Errors: 1, Persisted: &persistReport{AckedTurns: 2999}}),
			{Name: "peak", Mode: "closed", Added: &added{GatewayRate: f(1.29)},
				Targets: []targetReport{{Target: targetProxy, Rate: 10000}, {Target: targetGateway, Rate: 12900}}},
		},
		Slow: []slowReport{
			{Target: targetProxy, Upstream: "http/1.1", Streams: 2000, MaxOpen: 2000, KBPerStream: 58},
			{Target: targetGateway, Upstream: "http/1.1", Streams: 2000, MaxOpen: 2000, KBPerStream: 58.1},
			{Target: targetGateway, Upstream: "h2c", Streams: 10000, OK: 9999, PeakRSSMB: 500},
		},
	}
	verdicts := func(rep *report) []string {
		var out []string
		for _, g := range judgeGoals(rep) {
			switch {
			case g.Met == nil:
				out = append(out, g.Name+": not measured")
			case *g.Met:
				out = append(out, g.Name+": met")
			default:
				out = append(out, g.Name+": not met")
			}
		}
		return out
	}
	for _, tt := range []struct {
		name string
		rep  *report
		want string
	}{
		{"at the thresholds", good, "met"},
		{"past them", bad, "not met"},
		{"nothing ran", &report{}, "not measured"},
	} {
		var want []string
		for _, g := range judgeGoals(good) {
			want = append(want, g.Name+": "+tt.want)
		}
		if diff := cmp.Diff(want, verdicts(tt.rep)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestTTFBGoalBelowTheFloor: where the proxy's added TTFB is not above the
// floor's, there is no ratio, and the gateway meets that part only by adding
// nothing measurable either.
func TestTTFBGoalBelowTheFloor(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		name     string
		a        *added
		want     string
		measured string // a part of the goal's Measured text
	}{
		{"both below the floor at p99", &added{RatioTTFB: f(1.05), ProxyTTFB: 0.358, GatewayTTFB: 0.376, ProxyTTFB99: -0.8, GatewayTTFB99: -0.704}, "met",
			"p50 +0.376 vs +0.358 ms (1.05x), p99 -0.704 vs -0.800 ms"},
		{"only the gateway above it", &added{RatioTTFB: f(1.05), ProxyTTFB: 0.358, GatewayTTFB: 0.376, ProxyTTFB99: -0.8, GatewayTTFB99: 0.1}, "not met",
			"p99 +0.100 vs -0.800 ms"},
		{"at p50 too", &added{ProxyTTFB: -0.01, GatewayTTFB: 0.02, RatioTTFB99: f(1)}, "not met", "p50 +0.020 vs -0.010 ms"},
		{"no floor", &added{}, "not measured", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := ttfbGoal(&scenarioReport{Name: "v1-sse 500/s", Added: tt.a})
			got := "not measured"
			if g.Met != nil {
				got = map[bool]string{true: "met", false: "not met"}[*g.Met]
			}
			if got != tt.want {
				t.Errorf("%s (%s), want %s", got, g.Measured, tt.want)
			}
			if !strings.Contains(g.Measured, tt.measured) {
				t.Errorf("measured %q, want it to hold %q", g.Measured, tt.measured)
			}
		})
	}
}

// TestTurnsGoalLost checks that the turns goal needs every acknowledged turn
// read back, and the read-back itself.
func TestTurnsGoalLost(t *testing.T) {
	for _, p := range []*persistReport{nil, {AckedTurns: 3000, LostTurns: 1}, {AckedTurns: 3000, ReadErrors: 1}} {
		rs := &scenarioReport{Targets: []targetReport{{Target: targetGateway, Rate: 3000, Persisted: p}}}
		if g := turnsGoal(rs); g.Met == nil || *g.Met {
			t.Errorf("persisted %+v: goal %+v, want not met", p, g)
		}
	}
}

// TestStepRounds checks that the ratio goals' steps run in goalRatioRounds
// rounds unless -rounds is given or the rounds would be too short, and that
// the other steps keep -rounds.
func TestStepRounds(t *testing.T) {
	ratio, rate := goalStep{"peak", 0, true}, goalStep{"c1-sse", 3000, false}
	for _, tt := range []struct {
		args  []string
		step  goalStep
		want  int
		about string
	}{
		{[]string{"-goals"}, ratio, goalRatioRounds, "a ratio step"},
		{[]string{"-goals"}, rate, 5, "a rate step"},
		{[]string{"-goals", "-rounds", "5"}, ratio, 5, "-rounds given"},
		{[]string{"-goals", "-rounds", "3"}, rate, 3, "-rounds given, a rate step"},
		{[]string{"-goals", "-quick"}, ratio, 1, "-quick's 300 ms"},
		{[]string{"-goals", "-duration", "4s"}, ratio, 5, "rounds of 200 ms"},
	} {
		cfg, err := parseFlags(tt.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := stepRounds(tt.step, cfg, cfg.rounds); got != tt.want {
			t.Errorf("%s (%q): %d rounds, want %d", tt.about, tt.args, got, tt.want)
		}
	}
}

// TestRoundsText checks that the report's header names the scenarios that
// ran in another number of rounds than -rounds.
func TestRoundsText(t *testing.T) {
	rep := &report{Rounds: 5, Scenarios: []scenarioReport{{Name: "v1-sse 500/s", Rounds: 20}, {Name: "peak", Rounds: 20}, {Name: "c1-sse 1000/s", Rounds: 5}}}
	if got, want := roundsText(rep), "5 rounds (v1-sse 500/s in 20, peak in 20)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
