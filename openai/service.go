// Package openai is the stateless, OpenAI-compatible /v1 passthrough: chat
// completions, the model list, a model and the model catalog, with embeddings and
// audio in files of their own. It owns no storage and runs nothing in the
// background: a request is checked, forwarded and answered (the cloud-consent
// grants a request may persist go to internal/preflight's bucket, shared with
// /c1). Generated images, which the gateway stores with their time-to-live, a
// rate ledger and a purger, are the images package.
//
// # POST /v1/chat/completions
//
// The body is an OpenAI chat-completions request, forwarded verbatim apart from
// the rewrites of internal/preflight (model first, the injected system message,
// attachments turned into content parts, max_tokens floored); unknown fields
// pass through. With a GW-User-Id header, Config.Inject supplies the system
// message (memory and prompts); without it nothing is injected. The answer is
// relayed by internal/relay: JSON as the upstream sent it, or SSE chunk by
// chunk; a fallback backend adds the backend_fallback notice; a floored
// max_tokens adds gw-applied and x-rust-api-applied. Upstream errors answer
// with their own codes (upstream_bad_request with the upstream's 4xx status,
// upstream_error, upstream_timeout, upstream_unavailable, ...).
//
// Quotas (Config.Quota, the tenant's "quotas" in the token file): after the
// pre-flight checks and before the upstream call, the request is admitted
// against the tenant's daily budget for the alias, reserving max_tokens (or
// max_completion_tokens, the larger, after flooring; without either
// min(context_window - prompt estimate, 4096)) plus the pre-flight prompt
// estimate. A refusal answers 429 model_quota_exhausted, or
// cloudB_daily_quota_exhausted with available_fallbacks for an alias pinned to
// cloudB, with Retry-After until 00:00 UTC. When the answer ends the ticket is
// settled to usage.total_tokens of the JSON answer or of the stream's usage
// chunk (sent when the client asked for it with stream_options.include_usage;
// the gateway does not add it); without usage, the whole reservation is
// charged, also when the answer was cut or the client went away. An upstream
// call that fails before any answer releases the reservation; the request
// still counts against requests_per_day.
//
// # GET /v1/models
//
// An OpenAI model list, {"object":"list","data":[{"id","object":"model",
// "created","owned_by"}]}, of the catalog's aliases (every kind) that the
// tenant's allowlist allows, in catalog order. created is the time the Service
// was made; owned_by is the model's family. The encoded list is cached for 60 s
// per allowlist (Config.Clock), so catalog changes show within a minute.
//
// # GET /v1/models/{id}
//
// OpenAI's model retrieval: the list's entry for the alias, when the
// tenant's allowlist allows it; otherwise 404 route_not_found (the catalog
// has no model_not_found), the same for an unknown alias and a disallowed
// one.
//
// # GET /v1/info
//
// The ModelCatalog, {"models":[ModelInfo...],"notes"}, restricted to the aliases
// the tenant's allowlist allows: the same aliases as /v1/models, so that "the
// list of exposed aliases" is one list, and a client choosing a model
// from /v1/info never meets model_not_in_allowlist. Catalog-file-only fields
// (base_url_env) are left out; kind is an additive field of ModelInfo, and so
// is status (unconfigured for a model that answers model_not_configured). The
// backends' statuses are those of the latest probe (Config.Info), the one
// GET /readyz made or found.
package openai

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/internal/pipeline"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
)

// Config configures a Service.
type Config struct {
	// Upstream sends the model calls. Required.
	Upstream upstream.Upstream
	// Catalog is the model catalog, with backend statuses. Required. The
	// service only reads it; whoever updates it must not do so while requests
	// run.
	Catalog *upstream.Catalog
	// Info returns the catalog as GET /v1/info shows it now: Catalog with
	// the backend statuses of the latest probe (upstream.Health.Catalog),
	// so that /v1/info and /readyz agree. It must answer without waiting
	// for the network but the first time. Nil means Catalog as it is.
	Info func(ctx context.Context) *upstream.Catalog
	// Clock drives the /v1/models cache and the created times. Nil means
	// clock.Wall.
	Clock clock.Clock
	// Store keeps the tenants' persisted cloud-consent grants (GW-Cloud-Consent
	// ...;persist), bucket consent/grants shared with /c1. Nil means grants are
	// not persisted: ;persist is ignored and only the header grants consent.
	Store store.Store
	// Logger logs service-level events. Nil discards them. Request-level lines
	// go to the request's logger (httpx.Info), which carries the request id.
	Logger *slog.Logger
	// Inject returns the system message to put first in a chat of userID in
	// tenantID (memory and prompts), "" for none. It is called only when the
	// request has a GW-User-Id header, after the request passed its checks.
	// An error that is not an *errcat.Error answers internal_error. Nil means
	// no injection.
	Inject func(ctx context.Context, tenantID, userID string) (string, error)
	// KeepaliveInterval is the upstream silence after which a stream gets an
	// SSE keepalive comment. 0 means relay.DefaultKeepalive (15 s); negative
	// disables keepalives.
	KeepaliveInterval time.Duration
	// Quota keeps the tenants' daily per-model budgets (model_quota_exhausted,
	// cloudB_daily_quota_exhausted); share one Accountant with /c1 so that both
	// endpoints count against the same budget. Nil means no quotas.
	Quota *quota.Accountant
	// MaxResponseBytes bounds what the gateway holds of one upstream answer
	// (relay.Options.MaxBytes). 0 means relay.DefaultMaxBytes (16 MiB).
	MaxResponseBytes int64
	// Classifier is the content guard of the tenants whose content_guard is
	// audit or block (the gateway's guard.Classifier, bounded in time and
	// cached). Nil means the gateway has none: a block tenant's requests then
	// answer 503 upstream_unavailable, an audit tenant's go through.
	Classifier guard.Classifier
}

// Service serves the /v1 chat, models and info endpoints. Its handler methods
// are plain http.HandlerFuncs that expect the gateway's middleware to have run
// (principal in the context, body limit, request info).
type Service struct {
	up       upstream.Upstream
	catalog  *upstream.Catalog
	infoOf   func(ctx context.Context) *upstream.Catalog // Config.Info, never nil
	clock    clock.Clock
	logger   *slog.Logger
	maxBytes int64
	chat     *pipeline.Chat // POST /v1/chat/completions
	created  int64          // the models' created time

	mu     sync.Mutex
	models map[string]cachedList // by allowlist key
}

// New returns a Service for cfg.
func New(cfg Config) *Service {
	s := &Service{
		up:       cfg.Upstream,
		catalog:  cfg.Catalog,
		clock:    cfg.Clock,
		logger:   cfg.Logger,
		maxBytes: cfg.MaxResponseBytes,
		models:   map[string]cachedList{},
		infoOf:   cfg.Info,
	}
	if s.infoOf == nil {
		s.infoOf = func(context.Context) *upstream.Catalog { return s.catalog }
	}
	if s.clock == nil {
		s.clock = clock.Wall{}
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.created = s.clock.Now().Unix()
	s.chat = pipeline.New(pipeline.Chat{
		Upstream: s.up, Catalog: s.catalog, Inject: cfg.Inject, Classifier: cfg.Classifier,
		Quota: cfg.Quota, Clock: s.clock, Keepalive: cfg.KeepaliveInterval, MaxBytes: s.maxBytes,
	}, cfg.Store)
	return s
}
