package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// report is the result of one run; it is written as markdown and as JSON.
// Durations are in milliseconds (µs precision), memory in MiB.
type report struct {
	Command           string  `json:"command"`
	Started           string  `json:"started"`
	Go                string  `json:"go"`
	Platform          string  `json:"platform"`
	NumCPU            int     `json:"num_cpu"`
	GOMAXPROCS        int     `json:"gomaxprocs"`
	Rate              float64 `json:"rate"`
	DurationS         float64 `json:"duration_s"`
	WarmupS           float64 `json:"warmup_s"`
	Rounds            int     `json:"rounds"`
	PeakWorkers       int     `json:"peak_workers"`
	UpstreamLatencyMs float64 `json:"upstream_latency_ms"`
	Chunks            int     `json:"chunks"`
	ChunkIntervalMs   float64 `json:"chunk_interval_ms"`
	C1Continue        float64 `json:"c1_continue"`
	C1History         int     `json:"c1_history"`
	// The gateway's store and processes, when the gateway is a target.
	Store            string           `json:"store,omitempty"`         // "bbolt" or "postgresql"
	StoreVersion     string           `json:"store_version,omitempty"` // PostgreSQL's server_version
	StoreAbout       string           `json:"store_about,omitempty"`   // where the store is, how it syncs commits
	GatewayReplicas  int              `json:"gateway_replicas,omitempty"`
	GatewayLog       string           `json:"gateway_log,omitempty"` // "file" (gatewayd's JSON lines) or "none"
	GatewayIdleRSSMB float64          `json:"gateway_idle_rss_mb,omitempty"`
	Scenarios        []scenarioReport `json:"scenarios"`
	// The slow-streams scenario, when it ran.
	SlowStreams    int          `json:"slow_streams,omitempty"`
	SlowChunks     int          `json:"slow_chunks,omitempty"`
	SlowIntervalMs float64      `json:"slow_interval_ms,omitempty"`
	SlowRamp       float64      `json:"slow_ramp,omitempty"`
	Slow           []slowReport `json:"slow,omitempty"`
	// Goals are issue 18's goals, judged by a -goals run.
	Goals []goal `json:"goals,omitempty"`
}

// scenarioReport is one scenario's results, one entry per target.
type scenarioReport struct {
	Name    string         `json:"name"`
	About   string         `json:"about"`
	Mode    string         `json:"mode"` // "open" (fixed rate) or "closed" (peak)
	Rate    float64        `json:"rate,omitempty"`
	Workers int            `json:"workers,omitempty"`
	Rounds  int            `json:"rounds"`
	Targets []targetReport `json:"targets"`
	Added   *added         `json:"added,omitempty"`
	Notes   []string       `json:"notes,omitempty"`
}

// targetReport is one target's results in one scenario. Latencies are of
// successful requests; rate is successful requests per second.
type targetReport struct {
	Target      string         `json:"target"`
	Skipped     string         `json:"skipped,omitempty"`
	Requests    int            `json:"requests"`
	OK          int            `json:"ok"`
	Errors      int            `json:"errors"`
	Dropped     int            `json:"dropped"`
	Truncated   int            `json:"truncated"`
	Rate        float64        `json:"achieved_rate"`
	P50         float64        `json:"p50_ms"`
	P90         float64        `json:"p90_ms"`
	P99         float64        `json:"p99_ms"`
	P999        float64        `json:"p99_9_ms"`
	Max         float64        `json:"max_ms"`
	Mean        float64        `json:"mean_ms"`
	TTFBP50     float64        `json:"ttfb_p50_ms,omitempty"`
	TTFBP99     float64        `json:"ttfb_p99_ms,omitempty"`
	LagP50      float64        `json:"lag_p50_ms"`
	LagP99      float64        `json:"lag_p99_ms"`
	CPUPer1k    float64        `json:"cpu_s_per_1k"`
	GenCPUPer1k float64        `json:"loadgen_cpu_s_per_1k"`
	PeakRSSMB   float64        `json:"peak_rss_mb"`
	ErrorKinds  map[string]int `json:"error_kinds,omitempty"`
	// Persisted is what the gateway's store held of the acknowledged /c1
	// turns after the rounds.
	Persisted *persistReport `json:"persisted,omitempty"`
	// Rounds are the figures of each round, in the order they ran.
	Rounds []roundReport `json:"rounds,omitempty"`
}

// added is what proxy and gateway add over direct, in ms, and the gateway's
// added latency as a ratio to the proxy's (the floor's). A ratio is nil when
// the floor adds nothing measurable. For the closed loop, the rates.
type added struct {
	ProxyP50      float64  `json:"proxy_p50_ms"`
	GatewayP50    float64  `json:"gateway_p50_ms"`
	RatioP50      *float64 `json:"ratio_p50,omitempty"`
	ProxyP99      float64  `json:"proxy_p99_ms"`
	GatewayP99    float64  `json:"gateway_p99_ms"`
	RatioP99      *float64 `json:"ratio_p99,omitempty"`
	ProxyTTFB     float64  `json:"proxy_ttfb_p50_ms,omitempty"`
	GatewayTTFB   float64  `json:"gateway_ttfb_p50_ms,omitempty"`
	RatioTTFB     *float64 `json:"ratio_ttfb_p50,omitempty"`
	ProxyTTFB99   float64  `json:"proxy_ttfb_p99_ms,omitempty"`
	GatewayTTFB99 float64  `json:"gateway_ttfb_p99_ms,omitempty"`
	RatioTTFB99   *float64 `json:"ratio_ttfb_p99,omitempty"`
	ProxyRate     *float64 `json:"proxy_rate_vs_direct,omitempty"`
	GatewayRate   *float64 `json:"gateway_rate_vs_proxy,omitempty"`
	GatewayRateD  *float64 `json:"gateway_rate_vs_direct,omitempty"`
	// The same ratios round by round (the targets ran next to each other in
	// each), from which the machine's drift over a run can be judged: the
	// gateway's rate over the proxy's (closed loop) and its added TTFB p50
	// over the proxy's (streams). A round whose ratio is not measurable is
	// left out.
	RoundRates []float64 `json:"gateway_rate_vs_proxy_rounds,omitempty"`
	RoundTTFB  []float64 `json:"ratio_ttfb_p50_rounds,omitempty"`
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

func mb(kb int64) float64 { return math.Round(float64(kb)/1024*10) / 10 }

// report sums up a tally; peakKB is the server's peak RSS over the rounds.
func (t *tally) report(target string, peakKB int64) targetReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := targetReport{
		Target: target, Requests: t.ok + t.errs, OK: t.ok, Errors: t.errs, Dropped: t.dropped, Truncated: t.truncated,
		P50: ms(t.latency.Quantile(0.5)), P90: ms(t.latency.Quantile(0.9)), P99: ms(t.latency.Quantile(0.99)),
		P999: ms(t.latency.Quantile(0.999)), Max: ms(t.latency.Max()), Mean: ms(t.latency.Mean()),
		TTFBP50: ms(t.ttfb.Quantile(0.5)), TTFBP99: ms(t.ttfb.Quantile(0.99)),
		LagP50: ms(t.lag.Quantile(0.5)), LagP99: ms(t.lag.Quantile(0.99)),
		PeakRSSMB: mb(peakKB),
	}
	if t.elapsed > 0 {
		r.Rate = math.Round(float64(t.ok)/t.elapsed.Seconds()*10) / 10
	}
	if n := t.ok + t.errs - t.dropped; n > 0 {
		r.CPUPer1k = math.Round(t.cpu.Seconds()/float64(n)*1000*1e4) / 1e4
		r.GenCPUPer1k = math.Round(t.genCPU.Seconds()/float64(n)*1000*1e4) / 1e4
	}
	r.Rounds = slices.Clone(t.rounds)
	if len(t.kinds) > 0 {
		r.ErrorKinds = map[string]int{}
		for k, n := range t.kinds {
			r.ErrorKinds[k] = n
		}
	}
	return r
}

// addedOver compares proxy and gateway with direct, when all three ran.
func addedOver(rs scenarioReport) *added {
	var d, p, g *targetReport
	for i := range rs.Targets {
		t := &rs.Targets[i]
		if t.Skipped != "" || t.OK == 0 {
			continue
		}
		switch t.Target {
		case targetDirect:
			d = t
		case targetProxy:
			p = t
		case targetGateway:
			g = t
		}
	}
	if d == nil || p == nil || g == nil {
		return nil
	}
	a := &added{
		ProxyP50: round3(p.P50 - d.P50), GatewayP50: round3(g.P50 - d.P50),
		ProxyP99: round3(p.P99 - d.P99), GatewayP99: round3(g.P99 - d.P99),
	}
	a.RatioP50, a.RatioP99 = ratio(a.GatewayP50, a.ProxyP50), ratio(a.GatewayP99, a.ProxyP99)
	if d.TTFBP50 > 0 {
		a.ProxyTTFB, a.GatewayTTFB = round3(p.TTFBP50-d.TTFBP50), round3(g.TTFBP50-d.TTFBP50)
		a.RatioTTFB = ratio(a.GatewayTTFB, a.ProxyTTFB)
		a.ProxyTTFB99, a.GatewayTTFB99 = round3(p.TTFBP99-d.TTFBP99), round3(g.TTFBP99-d.TTFBP99)
		a.RatioTTFB99 = ratio(a.GatewayTTFB99, a.ProxyTTFB99)
	}
	if rs.Mode == "closed" {
		a.ProxyRate, a.GatewayRate, a.GatewayRateD = ratio(p.Rate, d.Rate), ratio(g.Rate, p.Rate), ratio(g.Rate, d.Rate)
	}
	a.RoundRates, a.RoundTTFB = roundRatios(rs.Mode, d.Rounds, p.Rounds, g.Rounds)
	return a
}

// roundRatios are the gateway's ratios to the proxy in each round that all
// three targets ran: of the rates in the closed loop, of the added TTFB p50
// when the rounds have streams.
func roundRatios(mode string, d, p, g []roundReport) (rates, ttfb []float64) {
	for i := range min(len(d), len(p), len(g)) {
		if mode == "closed" {
			if r := ratio(g[i].Rate, p[i].Rate); r != nil {
				rates = append(rates, *r)
			}
		}
		if d[i].TTFBP50 > 0 {
			if r := ratio(g[i].TTFBP50-d[i].TTFBP50, p[i].TTFBP50-d[i].TTFBP50); r != nil {
				ttfb = append(ttfb, *r)
			}
		}
	}
	return rates, ttfb
}

// fmtRounds lists per-round ratios, in the order the rounds ran.
func fmtRounds(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2fx", x)
	}
	return strings.Join(parts, ", ")
}

// fmtSpread is the range of per-round ratios, for a goal's verdict: ""
// with fewer than two rounds.
func fmtSpread(xs []float64) string {
	if len(xs) < 2 {
		return ""
	}
	return fmt.Sprintf("; %.2f-%.2fx over its %d rounds", slices.Min(xs), slices.Max(xs), len(xs))
}

func round3(x float64) float64 { return math.Round(x*1e3) / 1e3 }

// ratio is x/y, nil unless y is at least a microsecond (or one request/s).
func ratio(x, y float64) *float64 {
	if y < 0.001 {
		return nil
	}
	r := math.Round(x/y*100) / 100
	return &r
}

func fmtRatio(r *float64) string {
	if r == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", *r)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func fmtMs(x float64) string { return fmt.Sprintf("%.3f", x) }

// fmtAdded is an added latency in ms with its sign: a gateway faster than
// the floor at some percentile adds a negative amount ("-0.160", not
// "+-0.160").
func fmtAdded(x float64) string { return fmt.Sprintf("%+.3f", x) }

// processOf names the process whose CPU and memory a target's row shows.
func processOf(target string) string {
	if target == targetDirect {
		return "fake"
	}
	return target
}

// writeMarkdown writes the report as markdown tables.
func writeMarkdown(w io.Writer, rep *report) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# gwbench\n\n`%s`\n\n", rep.Command)
	if len(rep.Scenarios) == 0 {
		p("%s %s, %d CPUs (GOMAXPROCS %d), %s.%s\n", rep.Go, rep.Platform, rep.NumCPU, rep.GOMAXPROCS, rep.Started, gatewaySentence(rep))
		writeSlowMarkdown(w, rep, rep.Slow)
		return
	}
	rate := fmt.Sprintf("%.0f req/s", rep.Rate)
	if len(rep.Goals) > 0 {
		rate = "the scenario's rate"
	}
	p("%s %s, %d CPUs (GOMAXPROCS %d), %s. Open loop: %s per target for %gs in %s (targets alternating), %gs warm-up each; latency from the scheduled send time. Peak: %d workers, closed loop. Fake upstream: latency %gms, %d chunks, %gms apart. /c1: %.0f%% continuing conversations with %d stored messages.%s\n\n",
		rep.Go, rep.Platform, rep.NumCPU, rep.GOMAXPROCS, rep.Started, rate, rep.DurationS, roundsText(rep), rep.WarmupS,
		rep.PeakWorkers, rep.UpstreamLatencyMs, rep.Chunks, rep.ChunkIntervalMs, rep.C1Continue*100, rep.C1History, gatewaySentence(rep))
	if len(rep.Scenarios) > 0 {
		writeScenarios(w, rep)
	}
	writeSlowMarkdown(w, rep, rep.Slow)
	writeGoalsMarkdown(w, rep.Goals)
}

// roundsText says in how many rounds the scenarios ran: -rounds, and the
// scenarios that ran in another number (the goals' ratio steps).
func roundsText(rep *report) string {
	text := plural(rep.Rounds, "round")
	var other []string
	for _, s := range rep.Scenarios {
		if s.Rounds != rep.Rounds && s.Rounds > 0 {
			other = append(other, fmt.Sprintf("%s in %d", s.Name, s.Rounds))
		}
	}
	if len(other) > 0 {
		text += " (" + strings.Join(other, ", ") + ")"
	}
	return text
}

// gatewaySentence says, for the report's header, how many gateway processes
// ran, where their log lines went and on which store; "" when the gateway was not a target.
func gatewaySentence(rep *report) string {
	if rep.Store == "" {
		return ""
	}
	procs := "1 process"
	if rep.GatewayReplicas > 1 {
		procs = fmt.Sprintf("%d replicas on one store, taking its requests in turn (their CPU time and RSS, idle and peak, are summed)", rep.GatewayReplicas)
		if len(rep.Slow) > 0 {
			procs += "; slow-streams: 1 process"
		}
	}
	store := "bbolt"
	if rep.Store == "postgresql" {
		store = "PostgreSQL " + rep.StoreVersion
	}
	logs := "gatewayd's JSON lines, appended to a file"
	if rep.GatewayLog == gatewayLogNone {
		logs = "none built (-gateway-log none)"
	}
	return fmt.Sprintf(" Gateway: %s. Logs: %s. Store: %s, %s.", procs, logs, store, rep.StoreAbout)
}

// writeScenarios writes the tables of the load scenarios.
func writeScenarios(w io.Writer, rep *report) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## Latency (ms)\n\n")
	p("| scenario | target | ok | errors | rate/s | p50 | p90 | p99 | p99.9 | max | TTFB p50 | TTFB p99 | truncated | lag p99 |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range rep.Scenarios {
		for _, t := range s.Targets {
			if t.Skipped != "" {
				p("| %s | %s | skipped | | | | | | | | | | | |\n", s.Name, t.Target)
				continue
			}
			ttfb50, ttfb99, trunc := "", "", ""
			if t.TTFBP50 > 0 || strings.Contains(s.Name, "sse") {
				ttfb50, ttfb99, trunc = fmtMs(t.TTFBP50), fmtMs(t.TTFBP99), fmt.Sprint(t.Truncated)
			}
			lag := fmtMs(t.LagP99)
			if s.Mode == "closed" {
				lag = ""
			}
			p("| %s | %s | %d | %d | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.Name, t.Target, t.OK, t.Errors, t.Rate,
				fmtMs(t.P50), fmtMs(t.P90), fmtMs(t.P99), fmtMs(t.P999), fmtMs(t.Max), ttfb50, ttfb99, trunc, lag)
		}
	}
	p("\nrate/s: successful requests per second. TTFB: time to the first SSE data event. lag p99: how late gwbench itself sent requests (included in every target's latencies alike). peak is closed-loop: its latencies run from the actual send.\n")

	p("\n## Added over direct (ms); gateway/proxy is the gateway's added latency over the floor's\n\n")
	p("| scenario | proxy +p50 | gateway +p50 | gateway/proxy p50 | proxy +p99 | gateway +p99 | gateway/proxy p99 | proxy +TTFB p50 | gateway +TTFB p50 | gateway/proxy TTFB |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range rep.Scenarios {
		a := s.Added
		if a == nil || s.Mode == "closed" {
			continue
		}
		ttfb := "| | |"
		if a.RatioTTFB != nil || a.ProxyTTFB != 0 || a.GatewayTTFB != 0 {
			ttfb = fmt.Sprintf("%s | %s | %s |", fmtMs(a.ProxyTTFB), fmtMs(a.GatewayTTFB), fmtRatio(a.RatioTTFB))
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s\n", s.Name, fmtMs(a.ProxyP50), fmtMs(a.GatewayP50), fmtRatio(a.RatioP50),
			fmtMs(a.ProxyP99), fmtMs(a.GatewayP99), fmtRatio(a.RatioP99), ttfb)
	}
	for _, s := range rep.Scenarios {
		if a := s.Added; a != nil && s.Mode != "closed" && len(a.RoundTTFB) > 1 {
			p("\n%s, gateway/proxy TTFB round by round: %s.\n", s.Name, fmtRounds(a.RoundTTFB))
		}
	}
	for _, s := range rep.Scenarios {
		if a := s.Added; a != nil && s.Mode == "closed" {
			p("\n%s (closed loop, %d workers): proxy %s of direct's req/s, gateway %s of the proxy's (%s of direct's).",
				s.Name, s.Workers, fmtRatio(a.ProxyRate), fmtRatio(a.GatewayRate), fmtRatio(a.GatewayRateD))
			if len(a.RoundRates) > 1 {
				p(" Gateway/proxy round by round: %s.", fmtRounds(a.RoundRates))
			}
			p("\n")
		}
	}

	p("\n## Server processes\n\n")
	if rep.GatewayIdleRSSMB > 0 {
		p("Gateway idle RSS (after start, before any request): %.1f MiB.\n\n", rep.GatewayIdleRSSMB)
	}
	p("| scenario | process | CPU s / 1000 req | peak RSS MiB | gwbench CPU s / 1000 req |\n|---|---|--:|--:|--:|\n")
	for _, s := range rep.Scenarios {
		for _, t := range s.Targets {
			if t.Skipped == "" {
				p("| %s | %s | %.4f | %.1f | %.4f |\n", s.Name, processOf(t.Target), t.CPUPer1k, t.PeakRSSMB, t.GenCPUPer1k)
			}
		}
	}
	p("\nCPU is read in /proc at 10 ms granularity around each target's rounds. The fake serves all three targets: its CPU is counted during the direct rounds only, its peak RSS over the whole scenario. The last column is the load generator's own CPU while it loaded that target (it shares the machine).\n")

	var notes []string
	for _, s := range rep.Scenarios {
		for _, t := range s.Targets {
			if t.Skipped != "" {
				notes = append(notes, fmt.Sprintf("%s, %s: skipped: %s", s.Name, t.Target, t.Skipped))
			}
			for _, k := range sortedKinds(t.ErrorKinds) {
				notes = append(notes, fmt.Sprintf("%s, %s: %d x %s", s.Name, t.Target, t.ErrorKinds[k], k))
			}
			if t.Persisted != nil {
				notes = append(notes, fmt.Sprintf("%s, %s: %s", s.Name, t.Target, t.Persisted))
			}
		}
		for _, n := range s.Notes {
			notes = append(notes, s.Name+", "+n)
		}
	}
	if len(notes) > 0 {
		p("\n## Notes and errors\n\n")
		for _, n := range notes {
			p("- %s\n", n)
		}
	}
}

// writeJSONFile writes the report as indented JSON to path.
func writeJSONFile(path string, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
