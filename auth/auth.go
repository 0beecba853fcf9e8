// Package auth declares TokenCatalog, the pluggable source of bearer tokens and
// tenants, and the Principal that a matched token yields. It is a top-level package
// rather than internal because embedders implement TokenCatalog and name its types.
//
// The default implementation, FileCatalog, reads the token file described in the
// README (and in ParseCatalog) with LoadFile and swaps it atomically on Reload.
// NewStatic builds the same immutable Catalog from Go values, for tests and
// embedders.
package auth

import (
	"context"
	"crypto/sha256"
	"strings"
)

// Digest is the SHA-256 of a bearer token. Tokens are only ever compared by digest,
// so plain tokens need not be kept in memory or on disk.
type Digest [sha256.Size]byte

// DigestOf returns the SHA-256 digest of token. It runs on every request, so a
// token of up to 256 bytes is hashed from a copy on the stack: converting it to
// []byte directly would escape to the heap.
func DigestOf(token string) Digest {
	var buf [256]byte
	if len(token) > len(buf) {
		return sha256.Sum256([]byte(token))
	}
	return sha256.Sum256(append(buf[:0], token...))
}

// TokenCatalog maps bearer-token digests to principals.
//
// Lookup is on every request's hot path: implementations must be safe for
// concurrent use, take no global lock and not allocate. Lookup returns (nil,
// false) for a digest that matches no token; it confirms a match with a
// constant-time comparison of digests.
type TokenCatalog interface {
	Lookup(d Digest) (*Principal, bool)
}

// Role names of the token file.
const (
	RoleTenantAdmin = "tenant_admin"
	RoleMember      = "member"
)

// Principal is what a valid token is allowed to be: a tenant, a role and scopes.
// A Principal is shared by all requests of its token and must not be modified.
type Principal struct {
	// TokenID identifies the token in logs and rate-limit keys without revealing
	// it: the first 12 hex digits of its digest.
	TokenID string
	// Digest is the SHA-256 of the token.
	Digest Digest
	// Tenant is the tenant the token is bound to; never nil in a catalog.
	Tenant *Tenant
	// Role is RoleTenantAdmin or RoleMember (the default of the token file and of
	// NewStatic). Any other value grants only Scopes.
	Role string
	// Scopes are the extra scopes granted on top of the role; Deny are removed
	// from the result.
	Scopes []string
	Deny   []string
	// Rate overrides the gateway's default per-token rate limit when non-nil.
	Rate *Rate
}

// Rate is a token-bucket setting: PerSecond tokens refill each second, up to Burst.
// In a catalog, PerSecond > 0 and Burst >= 1.
type Rate struct {
	PerSecond float64 `json:"per_second"`
	Burst     int     `json:"burst"`
}

// Tenant is a tenant of the token file. It is shared and must not be modified.
type Tenant struct {
	ID string
	// Models is the tenant's alias allowlist; nil allows every alias of the catalog.
	Models []string
	// Settings are operator-controlled tenant settings.
	Settings Settings
	// ConfigCaps lift the hard caps of writable tenant config keys, by key.
	ConfigCaps map[string]int
	// Quotas are per-model budgets, by alias; nil means unlimited.
	Quotas map[string]Quota
}

// Settings are the operator-controlled settings of a tenant.
type Settings struct {
	CloudDocConsent  bool     `json:"c1_cloud_doc_consent"`
	ContentGuard     string   `json:"content_guard"` // "off" (or "", the default), "audit" or "block"
	CodingAgentRepos []string `json:"coding_agent_repos"`
}

// Quota is a per-tenant budget for one model alias, for model_quota_exhausted.
type Quota struct {
	// TokensPerDay caps prompt plus completion tokens per UTC day; 0 is unlimited.
	TokensPerDay int64 `json:"tokens_per_day"`
	// RequestsPerDay caps requests per UTC day; 0 is unlimited.
	RequestsPerDay int64 `json:"requests_per_day"`
}

// AllowsModel reports whether alias is in the tenant's allowlist.
func (t *Tenant) AllowsModel(alias string) bool {
	if t.Models == nil {
		return true
	}
	for _, m := range t.Models {
		if m == alias {
			return true
		}
	}
	return false
}

// memberDenied are the scopes the member role lacks: "member has every scope
// except" these three.
var memberDenied = [...]string{"tenant_config:write", "system_prompts:write:tenant", "system_prompts:write:scope"}

// Allows reports whether the principal holds scope (resource:action[:qualifier]).
//
// The role gives the default set (tenant_admin: every scope; member: every scope
// except tenant_config:write, system_prompts:write:tenant and
// system_prompts:write:scope; any other role: none), Scopes add to it and Deny
// removes from it; Deny wins over everything. A granted scope without qualifier
// grants every qualifier; a denied scope without qualifier denies every qualifier.
// Asking for a scope without qualifier asks for all of its qualifiers: it is held
// only if none of them is missing or denied, so a member holds
// system_prompts:write:user but not system_prompts:write. Callers that check a
// qualified permission must ask for the qualified scope.
//
// A nil principal holds nothing. Allows does not allocate.
func (p *Principal) Allows(scope string) bool {
	if p == nil {
		return false
	}
	for _, d := range p.Deny {
		if overlaps(d, scope) {
			return false
		}
	}
	switch p.Role {
	case RoleTenantAdmin:
		return true
	case RoleMember:
		lacks := false
		for _, d := range memberDenied {
			if overlaps(d, scope) {
				lacks = true
				break
			}
		}
		if !lacks {
			return true
		}
	}
	for _, s := range p.Scopes {
		if covers(s, scope) {
			return true
		}
	}
	return false
}

// covers reports whether granted grants want: equal, or granted is want's
// resource:action prefix.
func covers(granted, want string) bool {
	if granted == want {
		return true
	}
	return strings.HasPrefix(want, granted) && want[len(granted)] == ':' && strings.Count(granted, ":") == 1
}

// overlaps reports whether a and b share a qualifier: one covers the other.
// A denial overlaps a wanted scope when it removes at least one of its qualifiers.
func overlaps(a, b string) bool { return covers(a, b) || covers(b, a) }

type ctxKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal of an authenticated request, or nil on public
// endpoints.
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(ctxKey{}).(*Principal)
	return p
}
