package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"
)

// The -goals run measures the performance goals of issue 18 in one command,
// each beside the bare proxy of the same run:
//
//  1. memory per open stream at most the proxy's (MiB per 1,000 slow
//     streams over idle, goalSlowStreams of them, HTTP/1.1 upstream);
//  2. 10,000 concurrent slow streams under 600 MiB RSS (h2c upstream, as
//     10,000 HTTP/1.1 streams need more file descriptors than the machine
//     gives);
//  3. added time to first byte at 500 streams/s: p50 at most 1.2x the
//     proxy's, p99 at most 1.5x;
//  4. streamed /c1 added p99 under 10 ms at 1000 turns/s on the run's store;
//  5. at least 3000 persisted /c1 turns/s sustained;
//  6. closed-loop /v1 JSON peak at least 1.3x the proxy's.
//
// The other flags (-duration, -warmup, -rounds, -store-url...) apply to each
// step; -rate, -scenarios, -targets, -streams and -slow-h2c are the plan's.
// With -quick the slow-streams runs have a twentieth of the streams, which
// checks that the plan runs but cannot meet goal 2.
type goalStep struct {
	scenario string
	rate     float64 // open loop; 0 for the closed-loop peak
	// ratio: the goal is a ratio of the gateway's figure to the proxy's,
	// measured in goalRatioRounds rounds unless -rounds is given.
	ratio bool
}

// goalRatioRounds is how many rounds a ratio goal's step is cut into. This
// machine's speed moves by a fifth from one two-second round to the next
// (the closed-loop peak's gateway/proxy ratio went from 0.97x to 1.46x
// within one run of five rounds, and the pooled ratio of five runs of one
// build from 1.09x to 1.36x), and each target's rounds alternate with the
// other's: in 20 rounds of half a second, three runs in a row pooled 1.22x,
// 1.23x and 1.23x. The open-loop rate steps keep -rounds (5): each round's end waits
// for its last answers, and that wait, counted in a round's time, would
// lower the measured rate of turns in twenty rounds.
const goalRatioRounds = 20

// goalSteps run in this order on the same processes. The peak comes before
// the /c1 steps: c1-sse at 3000/s overloads the gateway alone (the proxy
// keeps up), which leaves it, for the transport's idle time-out of 90 s,
// with its backlog's idle upstream connections (256 kept) and their
// goroutines, and the collector then marks a live heap three times as large:
// a peak measured next cost the gateway 0.146 CPU ms per request against
// 0.108 after c1-sse at 1000/s, and compared a recovering gateway with a
// proxy that had not been overloaded.
var goalSteps = []goalStep{
	{"v1-sse", 500, true},
	{"peak", 0, true},
	{"c1-sse", 1000, false},
	{"c1-sse", 3000, false},
}

// Slow-streams runs of the plan.
const (
	goalSlowStreams = 2000
	goalManyStreams = 10000
)

// stepRounds is the rounds of st: goalRatioRounds for a ratio goal, unless
// -rounds was given or the rounds would be shorter than a quarter second
// (as with -quick); else rounds.
func stepRounds(st goalStep, cfg config, rounds int) int {
	if st.ratio && !cfg.roundsGiven && cfg.duration/goalRatioRounds >= 250*time.Millisecond {
		return goalRatioRounds
	}
	return rounds
}

// goal is one goal's verdict in the report.
type goal struct {
	Name     string `json:"name"`
	Want     string `json:"want"`
	Measured string `json:"measured"`
	// Met is nil when the run could not measure the goal (a step failed or
	// was skipped).
	Met *bool `json:"met"`
}

// runGoals runs the plan's load steps on the started targets, then its
// slow-streams runs, and judges the goals.
func (b *bench) runGoals(ctx context.Context, exe string, rep *report) {
	rounds := b.cfg.rounds
	for _, st := range goalSteps {
		if ctx.Err() != nil {
			return
		}
		sc, ok := scenarioByName(st.scenario)
		if !ok {
			continue
		}
		b.cfg.rate, b.cfg.rounds = st.rate, stepRounds(st, b.cfg, rounds)
		rs := b.runScenario(ctx, sc)
		if st.rate > 0 {
			rs.Name = fmt.Sprintf("%s %g/s", st.scenario, st.rate)
		}
		rep.Scenarios = append(rep.Scenarios, rs)
	}
	few, many := goalSlowStreams, goalManyStreams
	if b.cfg.quick {
		few, many = few/20, many/20
	}
	for _, sl := range []struct {
		streams int
		h2c     bool
		targets []string
	}{
		{few, false, []string{targetProxy, targetGateway}},
		{many, true, []string{targetGateway}},
	} {
		if ctx.Err() != nil {
			return
		}
		b.cfg.streams, b.cfg.slowH2C, b.cfg.targets = sl.streams, sl.h2c, sl.targets
		rep.Slow = append(rep.Slow, b.runSlowStreams(ctx, exe)...)
	}
	rep.SlowChunks, rep.SlowIntervalMs, rep.SlowRamp = b.cfg.slowChunks, ms(b.cfg.slowInterval), b.cfg.slowRamp
	rep.Goals = judgeGoals(rep)
}

// scenarioByName returns the load scenario called name.
func scenarioByName(name string) (scenario, bool) {
	i := slices.IndexFunc(scenarios, func(sc scenario) bool { return sc.name == name })
	if i < 0 {
		return scenario{}, false
	}
	return scenarios[i], true
}

// judgeGoals compares the report's numbers with the goals.
func judgeGoals(rep *report) []goal {
	return []goal{
		memoryGoal(rep.Slow),
		manyStreamsGoal(rep.Slow),
		ttfbGoal(findScenario(rep, "v1-sse 500/s")),
		c1TailGoal(findScenario(rep, "c1-sse 1000/s")),
		turnsGoal(findScenario(rep, "c1-sse 3000/s")),
		peakGoal(findScenario(rep, "peak")),
	}
}

func findScenario(rep *report, name string) *scenarioReport {
	for i := range rep.Scenarios {
		if rep.Scenarios[i].Name == name {
			return &rep.Scenarios[i]
		}
	}
	return nil
}

func verdict(ok bool) *bool { return &ok }

// mibPer1000 is a slow-streams run's memory per 1,000 open streams.
func mibPer1000(r slowReport) float64 { return r.KBPerStream * 1000 / 1024 }

func memoryGoal(slow []slowReport) goal {
	g := goal{Name: "memory per open stream", Want: fmt.Sprintf("gateway <= proxy, MiB per 1,000 of %d slow streams over idle (HTTP/1.1 upstream)", goalSlowStreams)}
	var p, gw *slowReport
	for i, r := range slow {
		if r.Upstream != "http/1.1" || r.Skipped != "" || r.MaxOpen == 0 {
			continue
		}
		switch r.Target {
		case targetProxy:
			p = &slow[i]
		case targetGateway:
			gw = &slow[i]
		}
	}
	if p == nil || gw == nil {
		return g
	}
	g.Measured = fmt.Sprintf("gateway %.1f, proxy %.1f MiB (%s)", mibPer1000(*gw), mibPer1000(*p), fmtRatio(ratio(gw.KBPerStream, p.KBPerStream)))
	g.Met = verdict(gw.KBPerStream <= p.KBPerStream && gw.Errors == 0)
	return g
}

func manyStreamsGoal(slow []slowReport) goal {
	g := goal{Name: "10,000 slow streams", Want: "all complete, peak RSS < 600 MiB (h2c upstream)"}
	for _, r := range slow {
		if r.Target == targetGateway && r.Upstream == "h2c" && r.Skipped == "" {
			g.Measured = fmt.Sprintf("%d of %d complete, peak RSS %.1f MiB", r.OK, r.Streams, r.PeakRSSMB)
			g.Met = verdict(r.Streams >= goalManyStreams && r.OK == r.Streams && r.PeakRSSMB < 600)
		}
	}
	return g
}

func ttfbGoal(rs *scenarioReport) goal {
	g := goal{Name: "time to first byte at 500 streams/s", Want: "added TTFB p50 <= 1.2x the proxy's, p99 <= 1.5x"}
	if rs == nil || rs.Added == nil {
		return g
	}
	a := rs.Added
	if a.RatioTTFB == nil && a.ProxyTTFB == 0 && a.GatewayTTFB == 0 {
		return g // no streams, or no floor to measure from
	}
	g.Measured = fmt.Sprintf("p50 %s vs %s ms (%s%s), p99 %s vs %s ms (%s)", fmtAdded(a.GatewayTTFB), fmtAdded(a.ProxyTTFB), ttfbRatio(a.RatioTTFB),
		fmtSpread(a.RoundTTFB), fmtAdded(a.GatewayTTFB99), fmtAdded(a.ProxyTTFB99), ttfbRatio(a.RatioTTFB99))
	g.Met = verdict(withinTTFB(a.RatioTTFB, a.GatewayTTFB, 1.2) && withinTTFB(a.RatioTTFB99, a.GatewayTTFB99, 1.5))
	return g
}

// withinTTFB reports whether the gateway's added TTFB is within limit times
// the proxy's: by their ratio r, or, where the proxy added nothing measurable
// over the floor's (a tail of the floor's above the proxy's leaves no
// ratio), when the gateway added nothing measurable either.
func withinTTFB(r *float64, gateway, limit float64) bool {
	if r != nil {
		return *r <= limit
	}
	return gateway < 0.001
}

func ttfbRatio(r *float64) string {
	if r == nil {
		return "no ratio: the proxy's is not above the floor's"
	}
	return fmtRatio(r)
}

func c1TailGoal(rs *scenarioReport) goal {
	g := goal{Name: "streamed /c1 at 1000 turns/s", Want: "gateway added p99 < 10 ms, no errors"}
	gw := targetOf(rs, targetGateway)
	if rs == nil || rs.Added == nil || gw == nil {
		return g
	}
	g.Measured = fmt.Sprintf("%s ms p99, %d errors", fmtAdded(rs.Added.GatewayP99), gw.Errors)
	g.Met = verdict(rs.Added.GatewayP99 < 10 && gw.Errors == 0)
	return g
}

func turnsGoal(rs *scenarioReport) goal {
	g := goal{Name: "persisted /c1 turns per second", Want: ">= 3000 sustained (none failed, dropped or lost)"}
	gw := targetOf(rs, targetGateway)
	if gw == nil {
		return g
	}
	g.Measured = fmt.Sprintf("%.0f turns/s, %d errors (%d dropped), p99 %s ms", gw.Rate, gw.Errors, gw.Dropped, fmtMs(gw.P99))
	if p := gw.Persisted; p != nil {
		g.Measured += fmt.Sprintf(", %d of %d acknowledged turns read back", p.AckedTurns-p.LostTurns, p.AckedTurns)
	}
	// The achieved rate counts to the last answer, so the tail of the last
	// requests lowers it a little below the schedule's.
	g.Met = verdict(gw.Rate >= 0.99*3000 && gw.Errors == 0 && gw.Persisted.ok())
	return g
}

func peakGoal(rs *scenarioReport) goal {
	g := goal{Name: "closed-loop /v1 JSON peak", Want: ">= 1.3x the proxy's req/s"}
	if rs == nil || rs.Added == nil || rs.Added.GatewayRate == nil {
		return g
	}
	p, gw := targetOf(rs, targetProxy), targetOf(rs, targetGateway)
	g.Measured = fmt.Sprintf("gateway %.0f, proxy %.0f req/s (%s%s)", gw.Rate, p.Rate, fmtRatio(rs.Added.GatewayRate), fmtSpread(rs.Added.RoundRates))
	g.Met = verdict(*rs.Added.GatewayRate >= 1.3)
	return g
}

// targetOf returns the measured report of target in rs, nil if it has none.
func targetOf(rs *scenarioReport, target string) *targetReport {
	if rs == nil {
		return nil
	}
	for i := range rs.Targets {
		if t := &rs.Targets[i]; t.Target == target && t.Skipped == "" {
			return t
		}
	}
	return nil
}

// writeGoalsMarkdown writes the goals table.
func writeGoalsMarkdown(w io.Writer, goals []goal) {
	if len(goals) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Goals (issue 18)\n\n| goal | want | measured | met |\n|---|---|---|---|\n")
	for _, g := range goals {
		met := "not measured"
		switch {
		case g.Met == nil:
		case *g.Met:
			met = "**met**"
		default:
			met = "not met"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", g.Name, g.Want, g.Measured, met)
	}
}
