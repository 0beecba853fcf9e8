package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// bench is one gwbench run: the server processes and the targets over them.
type bench struct {
	cfg     config
	log     io.Writer // progress lines
	servers []*server
	fake    *server
	targets []*target
	dataDir string
	// storeURL is the PostgreSQL database of the gateways, "" for bbolt;
	// store describes the store for the report.
	storeURL string
	store    storeDesc
	// runTag makes this run's conversation ids its own, so that a run on a
	// database that earlier runs used does not continue their conversations;
	// pools counts the pools created, so that a scenario run twice (the goal
	// plan's two c1-sse steps) does not continue its first run's either.
	runTag  string
	pools   int
	cleanup []func()
}

// run starts the servers, runs the scenarios and writes the report.
func run(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find gwbench's own executable: %w", err)
	}
	b := &bench{cfg: cfg, log: &lockedWriter{w: stderr}, runTag: strings.ToLower(rand.Text()[:8])}
	defer b.close()
	regular := slices.ContainsFunc(scenarios, func(sc scenario) bool { return slices.Contains(cfg.scenarios, sc.name) })
	if slices.Contains(cfg.targets, targetGateway) {
		if err := b.openStore(ctx); err != nil {
			return err
		}
	}
	if regular || cfg.goals {
		if err := b.start(exe); err != nil {
			return err
		}
	}
	rep := b.newReport()
	if cfg.goals {
		b.runGoals(ctx, exe, rep)
		return b.finish(ctx, rep, stdout)
	}
	for _, sc := range scenarios {
		if !slices.Contains(cfg.scenarios, sc.name) {
			continue
		}
		rep.Scenarios = append(rep.Scenarios, b.runScenario(ctx, sc))
		if ctx.Err() != nil {
			break
		}
	}
	if slices.Contains(cfg.scenarios, scenarioSlowStreams) && ctx.Err() == nil {
		rep.SlowStreams, rep.SlowChunks, rep.SlowIntervalMs, rep.SlowRamp = cfg.streams, cfg.slowChunks, ms(cfg.slowInterval), cfg.slowRamp
		rep.Slow = b.runSlowStreams(ctx, exe)
	}
	return b.finish(ctx, rep, stdout)
}

// finish writes the report: markdown to stdout, and JSON when -json asks.
func (b *bench) finish(ctx context.Context, rep *report, stdout io.Writer) error {
	writeMarkdown(stdout, rep)
	if b.cfg.jsonOut != "" {
		if err := writeJSONFile(b.cfg.jsonOut, rep); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// start starts the fake upstream and, for the selected targets, the proxy and
// the gateway, each in a process of its own.
func (b *bench) start(exe string) error {
	cfg := b.cfg
	fake, err := b.startServer(exe, nil, cmdServeFake, "-latency", cfg.upstreamLatency.String(),
		"-chunks", strconv.Itoa(cfg.chunks), "-interval", cfg.chunkInterval.String())
	if err != nil {
		return err
	}
	b.fake = fake
	for _, name := range allTargets {
		if !slices.Contains(cfg.targets, name) {
			continue
		}
		t := &target{name: name, procs: []*server{fake}, client: newClient(cfg.conns, cfg.timeout)}
		switch name {
		case targetProxy:
			var s *server
			s, err = b.startServer(exe, nil, cmdServeProxy, "-upstream", fake.url, "-conns", strconv.Itoa(cfg.conns))
			t.procs = []*server{s}
		case targetGateway:
			t.token = "gwbench_" + rand.Text()
			t.procs, err = b.startGateways(exe, fake.url, t.token)
		}
		if err != nil {
			return err
		}
		b.targets = append(b.targets, t)
		for i, s := range t.procs {
			what := name
			if len(t.procs) > 1 {
				what = fmt.Sprintf("%s replica %d/%d", name, i+1, len(t.procs))
			}
			fmt.Fprintf(b.log, "gwbench: %s at %s (pid %d)\n", what, s.url, s.pid())
		}
	}
	return nil
}

// startGateways starts -gateway-replicas gateway processes on the store, one
// after the other. Only the first serves -gateway-pprof: an address takes one
// listener.
func (b *bench) startGateways(exe, fakeURL, token string) ([]*server, error) {
	args := []string{"-upstream", fakeURL, "-token", token}
	logPath, err := b.gatewayLogPath()
	if err != nil {
		return nil, err
	}
	if logPath != "" {
		args = append(args, "-log", logPath)
	}
	if b.storeURL == "" {
		if err := b.makeDataDir(); err != nil {
			return nil, err
		}
		args = append(args, "-data-dir", b.dataDir)
	}
	var procs []*server
	for i := range b.cfg.replicas {
		a := args
		if i == 0 && b.cfg.gatewayPprof != "" {
			a = append(slices.Clip(args), "-pprof", b.cfg.gatewayPprof)
		}
		s, err := b.startServer(exe, b.gatewayEnv(), cmdServeGateway, a...)
		if err != nil {
			return nil, err
		}
		procs = append(procs, s)
	}
	return procs, nil
}

// gatewayEnv is what a gateway process gets added to its environment:
// -gateway-env and the store's URL (empty for bbolt, so that an inherited
// one does not count).
func (b *bench) gatewayEnv() []string {
	return append(slices.Clip(b.cfg.gatewayEnv), storeURLEnv+"="+b.storeURL)
}

func (b *bench) startServer(exe string, env []string, name string, args ...string) (*server, error) {
	s, err := startServer(exe, append([]string{name, "-addr", "127.0.0.1:0"}, args...), env, b.log)
	if err != nil {
		return nil, err
	}
	b.servers = append(b.servers, s)
	return s, nil
}

// gatewayLogNone is the -gateway-log that builds no log line.
const gatewayLogNone = "none"

// gatewayLogPath is the file the gateway processes append their log lines to:
// -gateway-log, or gateway.log in a new temporary directory that close
// removes; "" for -gateway-log none.
func (b *bench) gatewayLogPath() (string, error) {
	switch b.cfg.gatewayLog {
	case gatewayLogNone:
		return "", nil
	case "":
		dir, err := os.MkdirTemp("", "gwbench-log-")
		if err != nil {
			return "", err
		}
		b.cleanup = append(b.cleanup, func() { os.RemoveAll(dir) })
		return filepath.Join(dir, "gateway.log"), nil
	}
	return b.cfg.gatewayLog, nil
}

// makeDataDir picks the gateway's data directory: -data-dir, or a new
// temporary directory on disk that close removes.
func (b *bench) makeDataDir() error {
	if b.cfg.dataDir != "" {
		b.dataDir = b.cfg.dataDir
		return nil
	}
	dir, err := os.MkdirTemp("", "gwbench-")
	if err != nil {
		return err
	}
	b.dataDir = dir
	b.cleanup = append(b.cleanup, func() { os.RemoveAll(dir) })
	return nil
}

// close closes the load generator's connections (a server's Shutdown waits
// for connections that never carried a request), stops the servers, the
// gateway and the proxy before the fake, and removes the temporary data
// directory.
func (b *bench) close() {
	for _, t := range b.targets {
		t.client.CloseIdleConnections()
	}
	for i := len(b.servers) - 1; i >= 0; i-- {
		if err := b.servers[i].stop(); err != nil {
			fmt.Fprintf(b.log, "gwbench: stop %s: %v\n", b.servers[i].name, err)
		}
	}
	for _, f := range b.cleanup {
		f()
	}
}

// newReport starts the report with the run's settings and the gateway's idle
// memory.
func (b *bench) newReport() *report {
	cfg := b.cfg
	rep := &report{
		Command: cfg.command, Started: time.Now().UTC().Format(time.RFC3339),
		Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Rate: cfg.rate, DurationS: cfg.duration.Seconds(), WarmupS: cfg.warmup.Seconds(), Rounds: cfg.rounds,
		PeakWorkers: cfg.peakWorkers, UpstreamLatencyMs: ms(cfg.upstreamLatency),
		Chunks: cfg.chunks, ChunkIntervalMs: ms(cfg.chunkInterval),
		C1Continue: cfg.c1Continue, C1History: cfg.c1History,
	}
	if slices.Contains(cfg.targets, targetGateway) {
		rep.Store, rep.StoreVersion, rep.StoreAbout = b.store.name, b.store.version, b.store.about
		rep.GatewayReplicas = cfg.replicas
		rep.GatewayLog = "file"
		if cfg.gatewayLog == gatewayLogNone {
			rep.GatewayLog = gatewayLogNone
		}
	}
	for _, t := range b.targets {
		if t.name == targetGateway {
			if st := t.stat(); st.RSSKB > 0 {
				rep.GatewayIdleRSSMB = mb(st.RSSKB)
			}
		}
	}
	return rep
}

// runScenario checks each target with one request, creates the continuing
// conversations of a /c1 scenario at the gateway, warms every target up, then
// runs the rounds, the targets alternating (in a rotating order), and reads
// the CPU time of each target's processes (and of gwbench itself) around its
// rounds and their peak RSS over all rounds.
func (b *bench) runScenario(ctx context.Context, sc scenario) scenarioReport {
	cfg := b.cfg
	rs := scenarioReport{Name: sc.name, About: sc.about, Mode: "open", Rate: cfg.rate, Rounds: cfg.rounds}
	if sc.closed {
		rs.Mode, rs.Rate, rs.Workers = "closed", 0, cfg.peakWorkers
	}
	fmt.Fprintf(b.log, "gwbench: %s: %s\n", sc.name, sc.about)
	var active []*target
	reqs := map[*target]*requester{}
	tallies := map[*target]*tally{}
	for _, t := range b.targets {
		tr := targetReport{Target: t.name}
		req, err := b.prepare(ctx, sc, t, &rs)
		if err != nil {
			tr.Skipped = err.Error()
			fmt.Fprintf(b.log, "gwbench: %s: %s skipped: %v\n", sc.name, t.name, err)
			rs.Targets = append(rs.Targets, tr)
			continue
		}
		active = append(active, t)
		reqs[t], tallies[t] = req, newTally()
		rs.Targets = append(rs.Targets, tr)
	}
	discard := func(sample) {}
	for _, t := range active {
		b.load(ctx, sc, reqs[t], cfg.warmup, discard)
	}
	for _, t := range active {
		t.resetPeakRSS()
	}
	round := cfg.duration / time.Duration(cfg.rounds)
	for r := range cfg.rounds {
		for j := range active {
			t := active[(r+j)%len(active)]
			before := t.stat()
			genBefore, _ := readProcStat(os.Getpid())
			res := b.load(ctx, sc, reqs[t], round, tallies[t].add)
			after := t.stat()
			genAfter, _ := readProcStat(os.Getpid())
			tallies[t].addRound(res, after.CPU-before.CPU, genAfter.CPU-genBefore.CPU)
		}
		fmt.Fprintf(b.log, "gwbench: %s: round %d/%d done\n", sc.name, r+1, cfg.rounds)
	}
	for i := range rs.Targets {
		for _, t := range active {
			if t.name == rs.Targets[i].Target {
				rs.Targets[i] = tallies[t].report(t.name, t.stat().PeakRSSKB)
				b.verify(ctx, sc, t, reqs[t], &rs.Targets[i])
			}
		}
	}
	rs.Added = addedOver(rs)
	return rs
}

// verify reads back, after a /c1 scenario's rounds, every conversation the
// gateway acknowledged a turn of (in the warm-up or the rounds) and notes in
// tr what the store lacks.
func (b *bench) verify(ctx context.Context, sc scenario, t *target, req *requester, tr *targetReport) {
	if req.acks == nil {
		return
	}
	fmt.Fprintf(b.log, "gwbench: %s: reading the acknowledged turns back\n", sc.name)
	tr.Persisted = verifyPersisted(ctx, t, req.acks)
	fmt.Fprintf(b.log, "gwbench: %s: %s\n", sc.name, tr.Persisted)
}

// prepare returns the requester of sc for t after one request to each of
// its processes that must succeed; for the gateway in a /c1 scenario it first
// creates the pool of continuing conversations.
func (b *bench) prepare(ctx context.Context, sc scenario, t *target, rs *scenarioReport) (*requester, error) {
	cfg := b.cfg
	req := newRequester(sc, t, cfg, nil)
	for i := range req.urls {
		if out := req.do(ctx, i); out.err != nil {
			return nil, fmt.Errorf("first request to %s: %w%s", strings.Join(req.urls, ", "), out.err, hint(out.err))
		}
	}
	if sc.c1 && t.name == targetGateway {
		req.acks = newAcks()
	}
	if !sc.c1 || t.name != targetGateway || cfg.c1Continue <= 0 {
		return req, nil
	}
	n := poolSize(cfg)
	start := time.Now()
	b.pools++
	pool, err := createConversations(ctx, t, fmt.Sprintf("%s-%s-%d", b.runTag, sc.name, b.pools), n, cfg.c1History)
	if err != nil {
		return nil, fmt.Errorf("creating the continuing conversations: %w%s", err, hint(err))
	}
	rs.Notes = append(rs.Notes, fmt.Sprintf("gateway: %d continuing conversations of %d messages created in %.1fs before the warm-up; each is continued about %.1f times (keep_last_turns %d, so the model always gets %d history messages, as direct and proxy do)",
		n, cfg.c1History, time.Since(start).Seconds(),
		float64(scheduledCount(cfg.rate, cfg.warmup+cfg.duration))*cfg.c1Continue/float64(n), cfg.c1History/2, cfg.c1History))
	req = newRequester(sc, t, cfg, pool)
	req.acks = newAcks()
	for k, id := range pool.ids {
		req.acks.expect(id, userOf(k), cfg.c1History)
	}
	return req, nil
}

// load runs one round (or warm-up) of sc with req for d.
func (b *bench) load(ctx context.Context, sc scenario, req *requester, d time.Duration, sink func(sample)) loadResult {
	if sc.closed {
		return closedLoop{Workers: b.cfg.peakWorkers, Duration: d}.run(ctx, req.do, sink)
	}
	return openLoop{Rate: b.cfg.rate, Duration: d, MaxInflight: b.cfg.maxInflight}.run(ctx, req.do, sink)
}

// newRequester returns how sc's requests are sent to t. The /v1 scenarios
// send the same chat completion to every target. In the /c1 scenarios the
// gateway gets POST /c1/chat (a new conversation, or a turn of a pooled one
// when pool is non-nil), and direct and proxy get the chat completion the
// gateway would send upstream: the user message alone, or after -c1-history
// messages.
//
// A target of several processes gets them in turn. On /c1 new conversations
// and turns of pooled ones take turns separately (the pool says where a
// conversation's turn goes): by request index they would follow the pattern
// of continuing requests, and with two replicas at -c1-continue 0.5 one would
// get every new conversation, the other every continued one.
func newRequester(sc scenario, t *target, cfg config, pool *convPool) *requester {
	r := &requester{client: t.client, token: t.token, stream: sc.stream, urls: t.urls("/v1/chat/completions")}
	n := len(r.urls)
	switch {
	case !sc.c1:
		body := v1Body(sc.stream)
		r.build = func(i int) ([]byte, string, int) { return body, "", i % n }
	case t.name != targetGateway:
		fresh, cont := chatCompletionBody(0, sc.stream), chatCompletionBody(cfg.c1History, sc.stream)
		r.build = func(i int) ([]byte, string, int) {
			if continuing(i, cfg.c1Continue) {
				return cont, "", i % n
			}
			return fresh, "", i % n
		}
	default:
		r.urls = t.urls("/c1/chat")
		fresh := c1Body("", 0, sc.stream)
		var news atomic.Uint64 // new conversations sent
		r.build = func(i int) ([]byte, string, int) {
			if pool != nil && continuing(i, cfg.c1Continue) {
				id, user, proc := pool.pick()
				return c1Body(id, cfg.c1History/2, sc.stream), user, proc
			}
			return fresh, userOf(i), int((news.Add(1) - 1) % uint64(n))
		}
	}
	return r
}

// hint explains an error the gateway answers while it is being built.
func hint(err error) string {
	var se *statusError
	if errors.As(err, &se) && se.Code == "route_not_found" {
		return " (the route is not wired into the gateway's routes table yet)"
	}
	return ""
}

// lockedWriter serialises writes: the progress lines and the children's
// stderr share it.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
