package responses

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/internal/pipeline"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
)

// DefaultMaxChain is the default of Config.MaxChain.
const DefaultMaxChain = 100

// Config configures a Service. Its chat fields are those of openai.Config
// and anthropic.Config, and should be the same values: one gateway, one
// pipeline whichever API its clients speak.
type Config struct {
	// Upstream sends the model calls. Required.
	Upstream upstream.Upstream
	// Catalog is the model catalog, with backend statuses. Required.
	Catalog *upstream.Catalog
	// Store keeps the stored responses (the resp/... buckets) and the
	// tenants' persisted cloud-consent grants (consent/grants, shared with
	// /v1 and /c1). Required.
	Store store.Store
	// Clock gives the created times; nil means clock.Wall.
	Clock clock.Clock
	// Inject returns the system message to put first in a chat of userID in
	// tenantID (memory and prompts), "" for none; it is called only when the
	// request has a GW-User-Id header. Nil means no injection.
	Inject func(ctx context.Context, tenantID, userID string) (string, error)
	// KeepaliveInterval is the upstream silence after which a stream gets
	// the comment ": keepalive". 0 means 15 s; negative disables keepalives.
	KeepaliveInterval time.Duration
	// Quota keeps the tenants' daily per-model budgets; share the
	// Accountant of /v1 and /c1. Nil means no quotas.
	Quota *quota.Accountant
	// MaxResponseBytes bounds what the gateway holds of one upstream
	// answer. 0 means 16 MiB.
	MaxResponseBytes int64
	// Classifier is the content guard of the tenants whose content_guard is
	// audit or block. Nil means the gateway has none.
	Classifier guard.Classifier
	// MaxChain bounds how many stored responses a previous_response_id
	// chain prepends; a longer chain answers 400 invalid_field
	// previous_response_id. 0 means DefaultMaxChain.
	MaxChain int
}

// Service serves the Responses API. Its handler methods are plain
// http.HandlerFuncs that expect the gateway's middleware to have run
// (principal in the context, body limit, request info).
type Service struct {
	chat     *pipeline.Chat
	st       store.Store
	clock    clock.Clock
	maxChain int
	maxBytes int64
	// newID returns a new id of an object of prefix's kind: prefix, "_"
	// and 32 random hex digits.
	newID func(prefix string) string
}

// New returns a Service for cfg.
func New(cfg Config) *Service {
	chat := pipeline.New(pipeline.Chat{
		Upstream: cfg.Upstream, Catalog: cfg.Catalog, Inject: cfg.Inject, Classifier: cfg.Classifier,
		Quota: cfg.Quota, Clock: cfg.Clock, Keepalive: cfg.KeepaliveInterval, MaxBytes: cfg.MaxResponseBytes,
	}, cfg.Store)
	s := &Service{
		chat: chat, st: cfg.Store, clock: chat.Clock, maxChain: cfg.MaxChain, maxBytes: cfg.MaxResponseBytes, newID: randomID,
	}
	if s.maxChain <= 0 {
		s.maxChain = DefaultMaxChain
	}
	return s
}

// randomID is prefix, "_" and 32 random hex digits: ids nobody guesses,
// though a stored response is found only by its own tenant and user anyway.
func randomID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return prefix + "_" + hex.EncodeToString(b[:])
}
