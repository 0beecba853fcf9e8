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
	"net/url"
	"strings"
	"time"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
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
func serve(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	name := args[0]
	fs := flag.NewFlagSet("gwbench "+name, flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	up := fs.String("upstream", "", "base URL of the fake upstream (proxy, gateway)")
	latency := fs.Duration("latency", 0, "fake: wait before the response headers")
	chunks := fs.Int("chunks", 16, "fake: content chunks of a stream")
	interval := fs.Duration("interval", 0, "fake: wait between stream events")
	conns := fs.Int("conns", 1024, "proxy: max idle connections to the upstream")
	dataDir := fs.String("data-dir", "", "gateway: directory of the bbolt store")
	token := fs.String("token", "", "gateway: the bearer token")
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
		h, err = newProxy(*up, *conns)
	case cmdServeGateway:
		var g *gateway.Gateway
		g, err = newGateway(*up, *dataDir, *token)
		if g != nil {
			h, cleanup = g, func() { g.Close() }
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer cleanup()
	return listenAndServe(ctx, *addr, h, stdin, stdout)
}

// listenAndServe serves h on addr until ctx ends or stdin is closed, then
// shuts down, letting requests in flight finish for up to 5 s.
func listenAndServe(ctx context.Context, addr string, h http.Handler, stdin io.Reader, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
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
func newProxy(up string, conns int) (http.Handler, error) {
	u, err := url.Parse(up)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("-upstream %q: want http://host:port", up)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = conns, conns
	return &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: tr,
	}, nil
}

// newGateway is the gateway as gatewayd builds it, with its real middleware:
// one tenant_admin token whose rate limit (1e9/s) never bites, the built-in
// model catalog with the fake as the local backend, the default bbolt store in
// dataDir and a logger that discards (the log line is still built).
func newGateway(up, dataDir, token string) (*gateway.Gateway, error) {
	if token == "" || dataDir == "" || !strings.HasPrefix(up, "http") {
		return nil, errors.New("-token, -data-dir and -upstream are required")
	}
	tokens, err := auth.NewStatic([]*auth.Tenant{{ID: benchTenant}}, map[string]auth.StaticToken{
		token: {Tenant: benchTenant, Role: auth.RoleTenantAdmin, Rate: &auth.Rate{PerSecond: 1e9, Burst: 1e9}},
	})
	if err != nil {
		return nil, err
	}
	return gateway.New(
		gateway.WithTokenCatalog(tokens),
		gateway.WithBackends(upstream.Backends{LocalURL: strings.TrimSuffix(up, "/") + "/v1"}),
		gateway.WithDataDir(dataDir),
		gateway.WithLogger(slog.New(slog.DiscardHandler)),
	)
}
