package anthropic

import (
	"context"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/internal/pipeline"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
)

// Config configures a Service. Its fields are those of openai.Config that
// a chat request needs, and should be the same values: one gateway, one
// pipeline whichever API its clients speak.
type Config struct {
	// Upstream sends the model calls. Required.
	Upstream upstream.Upstream
	// Catalog is the model catalog, with backend statuses. Required.
	Catalog *upstream.Catalog
	// Clock gives the created times; nil means clock.Wall.
	Clock clock.Clock
	// Store keeps the tenants' persisted cloud-consent grants (bucket
	// consent/grants, shared with /v1 and /c1). Nil means grants are not
	// persisted.
	Store store.Store
	// Inject returns the system message to put first in a chat of userID in
	// tenantID (memory and prompts), "" for none; it is called only when the
	// request has a GW-User-Id header. Nil means no injection.
	Inject func(ctx context.Context, tenantID, userID string) (string, error)
	// KeepaliveInterval is the upstream silence after which a stream gets a
	// ping event. 0 means 15 s; negative disables keepalives.
	KeepaliveInterval time.Duration
	// Quota keeps the tenants' daily per-model budgets; share the
	// Accountant of /v1 and /c1. Nil means no quotas.
	Quota *quota.Accountant
	// MaxResponseBytes bounds what the gateway holds of one upstream
	// answer. 0 means 16 MiB.
	MaxResponseBytes int64
	// Classifier is the content guard of the tenants whose content_guard is
	// audit or block. Nil means the gateway has none: a block tenant's
	// requests answer 503 upstream_unavailable, an audit tenant's go through.
	Classifier guard.Classifier
}

// Service serves Anthropic's Messages API. Its handler methods are plain
// http.HandlerFuncs that expect the gateway's middleware to have run
// (principal in the context, body limit, request info with the route's
// error Format, ErrorBody).
type Service struct {
	chat *pipeline.Chat
}

// New returns a Service for cfg.
func New(cfg Config) *Service {
	return &Service{chat: pipeline.New(pipeline.Chat{
		Upstream: cfg.Upstream, Catalog: cfg.Catalog, Inject: cfg.Inject, Classifier: cfg.Classifier,
		Quota: cfg.Quota, Clock: cfg.Clock, Keepalive: cfg.KeepaliveInterval, MaxBytes: cfg.MaxResponseBytes,
	}, cfg.Store)}
}
