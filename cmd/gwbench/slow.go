package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The slow-streams scenario checks the memory goal of many idle-ish streams:
// -streams concurrent POST /v1/chat/completions streams, each sending one
// chunk per -slow-interval for -slow-chunks chunks, held open at the same
// time. It is not a latency measure and is not in the default -scenarios: it
// runs after the others, with servers of its own (a fake upstream with the
// slow reply, then the proxy and the gateway one after the other, each fresh,
// so that the RSS read is of this load alone).
const scenarioSlowStreams = "slow-streams"

// slowReport is the result of the slow-streams scenario for one target.
type slowReport struct {
	Target string `json:"target"`
	// Upstream is how the server reaches the fake: "http/1.1" (one connection
	// per stream) or "h2c" (HTTP/2 without TLS, streams multiplexed).
	Upstream string `json:"upstream"`
	Streams  int    `json:"streams"`
	OK       int    `json:"ok"`
	Errors   int    `json:"errors"`
	// Truncated streams did not end with data: [DONE].
	Truncated int `json:"truncated"`
	// MaxOpen is the most streams open at once (first event received, last
	// not yet).
	MaxOpen int `json:"max_open"`
	// IdleRSSMB is the server's RSS before the streams; PeakRSSMB its high-water
	// mark (VmHWM) over the run; RSSAllOpenMB its RSS in the sample (every
	// 100 ms) that saw the most streams open, SampledOpen of them.
	IdleRSSMB    float64 `json:"idle_rss_mb"`
	PeakRSSMB    float64 `json:"peak_rss_mb"`
	RSSAllOpenMB float64 `json:"rss_all_open_mb"`
	SampledOpen  int     `json:"sampled_open"`
	// KBPerStream is (PeakRSS - IdleRSS) / MaxOpen.
	KBPerStream float64        `json:"kb_per_stream"`
	TTFBP50     float64        `json:"ttfb_p50_ms"`
	TTFBP99     float64        `json:"ttfb_p99_ms"`
	DurationS   float64        `json:"duration_s"`
	ErrorKinds  map[string]int `json:"error_kinds,omitempty"`
	Skipped     string         `json:"skipped,omitempty"`
}

// runSlowStreams runs the slow-streams scenario against the proxy and the
// gateway, whichever of them -targets names.
func (b *bench) runSlowStreams(ctx context.Context, exe string) []slowReport {
	cfg := b.cfg
	proto := "http/1.1"
	if cfg.slowH2C {
		proto = "h2c"
	}
	fmt.Fprintf(b.log, "gwbench: %s: %d streams, %d chunks %v apart, opened at %g/s, upstream %s\n",
		scenarioSlowStreams, cfg.streams, cfg.slowChunks, cfg.slowInterval, cfg.slowRamp, proto)
	if need := 2*cfg.streams + 64; fdLimit() < need && !cfg.slowH2C {
		fmt.Fprintf(b.log, "gwbench: %s: warning: the servers need about %d file descriptors (one per client and one per upstream connection) and RLIMIT_NOFILE is %d; use fewer -streams or -slow-h2c\n",
			scenarioSlowStreams, need, fdLimit())
	}
	h2c := []string{}
	if cfg.slowH2C {
		h2c = []string{"-h2c"}
	}
	fake, err := startServer(exe, append([]string{cmdServeFake, "-addr", "127.0.0.1:0",
		"-chunks", strconv.Itoa(cfg.slowChunks), "-interval", cfg.slowInterval.String()}, h2c...), nil, b.log)
	if err != nil {
		return []slowReport{{Target: "fake", Skipped: err.Error()}}
	}
	defer fake.stop()
	var out []slowReport
	for _, name := range []string{targetProxy, targetGateway} {
		if !slices.Contains(cfg.targets, name) || ctx.Err() != nil {
			continue
		}
		rep := slowReport{Target: name, Upstream: proto, Streams: cfg.streams}
		t, stop, err := b.startSlowTarget(exe, name, fake.url, h2c)
		if err != nil {
			rep.Skipped = err.Error()
			out = append(out, rep)
			continue
		}
		b.slowStreams(ctx, t, &rep)
		if err := stop(); err != nil {
			fmt.Fprintf(b.log, "gwbench: stop %s: %v\n", name, err)
		}
		out = append(out, rep)
	}
	return out
}

// startSlowTarget starts a fresh proxy or gateway in front of the slow fake.
// The gateway is one process on the store of the run, whatever
// -gateway-replicas says: the scenario measures one process's memory per
// stream.
func (b *bench) startSlowTarget(exe, name, fakeURL string, extra []string) (*target, func() error, error) {
	cfg := b.cfg
	client := slowClient(cfg)
	t := &target{name: name, client: client}
	args := []string{"-addr", "127.0.0.1:0", "-upstream", fakeURL}
	switch name {
	case targetProxy:
		args = append(append([]string{cmdServeProxy}, args...), "-conns", strconv.Itoa(cfg.conns))
	case targetGateway:
		t.token = "gwbench_slow_" + strconv.FormatInt(time.Now().UnixNano(), 36)
		args = append(append([]string{cmdServeGateway}, args...), "-token", t.token)
		if b.storeURL == "" {
			dir, err := b.slowDataDir()
			if err != nil {
				return nil, nil, err
			}
			args = append(args, "-data-dir", dir)
		}
		if cfg.gatewayPprof != "" {
			args = append(args, "-pprof", cfg.gatewayPprof)
		}
	}
	var env []string
	if name == targetGateway {
		env = b.gatewayEnv()
	}
	srv, err := startServer(exe, append(args, extra...), env, b.log)
	if err != nil {
		return nil, nil, err
	}
	t.procs = []*server{srv}
	fmt.Fprintf(b.log, "gwbench: %s: %s at %s (pid %d)\n", scenarioSlowStreams, name, srv.url, srv.pid())
	return t, func() error { client.CloseIdleConnections(); return srv.stop() }, nil
}

// slowDataDir is a fresh data directory for the slow-streams gateway: in
// -data-dir, or a temporary one that close removes.
func (b *bench) slowDataDir() (string, error) {
	if b.cfg.dataDir != "" {
		return filepath.Join(b.cfg.dataDir, "slow-streams-"+strconv.FormatInt(time.Now().UnixNano(), 36)), nil
	}
	dir, err := os.MkdirTemp("", "gwbench-slow-")
	if err != nil {
		return "", err
	}
	b.cleanup = append(b.cleanup, func() { os.RemoveAll(dir) })
	return dir, nil
}

// slowClient is the load generator's client of the slow streams: no total
// time limit short of the streams' length, no idle connections kept.
func slowClient(cfg config) *http.Client {
	life := time.Duration(cfg.slowChunks+2)*cfg.slowInterval + time.Duration(float64(cfg.streams)/cfg.slowRamp*float64(time.Second))
	return &http.Client{
		Timeout: life + cfg.timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     10 * time.Second,
			DisableCompression:  true,
			ReadBufferSize:      1 << 10,
			WriteBufferSize:     1 << 10,
		},
	}
}

// slowStreams opens the streams at -slow-ramp per second, each read to its
// end in a goroutine of its own, samples the server's RSS every 100 ms and
// fills rep.
func (b *bench) slowStreams(ctx context.Context, t *target, rep *slowReport) {
	cfg := b.cfg
	pid := t.procs[0].pid()
	time.Sleep(500 * time.Millisecond) // let the server settle
	if st, err := readProcStat(pid); err == nil {
		rep.IdleRSSMB = mb(st.RSSKB)
	}
	resetPeakRSS(pid)
	req := newRequester(scenario{name: scenarioSlowStreams, stream: true}, t, cfg, nil)

	var (
		open, maxOpen atomic.Int64
		tl            = newTally()
		wg            sync.WaitGroup
		// The sample taken with the most streams open (the largest RSS among
		// those): written by the sampler, read after it ended.
		sampleOpen, sampleRSS int64
	)
	stopSampler := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampler:
				return
			case <-tick.C:
			}
			st, err := readProcStat(pid)
			if err != nil {
				continue
			}
			if n := open.Load(); n > sampleOpen || (n == sampleOpen && st.RSSKB > sampleRSS) {
				sampleOpen, sampleRSS = n, st.RSSKB
			}
		}
	}()

	start := time.Now()
	pace := func(i int) time.Time { return start.Add(scheduleOffset(cfg.slowRamp, i)) }
	for i := range cfg.streams {
		if d := time.Until(pace(i)); d > 0 {
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := time.Now()
			counted := false
			out := req.doWith(ctx, i, func() { // first event
				counted = true
				n := open.Add(1)
				for m := maxOpen.Load(); n > m && !maxOpen.CompareAndSwap(m, n); m = maxOpen.Load() {
				}
			})
			if counted {
				open.Add(-1)
			}
			s := sample{Index: i, Latency: time.Since(at), Err: out.err, Truncated: out.truncated}
			if !out.firstEvent.IsZero() {
				s.TTFB = out.firstEvent.Sub(at)
			}
			tl.add(s)
		}()
	}
	wg.Wait()
	close(stopSampler)
	<-samplerDone
	rep.DurationS = time.Since(start).Seconds()
	st, _ := readProcStat(pid)
	r := tl.report(t.name, st.PeakRSSKB)
	rep.OK, rep.Errors, rep.Truncated, rep.ErrorKinds = r.OK, r.Errors, r.Truncated, r.ErrorKinds
	rep.TTFBP50, rep.TTFBP99 = r.TTFBP50, r.TTFBP99
	rep.MaxOpen = int(maxOpen.Load())
	rep.PeakRSSMB, rep.RSSAllOpenMB, rep.SampledOpen = r.PeakRSSMB, mb(sampleRSS), int(sampleOpen)
	if rep.MaxOpen > 0 {
		rep.KBPerStream = float64(int64((rep.PeakRSSMB-rep.IdleRSSMB)*1024/float64(rep.MaxOpen)*10)) / 10
	}
	fmt.Fprintf(b.log, "gwbench: %s: %s: %d ok, %d errors, %d open at most, peak RSS %.1f MiB\n",
		scenarioSlowStreams, t.name, rep.OK, rep.Errors, rep.MaxOpen, rep.PeakRSSMB)
}

// writeSlowMarkdown writes the slow-streams section of the report.
func writeSlowMarkdown(w io.Writer, cfg *report, reps []slowReport) {
	if len(reps) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\n## Slow streams (memory)\n\n")
	n := "the streams column's"
	if cfg.SlowStreams > 0 {
		n = strconv.Itoa(cfg.SlowStreams)
	}
	p("%s concurrent streams of %d chunks, one every %gms, opened at %g/s, against a fresh server each; the fake upstream sends the chunks.\n\n",
		n, cfg.SlowChunks, cfg.SlowIntervalMs, cfg.SlowRamp)
	p("| target | upstream | streams | ok | errors | truncated | max open | idle RSS MiB | RSS (open) MiB | peak RSS MiB | KiB/stream | TTFB p50 | TTFB p99 |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range reps {
		if r.Skipped != "" {
			p("| %s | %s | skipped: %s | | | | | | | | | | |\n", r.Target, r.Upstream, r.Skipped)
			continue
		}
		p("| %s | %s | %d | %d | %d | %d | %d | %.1f | %.1f (%d) | %.1f | %.1f | %s | %s |\n", r.Target, r.Upstream, r.Streams, r.OK, r.Errors,
			r.Truncated, r.MaxOpen, r.IdleRSSMB, r.RSSAllOpenMB, r.SampledOpen, r.PeakRSSMB, r.KBPerStream, fmtMs(r.TTFBP50), fmtMs(r.TTFBP99))
	}
	for _, r := range reps {
		for _, k := range sortedKinds(r.ErrorKinds) {
			p("\n- %s: %d x %s", r.Target, r.ErrorKinds[k], k)
		}
	}
	p("\n\nRSS (open): the RSS sampled (every 100 ms) with the most streams open, their number in parentheses. KiB/stream: (peak RSS - idle RSS) / max open. TTFB from the actual send.\n")
}

// fdLimit returns this process's RLIMIT_NOFILE, which the servers inherit.
func fdLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 1 << 20
	}
	return int(rl.Max)
}
