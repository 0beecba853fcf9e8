// Gwbench is chatgw's load benchmark. It measures what the gateway adds on top
// of calling the model directly, against the floor of one extra Go HTTP hop.
//
// It starts, each in a process of its own (gwbench re-executes itself with a
// hidden serve-fake, serve-proxy or serve-gateway subcommand), the project's
// fake OpenAI backend (upstream/upstreamtest), a bare httputil.ReverseProxy to
// it, and the gateway with its real middleware (a token with a 1e9/s rate
// limit, the built-in model catalog with the fake as local backend, the bbolt
// store in a temporary directory on disk, logs discarded). Then, for each
// scenario, it sends the same load to the three targets, alternating in
// rounds: "direct" (the fake), "proxy" (the floor) and "gateway".
//
// The load is open-loop: requests are sent at fixed times, each in its own
// goroutine, and latency is measured from the scheduled send time, so a slow
// answer is never hidden by a delayed schedule (no coordinated omission). The
// peak scenario is closed-loop instead: -peak-workers clients back to back.
//
// The report (markdown on stdout, -json for a file) gives per scenario and
// target p50, p90, p99, p99.9, max, achieved rate, errors, for streams the time
// to the first event and truncated streams; what proxy and gateway add over
// direct and the gateway's added latency as a ratio to the proxy's; and each
// server's CPU seconds per 1000 requests and peak RSS. After a /c1 scenario
// it reads back, through the gateway, every conversation that had a turn
// acknowledged, and reports the acknowledged turns its store lacks.
//
// With -store-url the gateway uses PostgreSQL (store/pgstore) instead of
// bbolt: a database by URL, or "pgtest", a throw-away cluster gwbench starts
// for the run (internal/pgtest, fsync on). With -gateway-replicas N it runs as
// N processes on that one store, the load generator sending the gateway's
// requests to each in turn (no proxy in between); their CPU time and RSS are
// summed.
//
// Usage:
//
//	go run ./cmd/gwbench                       # everything: about 3 minutes
//	go run ./cmd/gwbench -quick                # a few seconds, to check it works
//	go run ./cmd/gwbench -scenarios v1-json,peak -rate 5000 -duration 20s -json out.json
//	go run ./cmd/gwbench -store-url pgtest -gateway-replicas 2 -scenarios v1-json,c1-json
//	go run ./cmd/gwbench -goals                # issue 18's goals, judged: about 6 minutes
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(os.Args) > 1 && isServeCommand(os.Args[1]) {
		err = serve(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout)
	} else {
		var cfg config
		cfg, err = parseFlags(os.Args[1:], os.Stderr)
		if err == nil {
			err = run(ctx, cfg, os.Stdout, os.Stderr)
		}
	}
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwbench:", err)
		os.Exit(1)
	}
}

// config is the parsed command line.
type config struct {
	rate            float64
	duration        time.Duration
	warmup          time.Duration
	rounds          int
	roundsGiven     bool // -rounds was on the command line
	scenarios       []string
	targets         []string
	upstreamLatency time.Duration
	chunks          int
	chunkInterval   time.Duration
	peakWorkers     int
	conns           int
	maxInflight     int
	timeout         time.Duration
	c1Continue      float64
	c1History       int
	c1Convs         int
	dataDir         string
	storeURL        string // -store-url: "" (bbolt), storePgtest[?params] or postgres://...
	replicas        int    // gateway processes on the one store
	jsonOut         string
	gatewayPprof    string
	gatewayEnv      []string // KEY=VALUE added to the gateway process's environment
	gatewayLog      string   // -gateway-log: "" (a temporary file), gatewayLogNone or a path
	streams         int
	slowChunks      int
	slowInterval    time.Duration
	slowRamp        float64
	slowH2C         bool
	quick           bool
	goals           bool   // -goals: issue 18's plan instead of -scenarios
	command         string // the command line, for the report
}

// parseFlags parses the command line. -quick changes the defaults of the flags
// that are not given.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("gwbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Float64Var(&cfg.rate, "rate", 2000, "open loop: requests per second sent to each target")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "measured time per scenario and target")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured load per scenario and target before the rounds")
	fs.IntVar(&cfg.rounds, "rounds", 5, "rounds the duration is cut into; the targets alternate each round (-goals: 20 for its v1-sse and peak steps unless given)")
	scen := fs.String("scenarios", strings.Join(scenarioNames(), ","), "comma-separated scenarios; also "+scenarioSlowStreams+" (not by default): the memory of many slow concurrent streams")
	targ := fs.String("targets", strings.Join(allTargets, ","), "comma-separated targets: direct, proxy, gateway")
	fs.DurationVar(&cfg.upstreamLatency, "upstream-latency", 0, "fake upstream: wait before the response headers")
	fs.IntVar(&cfg.chunks, "chunks", 16, "fake upstream: content chunks of a stream")
	fs.DurationVar(&cfg.chunkInterval, "chunk-interval", 0, "fake upstream: wait between stream events")
	fs.IntVar(&cfg.peakWorkers, "peak-workers", 64, "peak: concurrent clients of the closed loop")
	fs.IntVar(&cfg.conns, "conns", 1024, "max idle keep-alive connections per host (load generator and proxy)")
	fs.IntVar(&cfg.maxInflight, "max-inflight", 10000, "open loop: requests in flight per target beyond which scheduled requests are dropped (counted as errors)")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "time limit of one request")
	fs.Float64Var(&cfg.c1Continue, "c1-continue", 0.5, "/c1: fraction of requests that continue a conversation")
	fs.IntVar(&cfg.c1History, "c1-history", 20, "/c1: stored messages of a continuing conversation (even)")
	fs.IntVar(&cfg.c1Convs, "c1-convs", 0, "/c1: continuing conversations to create; 0: enough that each is continued at most 8 times")
	fs.StringVar(&cfg.dataDir, "data-dir", "", "the gateway's data directory; default: a temporary directory, removed at the end")
	fs.StringVar(&cfg.storeURL, "store-url", "", "the gateway's store: postgres://... (or postgresql://...) for that PostgreSQL database, "+storePgtest+" for a throw-away PostgreSQL cluster gwbench starts (fsync on; "+storePgtest+"?pool_max_conns=16 adds pgx parameters); default: bbolt in the data directory")
	fs.IntVar(&cfg.replicas, "gateway-replicas", 1, "gateway processes on the one store, the gateway's requests spread over them round-robin; more than 1 needs a PostgreSQL -store-url")
	fs.StringVar(&cfg.jsonOut, "json", "", "also write the results as JSON to this file")
	fs.IntVar(&cfg.streams, "streams", 10000, scenarioSlowStreams+": concurrent streams")
	fs.IntVar(&cfg.slowChunks, "slow-chunks", 30, scenarioSlowStreams+": content chunks of each stream")
	fs.DurationVar(&cfg.slowInterval, "slow-interval", time.Second, scenarioSlowStreams+": wait between stream events")
	fs.Float64Var(&cfg.slowRamp, "slow-ramp", 1000, scenarioSlowStreams+": streams opened per second")
	fs.BoolVar(&cfg.slowH2C, "slow-h2c", false, scenarioSlowStreams+": the proxy and the gateway reach the fake over h2c (HTTP/2 without TLS), multiplexing the streams on few connections, instead of one HTTP/1.1 connection per stream")
	fs.StringVar(&cfg.gatewayPprof, "gateway-pprof", "", "serve the gateway process's net/http/pprof on this address (host:port), for profiling under load")
	fs.StringVar(&cfg.gatewayLog, "gateway-log", "", "where the gateway's JSON log lines go, as gatewayd writes them to stderr (a line per request and per upstream attempt): a file appended to, or "+gatewayLogNone+" for a logger that builds no line; default: a temporary file, removed at the end")
	genv := fs.String("gateway-env", "", "comma-separated KEY=VALUE added to the gateway process's environment, e.g. GOGC=100,GOMAXPROCS=1, to compare runtime settings")
	fs.BoolVar(&cfg.goals, "goals", false, "measure issue 18's performance goals in one run, each beside the bare proxy (v1-sse at 500/s, peak, c1-sse at 1000/s and 3000/s, "+scenarioSlowStreams+" with 2000 and 10000 streams) and judge them; ignores -scenarios, -targets, -rate, -streams and -slow-h2c")
	fs.BoolVar(&cfg.quick, "quick", false, "a run of a few seconds: -rate 200 -duration 300ms -warmup 100ms -rounds 1 -peak-workers 8 -slow-chunks 3 -slow-interval 100ms")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg.roundsGiven = set["rounds"]
	if cfg.quick {
		for name, v := range map[string]string{"rate": "200", "duration": "300ms", "warmup": "100ms", "rounds": "1", "peak-workers": "8", "slow-chunks": "3", "slow-interval": "100ms"} {
			if !set[name] {
				fs.Set(name, v)
			}
		}
	}
	cfg.scenarios, cfg.targets, cfg.gatewayEnv = splitList(*scen), splitList(*targ), splitList(*genv)
	if cfg.goals {
		cfg.scenarios, cfg.targets = nil, allTargets
	}
	cfg.command = strings.Join(append([]string{"gwbench"}, redactArgs(args)...), " ")
	return cfg, cfg.validate()
}

// validate checks the values that would make a run meaningless.
func (c config) validate() error {
	for _, s := range c.scenarios {
		if !slices.Contains(scenarioNames(), s) && s != scenarioSlowStreams {
			return fmt.Errorf("-scenarios: unknown scenario %q (want %s)", s, strings.Join(scenarioNames(), ", "))
		}
	}
	for _, t := range c.targets {
		if !slices.Contains(allTargets, t) {
			return fmt.Errorf("-targets: unknown target %q (want %s)", t, strings.Join(allTargets, ", "))
		}
	}
	if err := c.validateStore(); err != nil {
		return err
	}
	for _, kv := range c.gatewayEnv {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("-gateway-env: %q is not KEY=VALUE", kv)
		}
	}
	switch {
	case (len(c.scenarios) == 0 && !c.goals) || len(c.targets) == 0:
		return errors.New("-scenarios and -targets must not be empty")
	case c.rate <= 0 || c.duration <= 0 || c.warmup < 0 || c.rounds < 1:
		return errors.New("-rate and -duration must be positive, -warmup not negative, -rounds at least 1")
	case c.duration/time.Duration(c.rounds) < 10*time.Millisecond:
		return errors.New("-duration/-rounds must be at least 10ms")
	case c.chunks < 1 || c.peakWorkers < 1 || c.conns < 1 || c.maxInflight < 1 || c.timeout <= 0:
		return errors.New("-chunks, -peak-workers, -conns, -max-inflight and -timeout must be positive")
	case c.streams < 1 || c.slowChunks < 1 || c.slowInterval < 0 || c.slowRamp <= 0:
		return errors.New("-streams, -slow-chunks and -slow-ramp must be positive, -slow-interval not negative")
	case c.c1Continue < 0 || c.c1Continue > 1 || c.c1History < 2 || c.c1History%2 != 0 || c.c1Convs < 0:
		return errors.New("-c1-continue must be in 0..1, -c1-history even and at least 2, -c1-convs not negative")
	}
	return nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
