package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/connlimit"
	"github.com/chatgw/gateway/internal/demo"
	"github.com/chatgw/gateway/upstream"
)

// run starts the gateway and serves until ctx is done, then shuts down cleanly:
// in-flight requests finish (bounded by -shutdown-timeout) and the store is closed.
// Asked for help (-h, -help, --help), it prints the usage on stderr and
// returns nil: help that was asked for is not a failure.
func run(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer) error {
	cfg, err := loadConfig(ctx, args, lookup, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if cfg.PrintModels {
		return printModels(cfg, modelsOut)
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	classifier, reloadRules, err := contentGuard(cfg)
	if err != nil {
		return err
	}
	tokens, reloadTokens, err := tokenCatalog(cfg, stderr, guardCheck(classifier))
	if err != nil {
		return err
	}
	catalog, err := modelCatalog(cfg)
	if err != nil {
		return err
	}
	backends := backendsOf(cfg)
	if cfg.Dev {
		stopDemo, err := maybeDemo(ctx, &backends, catalog, log)
		if err != nil {
			return err
		}
		defer stopDemo()
	}
	learnWindows(ctx, catalog, backends, log)
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	if st != nil {
		defer st.Close() // after the gateway's Close, deferred below
	}
	reg := metricsRegistry(cfg)
	tp, err := tracerProvider(ctx, lookup)
	if err != nil {
		return err
	}
	// Deferred before the gateway's Close, so run after it: the last
	// requests' spans are flushed.
	defer func() {
		if err := shutdownTracing(tp); err != nil {
			log.Warn("flushing traces failed", "error", err.Error())
		}
	}()
	g, err := gateway.New(
		gateway.WithDataDir(cfg.DataDir),
		gateway.WithStore(st),
		gateway.WithTokenCatalog(tokens),
		gateway.WithCatalog(catalog),
		gateway.WithBackends(backends),
		gateway.WithLogger(log),
		gateway.WithRateLimit(cfg.RatePerSecond, cfg.RateBurst),
		gateway.WithRateLimitFailOpen(cfg.RateFailOpen),
		gateway.WithBodyLimit(cfg.BodyLimitBytes),
		gateway.WithAgentsDir(cfg.AgentsDir),
		gateway.WithCodingAgentCommand(cfg.CodingAgentCmd),
		gateway.WithMaxResponseBytes(cfg.MaxResponseBytes),
		gateway.WithUsageRetention(cfg.UsageRetention),
		gateway.WithBodyTimeout(cfg.BodyTimeout, cfg.BodyMinRate),
		gateway.WithClassifier(classifier),
		gateway.WithGuardTimeout(cfg.GuardTimeout),
		withMetrics(reg),
		withTracing(tp),
	)
	if err != nil {
		return err
	}
	defer g.Close()
	ln, err := listen(cfg, log)
	if err != nil {
		return err
	}
	stopMetrics, err := serveMetrics(cfg, reg, log, stderr)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopMetrics() // after the main server drained: its last requests are counted
	// SIGHUP is taken before gatewayd says it listens: a SIGHUP sent once
	// that line is out reloads, and never meets the signal's default action,
	// which ends the process.
	relearn := func() error { learnWindows(ctx, catalog, backends, log); return nil }
	watchReload(ctx, log, reloader{"token catalog", "catalog", reloadTokens}, reloader{"content guard rules", "rules", reloadRules},
		reloader{"context windows", "windows", relearn})
	base := "http://" + ln.Addr().String()
	log.Info("gatewayd serving", "addr", base, "playground", base+"/playground", "errors", base+"/docs/errors")
	fmt.Fprintf(stderr, "chatgw listening on %s (API %s/v1, playground %s/playground)\n", base, base, base)
	if cfg.Dev && cfg.TokensFile == "" {
		printTryIt(stderr, cfg, base)
	}
	return serve(ctx, ln, newServer(cfg, g), g.EndStreams, cfg.ShutdownTimeout, log)
}

// newServer is the HTTP server of h with gatewayd's limits on headers and idle
// connections. It has no ReadTimeout or WriteTimeout, which would cut long
// streamed answers: the gateway bounds request bodies itself
// (gateway.WithBodyTimeout).
func newServer(cfg *config, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		IdleTimeout:       cfg.IdleTimeout,
	}
}

// listen opens the listener with the connection caps.
func listen(cfg *config, log *slog.Logger) (*connlimit.Listener, error) {
	inner, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	max := cfg.MaxConns
	if max <= 0 {
		max = autoMaxConns()
	}
	var refused atomic.Int64
	ln := &connlimit.Listener{Listener: inner, Max: max, PerClient: cfg.MaxConnsPerIP,
		Refused: func(cap string, addr net.Addr) {
			// One line per power of two refusals: an attack does not flood the log.
			if n := refused.Add(1); n&(n-1) == 0 {
				log.Warn("connection refused: over the cap", "cap", cap, "refused_total", n, "max_conns", max, "max_conns_per_client", cfg.MaxConnsPerIP)
			}
		}}
	log.Info("connection caps", "max_conns", max, "max_conns_per_client", cfg.MaxConnsPerIP)
	return ln, nil
}

// endGrace is how long the handlers of streams ended at the end of a shutdown
// get to write their gw.error event before the connections are closed.
const endGrace = 2 * time.Second

// serve runs the HTTP server until ctx is done, then drains it: in-flight
// requests get grace to finish; the streams still running then are ended
// with a gw.error event (endStreams), and the rest closed.
func serve(ctx context.Context, ln net.Listener, srv *http.Server, endStreams func(), grace time.Duration, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("gatewayd shutting down", "grace", grace.String())
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		if err != nil {
			return fmt.Errorf("shutdown: %w", err)
		}
		return nil
	}
	log.Warn("shutdown grace ran out: ending the streams in flight with gw.error", "grace", grace.String())
	endStreams()
	ectx, cancelEnd := context.WithTimeout(context.Background(), endGrace)
	defer cancelEnd()
	if srv.Shutdown(ectx) != nil {
		srv.Close() // what still runs is cut
	}
	return nil
}

// tokenCatalog loads the token file, or in -dev mode without one, the dev
// token's catalog (devCatalog).
func tokenCatalog(cfg *config, stderr io.Writer, check func(*auth.Catalog) error) (gateway.TokenCatalog, func() error, error) {
	if cfg.TokensFile != "" {
		fc, err := auth.NewFileCatalog(cfg.TokensFile, check)
		if err != nil {
			return nil, nil, err
		}
		return fc, fc.Reload, nil
	}
	if !cfg.Dev {
		return nil, nil, errors.New("no token catalog: set GATEWAY_TOKENS_FILE (or -tokens-file), or run with -dev")
	}
	cat, err := devCatalog(cfg, stderr)
	if err != nil {
		return nil, nil, err
	}
	return cat, nil, nil
}

// reloader is a file gatewayd re-reads on SIGHUP: what it holds (the log
// lines name it), and its reload (nil when that file is not configured).
type reloader struct {
	what, old string
	reload    func() error
}

// watchReload re-reads the token file and the content guard's rules file on
// SIGHUP, and asks the model servers their context windows again; a bad file
// keeps what was loaded before. It takes SIGHUP before it returns and
// watches it from a goroutine of its own until ctx ends.
func watchReload(ctx context.Context, log *slog.Logger, files ...reloader) {
	files = slices.DeleteFunc(files, func(f reloader) bool { return f.reload == nil })
	if len(files) == 0 {
		return // SIGHUP keeps its default action
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reloadAll(log, files)
			}
		}
	}()
}

// reloadAll reloads each of files in turn, logging the outcome of each.
func reloadAll(log *slog.Logger, files []reloader) {
	for _, f := range files {
		if err := f.reload(); err != nil {
			log.Error(f.what+" reload failed; keeping the old "+f.old, "error", err.Error())
		} else {
			log.Info(f.what + " reloaded")
		}
	}
}

func modelCatalog(cfg *config) (*upstream.Catalog, error) {
	if cfg.ModelsFile != "" {
		return upstream.LoadCatalog(cfg.ModelsFile)
	}
	return upstream.DefaultCatalog()
}

func backendsOf(cfg *config) upstream.Backends {
	return upstream.Backends{
		LocalURL:         cfg.LocalURL,
		LocalAPIKey:      cfg.LocalAPIKey,
		CloudAURL:        cfg.CloudAURL,
		CloudAAPIKey:     cfg.CloudAAPIKey,
		CloudBURL:        cfg.CloudBURL,
		CloudBAPIKey:     cfg.CloudBAPIKey,
		RouterURL:        cfg.RouterURL,
		RouterAPIKey:     cfg.RouterAPIKey,
		FirstByteTimeout: cfg.FirstByteTimeout,
		TotalTimeout:     cfg.UpstreamTimeout,
	}
}

// maybeDemo starts the demo backend on a loopback port and makes it the local
// backend when no local backend answers and no cloud host or router is set.
func maybeDemo(ctx context.Context, b *upstream.Backends, cat *upstream.Catalog, log *slog.Logger) (func(), error) {
	if b.CloudAURL != "" || b.CloudBURL != "" || b.RouterURL != "" || reachable(ctx, b.LocalURL) {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo backend: %w", err)
	}
	srv := &http.Server{Handler: demo.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	b.LocalURL = "http://" + ln.Addr().String()
	cat.Notes = "DEMO MODE: no backend answered, so chats are served by chatgw's built-in deterministic demo backend. " + cat.Notes
	log.Warn("no backend answered: serving chats from the built-in DEMO backend (dev mode only)", "demo_url", b.LocalURL)
	return func() { srv.Close() }, nil
}

// reachable reports whether anything answers HTTP at base within a second.
func reachable(ctx context.Context, base string) bool {
	if base == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/models", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}
