package memory

import (
	"net/http"
	"unicode/utf8"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/store"
)

// Size limits: "memory buckets 16384 bytes, a system-prompt level 8192 bytes.
// Sizes count UTF-8 bytes."
const (
	// BucketCapBytes is the cap of one memory bucket: the sum over its entries
	// of len(key) + len(value). A write that lands exactly on the cap is accepted.
	BucketCapBytes = 16384
	// PromptCapBytes is the cap of one system-prompt version (per level).
	PromptCapBytes = 8192
	// ConfirmTTLSeconds is the lifetime of a memory confirm token.
	ConfirmTTLSeconds = 60
	// DefaultScope is the scope_id used when a request names none, and the
	// scope whose prompt and public memory are injected into chats.
	DefaultScope = "default"
	// MaxScopeIDBytes bounds scope_id.
	MaxScopeIDBytes = 256
)

// Visibility values of a memory entry.
const (
	Private = "private"
	Public  = "public"
)

// Config configures a Service.
type Config struct {
	// Store holds entries, usage counters and prompt versions (buckets mem/*).
	// It must not be nil.
	Store store.Store
	// Clock times entries, versions and confirm tokens. Nil means clock.Wall.
	Clock clock.Clock
	// MaxPendingConfirms bounds the confirm tokens pending at once for one
	// tenant (in the store, bucket mem/confirms); when a new token would pass
	// it, the tenant's expired tokens are dropped, then the ones closest to
	// expiry. Zero (or negative) means 4096.
	MaxPendingConfirms int
}

// Service serves memory entries and system prompts, builds the injected system
// context of chats and provides the memory tools. Create it with New; it is safe
// for concurrent use.
type Service struct {
	st          store.Store
	clk         clock.Clock
	maxConfirms int // Config.MaxPendingConfirms
}

// New returns a Service over cfg. It panics when cfg.Store is nil (a wiring
// bug, not a run-time condition).
func New(cfg Config) *Service {
	if cfg.Store == nil {
		panic("memory.New: Config.Store is nil")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Wall{}
	}
	if cfg.MaxPendingConfirms <= 0 {
		cfg.MaxPendingConfirms = 4096
	}
	return &Service{st: cfg.Store, clk: cfg.Clock, maxConfirms: cfg.MaxPendingConfirms}
}

// Buckets of the memory layout; the package owns every bucket named mem/*.
// Key components are store.AppendString / store.AppendUint64 encoded.
var (
	// bucketEntries: str(tenant) str(scope) str(visibility) str(owner) str(key)
	// -> entryRecord (JSON). owner is the user for private buckets, "" for public.
	bucketEntries = []byte("mem/entries")
	// bucketUsage: str(tenant) str(scope) str(visibility) str(owner)
	// -> usageRecord (JSON), kept in the transaction of every entry write.
	bucketUsage = []byte("mem/usage")
	// bucketPrompts: str(tenant) str(level) str(subject) u64(n) -> versionRecord.
	// subject is "" (tenant level), the scope_id (scope level) or the user.
	bucketPrompts = []byte("mem/prompts")
	// bucketPromptHeads: str(tenant) str(level) str(subject) -> headRecord.
	bucketPromptHeads = []byte("mem/prompt-heads")
	// bucketConfirms: str(tenant) sha256(token) -> confirmRecord (JSON), the
	// pending confirm tokens of memory_remember (confirm.go).
	bucketConfirms = []byte("mem/confirms")
)

// bucketKey identifies a memory bucket (scope_id, visibility, owner) of a tenant.
type bucketKey struct {
	tenant, scope, visibility, owner string
}

// newBucketKey returns the bucket of visibility for user in scope.
func newBucketKey(tenant, scope, visibility, user string) bucketKey {
	b := bucketKey{tenant: tenant, scope: scope, visibility: visibility}
	if visibility == Private {
		b.owner = user
	}
	return b
}

// prefix is the usage key of the bucket and the scan prefix of its entries.
func (b bucketKey) prefix() []byte {
	k := store.AppendString(nil, b.tenant)
	k = store.AppendString(k, b.scope)
	k = store.AppendString(k, b.visibility)
	return store.AppendString(k, b.owner)
}

// entryKey is the key of entry key in the bucket.
func (b bucketKey) entryKey(key string) []byte { return store.AppendString(b.prefix(), key) }

// userOf returns the GW-User-Id of r, or missing_field.
func userOf(r *http.Request) (string, error) {
	u := httpx.UserID(r)
	if u == "" {
		return "", httpx.ErrNoUser()
	}
	return u, nil
}

// callerOf returns the tenant and the user (GW-User-Id, required) that the
// memory routes of r act for.
func callerOf(r *http.Request) (tenant, user string, err error) {
	c, err := httpx.CallerOf(r, httpx.UserRequired, false)
	if err != nil {
		return "", "", err
	}
	return c.Tenant.ID, c.User, nil
}

// scopeOf validates a scope_id (param names it): "" means DefaultScope.
func scopeOf(scope, param string) (string, error) {
	switch {
	case scope == "":
		return DefaultScope, nil
	case len(scope) > MaxScopeIDBytes:
		return "", errcat.Newf(errcat.InvalidField, param, "scope_id must be at most %d bytes.", MaxScopeIDBytes)
	case !utf8.ValidString(scope):
		return "", errcat.New(errcat.InvalidField, param, "scope_id must be valid UTF-8.")
	}
	return scope, nil
}

// visibilityOf validates a visibility (param names it).
func visibilityOf(v *string, param string) (string, error) {
	if v == nil || *v == "" {
		return "", errcat.Newf(errcat.MissingField, param, "%s is required (private or public).", httpx.FieldName(param))
	}
	if *v != Private && *v != Public {
		return "", errcat.Newf(errcat.InvalidField, param, "%s must be private or public.", httpx.FieldName(param))
	}
	return *v, nil
}

// bucketOf validates the visibility and the optional scope_id of a write,
// visibility first, and returns the bucket of user; param maps a field name to
// the param that names it ("body.visibility", "arguments.scope_id").
func bucketOf(tenant, user string, vis, scope *string, param func(field string) string) (bucketKey, error) {
	v, err := visibilityOf(vis, param("visibility"))
	if err != nil {
		return bucketKey{}, err
	}
	sc := ""
	if scope != nil {
		sc = *scope
	}
	if sc, err = scopeOf(sc, param("scope_id")); err != nil {
		return bucketKey{}, err
	}
	return newBucketKey(tenant, sc, v, user), nil
}
