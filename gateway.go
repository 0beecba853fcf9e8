// Package gateway is chatgw, an OpenAI-compatible chat gateway for language models,
// as an embeddable library: New returns a *Gateway, an http.Handler that serves the
// whole API and must be closed with Close. Its three API families:
//
//   - /v1: the stateless OpenAI-compatible passthrough (chat completions,
//     models, embeddings, audio), generated images kept for a time-to-live,
//     memory, system prompts, tenant configuration, tool execution and the
//     totals of the usage records the gateway keeps;
//   - /c1: chat with conversations stored by the gateway;
//   - /a1: agents with a tool loop and sessions, RAG indices and coding-agent
//     runs;
//
// and the public endpoints (/healthz, /readyz, /errors, the API description,
// the playground).
//
// Everything pluggable is an interface re-exported here (Store, Upstream,
// TokenCatalog, Clock, RateLimiter, Classifier); each option documents its
// default. Two gateways in one
// process share nothing.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatgw/gateway/agents"
	"github.com/chatgw/gateway/anthropic"
	"github.com/chatgw/gateway/chat"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/conversation"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/images"
	"github.com/chatgw/gateway/internal/apidocs"
	"github.com/chatgw/gateway/internal/metrics"
	"github.com/chatgw/gateway/internal/shutdown"
	"github.com/chatgw/gateway/memory"
	"github.com/chatgw/gateway/openai"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/rag"
	"github.com/chatgw/gateway/ratelimit"
	"github.com/chatgw/gateway/responses"
	"github.com/chatgw/gateway/runs"
	"github.com/chatgw/gateway/store/boltstore"
	"github.com/chatgw/gateway/tenantconfig"
	"github.com/chatgw/gateway/tools"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/usage"
	"github.com/julienschmidt/httprouter"
	"go.opentelemetry.io/otel/trace"
)

// Version is the API version of the interface description.
const Version = "0.1.0"

// Gateway is the chat gateway. It is safe for concurrent use.
type Gateway struct {
	cfg     config
	router  *httprouter.Router
	limiter ratelimit.Limiter
	// limitFailLogged is the unix second of the last log line of a failed
	// limiter, so that an outage logs once a second, not once a request.
	limitFailLogged atomic.Int64
	catalog         *upstream.Catalog // with backend statuses from the configuration
	// health is the latest probe of the backends, which /readyz refreshes
	// and /v1/info shows; nil when the Upstream cannot probe.
	health  *upstream.Health
	log     *slog.Logger
	metrics *metrics.Metrics // nil: no metrics

	errorsJSON http.Handler
	errorsHTML http.Handler

	apidocs *apidocs.Docs
	openai  *openai.Service

	// anthropic serves Anthropic's Messages API on the pipeline of openai's
	// chat completions.
	anthropic *anthropic.Service
	// responses serves OpenAI's Responses API on the same pipeline, and
	// keeps the stored responses.
	responses *responses.Service

	images  *images.Service
	chat    *chat.Service
	conv    *conversation.Service
	mem     *memory.Service
	tenants *tenantconfig.Service
	tools   *tools.Registry
	rag     *rag.Service
	agents  *agents.Service
	runs    *runs.Service
	usage   *usage.Service

	// ending is raised by EndStreams; every request's httpx.Info carries
	// it to the relay.
	ending shutdown.Signal

	// tracer starts the gateway's spans; nil when it does not trace.
	tracer trace.Tracer

	closeOnce sync.Once
	closers   []func() error
}

// New builds a gateway from the options. It fails when an option is invalid,
// no TokenCatalog is given, or the default store cannot be opened.
func New(opts ...Option) (*Gateway, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.tokens == nil {
		return nil, errors.New("gateway: no token catalog: use WithTokenCatalog")
	}
	g := &Gateway{cfg: cfg, errorsJSON: errcat.CatalogHandler(), errorsHTML: errcat.DocsHandler()}
	if err := g.wire(); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// wire fills the defaults that need work and builds the families and the router.
func (g *Gateway) wire() error {
	c := &g.cfg
	if c.logger == nil {
		c.logger = slog.Default()
	}
	g.log = c.logger
	if c.clock == nil {
		c.clock = clock.Wall{}
	}
	if c.catalog == nil {
		cat, err := upstream.DefaultCatalog()
		if err != nil {
			return fmt.Errorf("gateway: built-in model catalog: %w", err)
		}
		c.catalog = cat
	}
	g.catalog = c.catalog.WithStatus(c.backends)
	if err := g.wireMetrics(); err != nil {
		return err
	}
	g.wireTracing()
	if c.store == nil {
		db, err := boltstore.Open(filepath.Join(c.dataDir, "gateway.db"))
		if err != nil {
			return fmt.Errorf("gateway: open store: %w", err)
		}
		c.store = db
		g.closers = append(g.closers, db.Close)
	}
	if c.upstream == nil {
		r, err := upstream.NewRouter(c.catalog, c.backends, upstream.WithLogger(c.logger), upstream.WithObserver(g.attemptObserver()),
			upstream.WithTracerProvider(c.tracerProvider))
		if err != nil {
			return fmt.Errorf("gateway: upstream router: %w", err)
		}
		c.upstream = r
		g.closers = append(g.closers, r.Close)
	}
	if p, ok := c.upstream.(upstream.Prober); ok {
		// /readyz and /v1/info read the backends' statuses from one probe.
		g.health = upstream.NewHealth(p, c.catalog, c.backends, c.clock, 0)
		g.closers = append(g.closers, g.health.Close)
	}
	// Every family reaches the upstream through the observation layer
	// (observe), which notes each call in the usage record of a metered
	// request. The usage Service writes
	// its last records on Close, so it closes before the store (closers run in
	// reverse order), after the requests were drained.
	g.usage = usage.New(usage.Config{Store: c.store, Clock: c.clock, Logger: c.logger, Retention: c.usageKeep})
	g.closers = append(g.closers, g.usage.Close)
	g.limiter = limiterOf(c)
	g.observe()
	if err := g.wireFamilies(); err != nil {
		return err
	}
	g.router = g.buildRouter(g.routes())
	return nil
}

// limiterOf is the configured rate limiter, else the store's shared one,
// else in-process buckets.
func limiterOf(c *config) ratelimit.Limiter {
	if c.limiter != nil {
		return c.limiter
	}
	if p, ok := c.store.(ratelimit.Provider); ok {
		return p.RateLimiter()
	}
	return ratelimit.NewLocal(c.clock)
}

// wireFamilies builds the API families over the shared store, clock and upstream.
func (g *Gateway) wireFamilies() error {
	c := &g.cfg
	g.apidocs = apidocs.New(Version)
	g.mem = memory.New(memory.Config{Store: c.store, Clock: c.clock})
	g.tenants = tenantconfig.NewService(c.store, g.catalog, guard.Names(c.classifier)...)
	classifier := classifierOf(c)
	g.rag = rag.New(rag.Config{Store: c.store, Clock: c.clock})
	reg, err := tools.NewRegistry(append(g.mem.Tools(), tools.CurrentTime(c.clock), g.rag.Tool())...)
	if err != nil {
		return fmt.Errorf("gateway: tool registry: %w", err)
	}
	g.tools = reg
	// One Accountant for /v1, /c1 and /a1 agent chat: a tenant's daily budget
	// for an alias is shared by all three. available_fallbacks are chosen from
	// the catalog with backend statuses, so that an unconfigured backend is not
	// offered. The counters live in the store, shared by every gateway on it.
	// A reservation lasts longer than any upstream call (the total time-out
	// bounds one) so that only one whose gateway died ever expires.
	quotas := quota.New(quota.Config{
		Store: c.store, Clock: c.clock, Catalog: g.catalog, Logger: c.logger,
		ReservationTTL: max(quota.DefaultReservationTTL, c.backends.TotalTimeout+5*time.Minute),
		Refused:        g.quotaRefused(),
	})
	var info func(context.Context) *upstream.Catalog
	if g.health != nil {
		info = g.health.Catalog
	}
	g.openai = openai.New(openai.Config{
		Upstream: c.upstream, Catalog: g.catalog, Info: info, Clock: c.clock, Store: c.store,
		Logger: c.logger, Inject: g.mem.SystemContext, KeepaliveInterval: c.keepalive,
		Quota: quotas, MaxResponseBytes: c.maxResponse, Classifier: classifier,
	})
	// Anthropic's Messages API: the same pipeline and values as /v1, so that
	// its requests are checked, injected, guarded and counted alike.
	g.anthropic = anthropic.New(anthropic.Config{
		Upstream: c.upstream, Catalog: g.catalog, Clock: c.clock, Store: c.store,
		Inject: g.mem.SystemContext, KeepaliveInterval: c.keepalive,
		Quota: quotas, MaxResponseBytes: c.maxResponse, Classifier: classifier,
	})
	// OpenAI's Responses API: the same pipeline and values again, and the
	// store for the responses it keeps.
	g.responses = responses.New(responses.Config{
		Upstream: c.upstream, Catalog: g.catalog, Clock: c.clock, Store: c.store,
		Inject: g.mem.SystemContext, KeepaliveInterval: c.keepalive,
		Quota: quotas, MaxResponseBytes: c.maxResponse, Classifier: classifier,
	})
	// The images purger runs until Close, which stops it before the store is
	// closed (closers run in reverse order).
	g.images = images.New(images.Config{
		Upstream: c.upstream, Catalog: g.catalog, Store: c.store, Clock: c.clock, Logger: c.logger,
		MaxResponseBytes: c.maxResponse,
	})
	g.closers = append(g.closers, g.images.Close)
	g.conv = conversation.New(conversation.Config{Store: c.store, Clock: c.clock})
	// Before the first request, so that a store written by an older layout is
	// brought up to date (and one of a newer layout refused) at start.
	if err := g.conv.Migrate(context.Background()); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	g.chat = chat.New(chat.Config{
		History: g.conv, Upstream: c.upstream, Catalog: g.catalog, Store: c.store,
		Clock: c.clock, Logger: c.logger, Keepalive: c.keepalive,
		Inject: g.mem.SystemContextTx, InjectReads: g.mem.AppendContextReads,
		Quota: quotas, MaxResponseBytes: c.maxResponse, Classifier: classifier,
	})
	// Runs write their final states on Close, so they close before the store
	// (closers run in reverse order).
	g.runs, err = runs.New(runs.Config{Store: c.store, Clock: c.clock, Logger: c.logger, Command: c.codingCmd})
	if err != nil {
		return fmt.Errorf("gateway: runs: %w", err)
	}
	g.closers = append(g.closers, g.runs.Close)
	return g.wireAgents(quotas, classifier)
}

// classifierOf is the content guard's classifier as the chat paths ask it:
// each classification bounded in time, verdicts cached by content digest "so
// that retries are not classified twice"; nil without a classifier.
func classifierOf(c *config) guard.Classifier {
	if c.classifier == nil {
		return nil
	}
	return guard.Cached(guard.WithTimeout(c.classifier, c.guardTimeout), c.clock, guard.DefaultCacheTTL, guard.DefaultCacheSize)
}

// wireAgents loads the agents and registers agent_call, which needs the agents
// service, after the other tools. Agent chats count against quotas, the
// Accountant of /v1 and /c1, and are guarded by their classifier.
func (g *Gateway) wireAgents(quotas *quota.Accountant, classifier guard.Classifier) error {
	c := &g.cfg
	list, warnings, err := agents.Load(c.agentsDir, g.tools)
	if err != nil {
		return fmt.Errorf("gateway: agents: %w", err)
	}
	for _, w := range warnings {
		c.logger.Warn(w.String())
	}
	g.agents, err = agents.New(agents.Config{
		Agents: list, Tools: g.tools, Upstream: c.upstream, Catalog: g.catalog,
		Store: c.store, Clock: c.clock, Logger: c.logger, Inject: g.mem.SystemContext,
		Keepalive: c.keepalive, Quota: quotas, MaxResponseBytes: c.maxResponse, Classifier: classifier,
	})
	if err != nil {
		return fmt.Errorf("gateway: agents: %w", err)
	}
	if err := g.tools.Register(g.agents.CallTool()); err != nil {
		return fmt.Errorf("gateway: agents: %w", err)
	}
	return nil
}

// ServeHTTP serves the gateway's API.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.serve(w, r)
}

// EndStreams ends the answers in flight that relay an upstream model: each
// stream sends a gw.error event (upstream_unavailable, its message saying the
// gateway is shutting down) and ends, and an answer not yet started answers
// that error as JSON, so that clients can tell the cut from a network failure
// and retry elsewhere. Call it when the grace of a shutdown ran out
// (http.Server.Shutdown returned context.DeadlineExceeded), then give the
// handlers a moment to write it before closing the connections. Requests
// that arrive afterwards are served as usual.
func (g *Gateway) EndStreams() { g.ending.End() }

// Close releases what New opened (the default store's file lock). It is safe to
// call more than once; in-flight requests should be drained first (http.Server's
// Shutdown does that).
func (g *Gateway) Close() error {
	var err error
	g.closeOnce.Do(func() {
		g.ending.End()
		for i := len(g.closers) - 1; i >= 0; i-- {
			err = errors.Join(err, g.closers[i]())
		}
	})
	return err
}
