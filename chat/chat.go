package chat

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
)

// History is the conversation storage chat needs. The conversation family's
// *conversation.Service (and *conversation.Repository) implements it.
//
// Messages are OpenAI chat message objects as JSON: {"role","content"} with
// content a string or a parts array, plus "tool_calls" on an assistant reply
// that called tools.
type History interface {
	// LoadTx returns, in tx, a read transaction of Config.Store, the stored
	// messages of conversation id of user in tenant, oldest first, the
	// conversation's system prompt (role system) first when one was stored,
	// and seen, what it saw of the conversation for Append (opaque; nil when
	// there is nothing to hand on). A conversation never stored returns no
	// messages. One of another user returns an *errcat.Error
	// conversation_not_found; a store failure an *errcat.Error
	// storage_error.
	LoadTx(tx store.Tx, tenant, user, id string) (msgs []json.RawMessage, seen []byte, err error)
	// AppendReads appends to dst the reads LoadTx makes of conversation id
	// of tenant, for a store that reads ahead (store.Prefetcher).
	AppendReads(dst []store.Read, tenant, id string) []store.Read
	// Append stores msgs at the end of the conversation in one durable
	// transaction, creating it for user when it does not exist, in which case a
	// non-empty systemPrompt is stored first; systemPrompt is ignored for an
	// existing conversation. seen is what the turn's LoadTx saw (or nil), so
	// that a store on a server need not read the conversation again before
	// writing (store.Assumer); the outcome is the same whatever seen says.
	// Errors as LoadTx's.
	Append(ctx context.Context, tenant, user, id string, msgs []json.RawMessage, systemPrompt string, seen []byte) error
}

// Config configures the chat family.
type Config struct {
	// History stores conversations; required.
	History History
	// Upstream reaches the models; required.
	Upstream upstream.Upstream
	// Catalog is the model catalog the Upstream routes by; required.
	Catalog *upstream.Catalog
	// Store holds the tenant configuration (default_model) and the consent
	// grants read by the pre-flight checks; required.
	Store store.Store
	// Clock is the source of time. Nil means the wall clock.
	Clock clock.Clock
	// Logger logs events outside a request's own log line. Nil means
	// slog.Default().
	Logger *slog.Logger
	// Keepalive is the upstream silence after which a stream gets an SSE
	// keepalive comment. Zero means the relay's default (15 s); negative
	// disables keepalives.
	Keepalive time.Duration
	// Inject returns the system message placed first in every /c1 request
	// (tenant prompt, scope prompt, user prompt, then the memory entries), or ""
	// for none. It is always called on /c1, in the turn's one read
	// transaction of Store (with the tenant config and the history). Nil
	// injects nothing.
	Inject func(tx store.Tx, tenantID, userID string) (string, error)
	// InjectReads appends to dst the first reads Inject makes, which a store
	// that reads ahead (store.Prefetcher) fetches with the turn's other
	// reads, in one round trip. Nil means Inject's reads go one by one.
	InjectReads func(dst []store.Read, tenantID, userID string) []store.Read
	// Quota keeps the tenants' daily per-model budgets (model_quota_exhausted,
	// cloudB_daily_quota_exhausted); share one Accountant with /v1 so that both
	// endpoints count against the same budget. Nil means no quotas.
	Quota *quota.Accountant
	// MaxResponseBytes bounds what the gateway holds of one upstream answer
	// (relay.Options.MaxBytes); a reply is also refused when it alone would
	// not fit the model's context window, so that a stored conversation can
	// always be continued. 0 means relay.DefaultMaxBytes (16 MiB).
	MaxResponseBytes int64
	// Classifier is the content guard of the tenants whose content_guard is
	// audit or block (the gateway's guard.Classifier, bounded in time and
	// cached). Nil means the gateway has none: a block tenant's requests then
	// answer 503 upstream_unavailable, an audit tenant's go through.
	Classifier guard.Classifier
}

// Service serves POST /c1/chat.
type Service struct {
	history   History
	upstream  upstream.Upstream
	catalog   *upstream.Catalog
	store     store.Store
	clock     clock.Clock
	log       *slog.Logger
	consents  preflight.Consents
	inject    func(tx store.Tx, tenantID, userID string) (string, error)
	injectRds func(dst []store.Read, tenantID, userID string) []store.Read
	keepalive time.Duration
	quota     *quota.Accountant
	maxBytes  int64
	guard     guard.Classifier
}

// New returns the chat service of cfg.
func New(cfg Config) *Service {
	s := &Service{
		history:   cfg.History,
		upstream:  cfg.Upstream,
		catalog:   cfg.Catalog,
		store:     cfg.Store,
		clock:     cfg.Clock,
		log:       cfg.Logger,
		inject:    cfg.Inject,
		injectRds: cfg.InjectReads,
		keepalive: cfg.Keepalive,
		quota:     cfg.Quota,
		maxBytes:  cfg.MaxResponseBytes,
		guard:     cfg.Classifier,
	}
	if s.clock == nil {
		s.clock = clock.Wall{}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.store != nil { // the grants kept in Store, shared with /v1
		s.consents = preflight.NewStoreConsents(s.store, s.clock)
	}
	return s
}
