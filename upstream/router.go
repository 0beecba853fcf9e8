package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/chatgw/gateway/errcat"
	"go.opentelemetry.io/otel/trace"
)

// Router is the default Upstream: it sends each call to the backends of the
// alias's chain in catalog order over HTTP (OpenAI-compatible), falling back to
// the next backend on connection failure, first-byte time-out, 429 or 5xx, and
// never after returning a response. It also implements Prober.
//
// Backends whose provider URL is unset, and backends the catalog marks planned or
// unconfigured, are skipped. A Router is safe for concurrent use; Close releases
// its idle connections.
type Router struct {
	cat          *Catalog
	status       *Catalog // cat.WithStatus(backends), as /v1/info shows it
	backends     Backends // with defaults applied
	chains       map[string][]target
	client       *http.Client      // probes' (its redirects turned off)
	rt           http.RoundTripper // the client's transport, which attempts call (see attempt)
	log          *slog.Logger
	san          *sanitizer
	probeTimeout time.Duration
	obs          Observer     // nil: attempts are only logged
	tracer       trace.Tracer // nil: attempts are not traced
}

var (
	_ Upstream = (*Router)(nil)
	_ Prober   = (*Router)(nil)
)

// target is one backend of a chain, resolved against Backends.
type target struct {
	provider    string // BackendInfo.Provider, for logs and Response
	routerAlias string
	quotedAlias []byte // routerAlias as a JSON string
	baseURL     string
	urls        *targetURLs // the URLs of baseURL and a path, parsed once
	// authorization is the Authorization header of the backend's key,
	// "Bearer <key>", built once; "" when the backend has no key.
	authorization string
	// log is the router's logger with the attempt line's attributes that
	// name the backend (provider, router_alias, via), encoded once here
	// rather than on every attempt.
	log *slog.Logger
}

// Buffer sizes of the default transport's HTTP/1 connections (net/http's
// default is 4 KiB each). A streamed answer holds its connection, and so these
// buffers, for its whole length, however slowly the model writes; the
// gateway's requests are written once and its answers read in small SSE
// events or read whole (a larger read goes around the buffer), so smaller
// buffers cost a syscall here and there and save 5 KiB per open stream.
const (
	transportReadBuffer  = 2 << 10
	transportWriteBuffer = 1 << 10
)

// Option configures NewRouter.
type Option func(*routerOptions)

type routerOptions struct {
	logger         *slog.Logger
	transport      http.RoundTripper
	probeTimeout   time.Duration
	observer       Observer
	tracerProvider trace.TracerProvider
}

// WithLogger sets the logger of attempts and outcomes. Default: discard.
func WithLogger(l *slog.Logger) Option {
	return func(o *routerOptions) { o.logger = l }
}

// WithTransport replaces the HTTP transport. Default: one tuned *http.Transport
// per Router (256 idle connections per host, HTTP/2 when offered, the connect
// time-out of Backends, no response-header time-out, 2 KiB read and 1 KiB
// write buffers per HTTP/1 connection).
func WithTransport(rt http.RoundTripper) Option {
	return func(o *routerOptions) { o.transport = rt }
}

// WithProbeTimeout sets the time-out of each readiness probe; d must be positive.
// Default: 1 s (each backend is probed "with a 1 s timeout").
func WithProbeTimeout(d time.Duration) Option {
	return func(o *routerOptions) { o.probeTimeout = d }
}

// NewRouter returns a Router over cat (copied, so later changes to cat do not
// affect it) and the backends b. It fails when cat is nil or invalid, or when b
// fails Backends.Validate.
func NewRouter(cat *Catalog, b Backends, opts ...Option) (*Router, error) {
	if cat == nil {
		return nil, errors.New("upstream.NewRouter: nil catalog")
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("upstream.NewRouter: %w", err)
	}
	o := routerOptions{probeTimeout: time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	b = b.withDefaults()
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.transport == nil {
		tr := newTransport(b.ConnectTimeout)
		tr.ReadBufferSize, tr.WriteBufferSize = transportReadBuffer, transportWriteBuffer
		o.transport = tr
	}
	if o.probeTimeout <= 0 {
		return nil, errors.New("upstream.NewRouter: probe time-out must be positive")
	}
	r := &Router{
		cat:      cat.Clone(),
		backends: b,
		chains:   make(map[string][]target, len(cat.Models)),
		client: &http.Client{
			Transport: o.transport,
			// A model backend that redirects is misconfigured: report its 3xx.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		rt:           o.transport,
		log:          o.logger,
		san:          newSanitizer(b),
		probeTimeout: o.probeTimeout,
		obs:          o.observer,
	}
	if o.tracerProvider != nil {
		r.tracer = o.tracerProvider.Tracer(tracerName)
	}
	if err := r.cat.validate(); err != nil {
		return nil, fmt.Errorf("upstream.NewRouter: %w", err)
	}
	r.status = r.cat.WithStatus(b)
	for _, m := range r.cat.Models {
		chain := []target{}
		for _, be := range m.Backends {
			if be.Status == StatusPlanned || be.Status == StatusUnconfigured || !b.Configured(be.urlProvider()) {
				continue
			}
			t := target{provider: be.Provider, routerAlias: be.RouterAlias,
				baseURL: b.URL(be.urlProvider()), authorization: bearer(b.APIKey(be.urlProvider()))}
			if b.RouterURL != "" {
				t.baseURL, t.authorization = b.RouterURL, bearer(b.RouterAPIKey)
			}
			t.quotedAlias, _ = json.Marshal(be.RouterAlias)
			t.log = r.backendLogger(be.Provider, be.RouterAlias)
			t.urls = new(targetURLs)
			chain = append(chain, t)
		}
		r.chains[m.Alias] = chain
	}
	return r, nil
}

// backendLogger is r.log with the attributes that name a backend in its
// attempt lines.
func (r *Router) backendLogger(provider, routerAlias string) *slog.Logger {
	attrs := []any{slog.String("provider", provider), slog.String("router_alias", routerAlias)}
	if r.backends.RouterURL != "" {
		attrs = append(attrs, slog.String("via", "router"))
	}
	return r.log.With(attrs...)
}

// Catalog returns the router's catalog as GET /v1/info shows it (see
// Catalog.WithStatus); a fresh copy on each call.
func (r *Router) Catalog() *Catalog { return r.status.Clone() }

// Close closes the router's idle connections. Calls in flight are not affected.
func (r *Router) Close() error {
	r.client.CloseIdleConnections()
	return nil
}

// Do sends req to the alias's backends in order and returns the first 2xx
// response (see Upstream for the errors). An alias that is not in the catalog is
// model_not_in_allowlist (param model); an alias with no configured backend is
// model_not_configured (param model, Catalog.WithStatus says why); a JSON body that is not an object, or a multipart body
// that is not valid multipart/form-data (a streamed one found out while it is
// sent, which ends the call), is invalid_json. When
// every attempt failed, the error is that of the last backend that answered,
// else 504 upstream_timeout when a backend took the request but stayed silent
// past the first-byte time-out, else 503 upstream_unavailable (none could be
// connected to). The total time-out bounds the whole call, reading the body
// included; closing Body releases the call. Response.Fallback is true when an
// earlier configured backend of the chain was tried and failed.
func (r *Router) Do(ctx context.Context, req *Request) (*Response, error) {
	chain, ok := r.chains[req.Alias]
	if !ok {
		return nil, errcat.Newf(errcat.ModelNotInAllowlist, "model", "model %q is not available", req.Alias)
	}
	if len(chain) == 0 {
		// What the pre-flight checks answer before any call (LookupKind,
		// the chat paths' model look-up), for callers that skip them.
		if err := r.status.Lookup(req.Alias).NotConfigured(); err != nil {
			return nil, err
		}
		return nil, unavailable("no backend is configured for this model", nil)
	}
	p, err := newPayload(req)
	if err != nil {
		return nil, err
	}
	// One deadline for every attempt, each attempt a context of its own
	// under it: one level of context per attempt, not a total one above
	// the attempt's, since every level costs a child map and a channel.
	deadline := time.Now().Add(r.backends.TotalTimeout)
	var lastAnswered, lastSilent, lastErr *errcat.Error
	for i := range chain {
		if i > 0 && !p.retryable() {
			break
		}
		o := r.attempt(ctx, deadline, req, p, &chain[i], i+1)
		if o.resp != nil {
			o.resp.Fallback = i > 0
			return o.resp, nil
		}
		if o.att.Outcome != "" && o.retry && i+1 < len(chain) && p.retryable() {
			o.att.Next = chain[i+1].provider
		}
		if r.obs != nil && o.att.Outcome != "" {
			r.obs.ObserveAttempt(ctx, o.att)
		}
		endSpan(o.span, &o.att)
		if o.answered {
			lastAnswered = o.err
		}
		if o.silent {
			lastSilent = o.err
		}
		lastErr = o.err
		if !o.retry {
			return nil, o.err
		}
	}
	switch {
	case lastAnswered != nil:
		return nil, lastAnswered
	case lastSilent != nil:
		return nil, lastSilent
	}
	return nil, lastErr
}

// bearer is the Authorization header value of key, "" for no key.
func bearer(key string) string {
	if key == "" {
		return ""
	}
	return "Bearer " + key
}
