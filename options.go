package gateway

import (
	"errors"
	"log/slog"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/upstream"
	"go.opentelemetry.io/otel/trace"
)

// Option configures a Gateway. Options are applied in order after the defaults;
// options that contradict each other make New fail.
type Option func(*config) error

type config struct {
	store    Store
	dataDir  string
	upstream Upstream
	backends upstream.Backends
	catalog  *upstream.Catalog
	tokens   TokenCatalog
	clock    Clock
	logger   *slog.Logger
	metrics  metricsConfig // see metrics.go
	// tracerProvider traces requests (see tracing.go); nil: no tracing.
	tracerProvider trace.TracerProvider
	rate           auth.Rate
	limiter        RateLimiter
	rateFail       bool // let requests pass when the limiter fails
	bodyLimit      int64
	keepalive      time.Duration
	agentsDir      string
	codingCmd      string
	maxResponse    int64
	bodyTimeout    time.Duration
	bodyMinRate    int64
	classifier     Classifier
	// guardTimeout bounds one classification; 0 means guard.DefaultTimeout.
	guardTimeout time.Duration
	usageKeep    time.Duration // usage records' retention; 0: usage.DefaultRetention
}

func defaultConfig() config {
	return config{
		dataDir:     "./data",
		rate:        auth.Rate{PerSecond: 1, Burst: 30},
		bodyLimit:   32 << 20,
		maxResponse: relay.DefaultMaxBytes,
		bodyTimeout: 30 * time.Second,
		bodyMinRate: 16 << 10,
		keepalive:   15 * time.Second,
		backends:    upstream.Backends{LocalURL: "http://127.0.0.1:11434/v1"},
	}
}

// WithStore sets the persistence: for instance a store/pgstore DB
// (pgstore.Open), which lets several gateways share one PostgreSQL database.
// If nil (the default), New opens the bbolt file gateway.db in the data
// directory (see WithDataDir), and Close closes it. A store passed here is not
// closed by Close: its owner closes it, after Close.
func WithStore(s Store) Option {
	return func(c *config) error { c.store = s; return nil }
}

// WithDataDir sets the directory of the default bbolt store. Default "./data".
// It has no effect with WithStore.
func WithDataDir(dir string) Option {
	return func(c *config) error {
		if dir == "" {
			return errors.New("gateway: WithDataDir: empty directory")
		}
		c.dataDir = dir
		return nil
	}
}

// WithUpstream sets how models are reached. If nil (the default), New builds the
// HTTP router over the backends of WithBackends and the model catalog. The
// backends of WithBackends still decide the statuses of /v1/info and which
// models answer model_not_configured: pass those your Upstream serves.
func WithUpstream(u Upstream) Option {
	return func(c *config) error { c.upstream = u; return nil }
}

// WithBackends sets the URLs, keys and time-outs of the local backend, the cloud
// hosts and the optional external router, for the default upstream router and for
// the backend statuses of /v1/info and /readyz: a model none of whose backends
// has a URL here answers model_not_configured. Default: the local backend at
// http://127.0.0.1:11434/v1, no cloud host.
func WithBackends(b upstream.Backends) Option {
	return func(c *config) error { c.backends = b; return nil }
}

// WithCatalog sets the model catalog. If nil (the default), the built-in catalog
// is used. The catalog must be the one the Upstream routes by.
func WithCatalog(cat *upstream.Catalog) Option {
	return func(c *config) error { c.catalog = cat; return nil }
}

// WithTokenCatalog sets the bearer tokens and tenants. There is no default: New
// fails without one, because a gateway that accepts no token serves nothing.
func WithTokenCatalog(t TokenCatalog) Option {
	return func(c *config) error { c.tokens = t; return nil }
}

// WithClock sets the source of time. If nil (the default), the wall clock.
func WithClock(cl Clock) Option {
	return func(c *config) error { c.clock = cl; return nil }
}

// WithLogger sets the logger of request lines and events. If nil (the default),
// slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error { c.logger = l; return nil }
}

// WithRateLimit sets the default per-token rate limit: perSecond requests per
// second with bursts of burst. Default 1 per second, burst 30. A token's own rate
// in the token catalog wins over it.
func WithRateLimit(perSecond float64, burst int) Option {
	return func(c *config) error {
		if perSecond <= 0 || burst < 1 {
			return errors.New("gateway: WithRateLimit: perSecond must be > 0 and burst >= 1")
		}
		c.rate = auth.Rate{PerSecond: perSecond, Burst: burst}
		return nil
	}
}

// WithRateLimiter sets where the per-token buckets live. If nil (the
// default), a store that implements ratelimit.Provider (store/pgstore) gives
// its limiter, shared by every gateway on that database, so that a token's
// burst holds across the fleet; any other store gets in-process buckets
// (ratelimit.Local), one set per gateway.
func WithRateLimiter(l RateLimiter) Option {
	return func(c *config) error { c.limiter = l; return nil }
}

// WithRateLimitFailOpen sets what a request gets when the rate limiter cannot
// decide (its database cannot be reached): false (the default) answers 500
// storage_error, so that no request passes without its limit; true lets it
// through unlimited, logging the failure at most once a second. Every other
// use of stored state fails closed either way.
func WithRateLimitFailOpen(open bool) Option {
	return func(c *config) error { c.rateFail = open; return nil }
}

// WithBodyLimit sets the largest accepted request body in bytes. Default
// 33554432 (32 MiB). Larger bodies answer 413 body_too_large.
func WithBodyLimit(n int64) Option {
	return func(c *config) error {
		if n < 1 {
			return errors.New("gateway: WithBodyLimit: limit must be positive")
		}
		c.bodyLimit = n
		return nil
	}
}

// WithMaxResponseBytes sets the most the gateway holds of one upstream
// answer, in bytes: a JSON answer (read whole to check and relay it), and the
// reply a path captures to store it (/c1, agent sessions) or to act on it
// (an agent's tool rounds, images). Default 16777216 (16 MiB). An answer over
// it is refused with upstream_error (a gw.error event once a stream started)
// and nothing of it is stored. Streams relayed without being stored (/v1) are
// not limited: they are relayed in constant memory.
func WithMaxResponseBytes(n int64) Option {
	return func(c *config) error {
		if n < 1 {
			return errors.New("gateway: WithMaxResponseBytes: limit must be positive")
		}
		c.maxResponse = n
		return nil
	}
}

// WithBodyTimeout bounds how long a request body may take to arrive: the
// whole body within grace plus one second per minRate bytes read (a client on
// a slow link may take longer for a large body, one that stalls may not).
// A body that does not arrive in time fails with invalid_json, and the
// connection is closed after the answer. Default 30 s and 16384 bytes per
// second. grace 0 turns the limit off; minRate 0 gives every body grace alone.
//
// The deadline is the connection's read deadline, set through the server's
// ResponseWriter (http.ResponseController), so it works with net/http's
// server; serve the gateway with http.Server.ReadHeaderTimeout set as well,
// which bounds the headers before the gateway sees the request.
func WithBodyTimeout(grace time.Duration, minRate int64) Option {
	return func(c *config) error {
		if grace < 0 || minRate < 0 {
			return errors.New("gateway: WithBodyTimeout: grace and minRate must not be negative")
		}
		c.bodyTimeout, c.bodyMinRate = grace, minRate
		return nil
	}
}

// WithKeepalive sets how long an SSE stream may stay silent before the gateway
// sends a comment line to keep proxies from closing it. Default 15 s.
func WithKeepalive(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return errors.New("gateway: WithKeepalive: interval must be positive")
		}
		c.keepalive = d
		return nil
	}
}

// WithAgentsDir loads the agents of /a1/agents from the *.json files of dir
// (one agent a file; see package agents). New fails on a file that is not a
// valid agent, naming it; an agent listing a tool that is not registered is
// loaded with a warning in the log, and its chat answers
// agent_tool_not_registered. Default: no agents.
func WithAgentsDir(dir string) Option {
	return func(c *config) error { c.agentsDir = dir; return nil }
}

// WithCodingAgentCommand enables the coding-agent runtime of /a1/runs: each run
// executes cmd, split on spaces and without a shell (see package runs).
// Default "": the runtime is disabled and POST /a1/runs answers
// coding_agent_disabled.
func WithCodingAgentCommand(cmd string) Option {
	return func(c *config) error { c.codingCmd = cmd; return nil }
}

// WithClassifier sets the content guard's classifier: the requests of the
// tenants whose content_guard is "audit" or "block" are classified by it on
// every chat path (/v1/chat/completions, /c1/chat, agent chat and session
// messages). A block tenant's flagged request answers 422 content_blocked
// before anything is forwarded or stored; an audit tenant's goes through and
// is logged. The gateway bounds each classification (WithGuardTimeout) and
// caches verdicts by the digest of the content for a minute, so c need not.
// Default nil: no classifier, and then a block tenant's chat requests answer
// 503 upstream_unavailable and an audit tenant's go through unclassified,
// logged; gatewayd refuses to start with such a tenant instead.
func WithClassifier(c Classifier) Option {
	return func(cfg *config) error { cfg.classifier = c; return nil }
}

// WithGuardTimeout bounds one classification of the content guard: a block
// tenant's request whose classifier has not answered in d answers 503
// upstream_unavailable, an audit tenant's went through already and is
// logged. Default guard.DefaultTimeout (2 s).
func WithGuardTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return errors.New("gateway: WithGuardTimeout: timeout must be positive")
		}
		c.guardTimeout = d
		return nil
	}
}

// WithUsageRetention sets how long usage records (GET /v1/usage) are kept:
// older ones are deleted in the background, within an hour. Default 2160h
// (90 days). d must be positive.
func WithUsageRetention(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return errors.New("gateway: WithUsageRetention: retention must be positive")
		}
		c.usageKeep = d
		return nil
	}
}
