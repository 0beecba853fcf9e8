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
	"net/http/httputil"
	"net/http/pprof"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/gctune"
	"github.com/chatgw/gateway/internal/logwrite"
	"github.com/chatgw/gateway/store/pgstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// The hidden subcommands that run one server each, in a process of its own,
// so that its CPU time and memory can be read in /proc.
const (
	cmdServeFake    = "serve-fake"
	cmdServeProxy   = "serve-proxy"
	cmdServeGateway = "serve-gateway"
)

// benchTenant is the tenant of the gateway's only token.
const benchTenant = "bench"

// isServeCommand reports whether arg names a server subcommand.
func isServeCommand(arg string) bool {
	return arg == cmdServeFake || arg == cmdServeProxy || arg == cmdServeGateway
}

// serve runs the server subcommand args[0] until ctx ends or stdin reaches
// end of file (the parent gwbench closes it, or dies). It prints its base URL
// (http://host:port) as the first line of stdout once it accepts connections.
// A gateway's PostgreSQL URL is getenv(storeURLEnv).
func serve(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	name := args[0]
	fs := flag.NewFlagSet("gwbench "+name, flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	up := fs.String("upstream", "", "base URL of the fake upstream (proxy, gateway)")
	latency := fs.Duration("latency", 0, "fake: wait before the response headers")
	chunks := fs.Int("chunks", 16, "fake: content chunks of a stream")
	interval := fs.Duration("interval", 0, "fake: wait between stream events")
	conns := fs.Int("conns", 1024, "proxy: max idle connections to the upstream")
	dataDir := fs.String("data-dir", "", "gateway: directory of the bbolt store, unless $"+storeURLEnv+" names a PostgreSQL database")
	token := fs.String("token", "", "gateway: the bearer token")
	pprofAddr := fs.String("pprof", "", "serve net/http/pprof on this address too (host:port)")
	h2c := fs.Bool("h2c", false, "fake: accept h2c (HTTP/2 without TLS) too; proxy, gateway: reach the upstream over h2c")
	logPath := fs.String("log", "", "gateway: append the JSON log lines, as gatewayd writes them to stderr, to this file; empty: the lines are not built")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var (
		h       http.Handler
		cleanup = func() {}
		err     error
	)
	switch name {
	case cmdServeFake:
		fake := upstreamtest.NewHandler(upstreamtest.Config{DiscardCalls: true,
			Reply: upstreamtest.Reply{Latency: *latency, Chunks: *chunks, Interval: *interval}})
		h, cleanup = fake, fake.Close
	case cmdServeProxy:
		h, err = newProxy(*up, *conns, *h2c)
	case cmdServeGateway:
		// The process settings of gatewayd, so that the gateway measured is
		// the one operators run.
		stopTune := gctune.StartDefault(os.LookupEnv)
		defer stopTune()
		var g *gateway.Gateway
		g, cleanup, err = newGateway(ctx, gatewaySetup{upstream: *up, token: *token,
			dataDir: *dataDir, storeURL: getenv(storeURLEnv), h2c: *h2c, logPath: *logPath})
		if g != nil {
			h = g
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer cleanup()
	if *pprofAddr != "" {
		stopPprof, err := servePprof(*pprofAddr)
		if err != nil {
			return fmt.Errorf("%s: -pprof: %w", name, err)
		}
		defer stopPprof()
	}
	return listenAndServe(ctx, *addr, h, name == cmdServeFake && *h2c, stdin, stdout)
}

// servePprof serves the runtime profiles (net/http/pprof) on addr, apart from
// the server under test, until the returned stop is called. The block and
// mutex profiles stay off: they would slow the server down.
func servePprof(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/memstats", func(w http.ResponseWriter, _ *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		fmt.Fprintf(w, "goroutines %d\nheap_alloc %d KiB\nheap_inuse %d KiB\nheap_idle %d KiB\nheap_released %d KiB\nstack_inuse %d KiB\nsys %d KiB\nnext_gc %d KiB\nnum_gc %d\n",
			runtime.NumGoroutine(), m.HeapAlloc>>10, m.HeapInuse>>10, m.HeapIdle>>10, m.HeapReleased>>10, m.StackInuse>>10, m.Sys>>10, m.NextGC>>10, m.NumGC)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintf(os.Stderr, "gwbench: pprof at http://%s/debug/pprof/ (pid %d)\n", ln.Addr(), os.Getpid())
	return func() { srv.Close() }, nil
}

// listenAndServe serves h on addr until ctx ends or stdin is closed, then
// shuts down, letting requests in flight finish for up to 5 s. With h2c it
// also accepts HTTP/2 without TLS (prior knowledge).
func listenAndServe(ctx context.Context, addr string, h http.Handler, h2c bool, stdin io.Reader, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if h2c {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true)
		srv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1000}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "http://%s\n", ln.Addr())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		io.Copy(io.Discard, stdin)
		cancel()
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// newProxy is the floor: a bare httputil.ReverseProxy to the upstream, with a
// transport that keeps as many idle connections as the load generator's.
func newProxy(up string, conns int, h2c bool) (http.Handler, error) {
	u, err := url.Parse(up)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("-upstream %q: want http://host:port", up)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = conns, conns
	if h2c {
		useH2C(tr)
	}
	return &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: tr,
	}, nil
}

// gatewaySetup is what a serve-gateway process is given.
type gatewaySetup struct {
	upstream string // the fake's base URL
	token    string
	dataDir  string // the bbolt store's directory, when storeURL is ""
	storeURL string // a PostgreSQL database (store/pgstore)
	h2c      bool
	logPath  string // the file the log lines are appended to; "": none
}

// newGateway is the gateway as gatewayd builds it, with its real middleware:
// one tenant_admin token whose rate limit (1e9/s) never bites, the built-in
// model catalog with the fake as the local backend, the default bbolt store in
// s.dataDir or the PostgreSQL store of s.storeURL (whose rate limiter, shared
// by the replicas, the gateway then uses, as gatewayd's would), and gatewayd's
// logger: JSON lines through a logwrite.Writer, appended to s.logPath (when
// it is "", a logger that is never enabled, so that no line is built).
// closeAll closes the gateway, then the store and the log.
//
// With h2c, the gateway's upstream router gets a transport that speaks h2c
// to the fake (otherwise as the router's own: 256 idle connections per
// host), as it would speak HTTP/2 over TLS to a cloud backend.
func newGateway(ctx context.Context, s gatewaySetup) (g *gateway.Gateway, closeAll func(), err error) {
	if s.token == "" || (s.dataDir == "") == (s.storeURL == "") || !strings.HasPrefix(s.upstream, "http") {
		return nil, nil, errors.New("-token, -upstream and either -data-dir or $" + storeURLEnv + " are required")
	}
	tokens, err := auth.NewStatic([]*auth.Tenant{{ID: benchTenant}}, map[string]auth.StaticToken{
		s.token: {Tenant: benchTenant, Role: auth.RoleTenantAdmin, Rate: &auth.Rate{PerSecond: 1e9, Burst: 1e9}},
	})
	if err != nil {
		return nil, nil, err
	}
	backends := upstream.Backends{LocalURL: strings.TrimSuffix(s.upstream, "/") + "/v1"}
	logger, closeLog, err := gatewayLogger(s.logPath)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			closeLog()
		}
	}()
	opts := []gateway.Option{
		gateway.WithTokenCatalog(tokens),
		gateway.WithBackends(backends),
		gateway.WithLogger(logger),
	}
	if s.h2c {
		cat, err := upstream.DefaultCatalog()
		if err != nil {
			return nil, nil, err
		}
		tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}
		useH2C(tr)
		r, err := upstream.NewRouter(cat, backends, upstream.WithTransport(tr))
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, gateway.WithCatalog(cat), gateway.WithUpstream(r))
	}
	if s.storeURL == "" {
		g, err := gateway.New(append(opts, gateway.WithDataDir(s.dataDir))...)
		if err != nil {
			return nil, nil, err
		}
		return g, func() { g.Close(); closeLog() }, nil
	}
	db, err := pgstore.Open(ctx, s.storeURL)
	if err != nil {
		return nil, nil, fmt.Errorf("$%s: %w", storeURLEnv, err)
	}
	g, err = gateway.New(append(opts, gateway.WithStore(db))...)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return g, func() { g.Close(); db.Close(); closeLog() }, nil
}

// gatewayLogger is gatewayd's logger writing to the file at path (appended
// to, so that replicas share it), or, for "", a logger that builds no line.
func gatewayLogger(path string) (*slog.Logger, func(), error) {
	if path == "" {
		return slog.New(slog.DiscardHandler), func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("-log: %w", err)
	}
	w := logwrite.New(f)
	return slog.New(slog.NewJSONHandler(w, nil)), func() { w.Close(); f.Close() }, nil
}

// useH2C makes tr speak HTTP/2 without TLS (prior knowledge) to http:// URLs.
func useH2C(tr *http.Transport) {
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
}
