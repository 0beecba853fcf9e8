package auth

import (
	"cmp"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Catalog is an immutable set of tenants and of the tokens bound to them, keyed
// by token digest. It implements TokenCatalog. Build one with ParseCatalog,
// LoadFile or NewStatic; FileCatalog swaps whole Catalogs on reload. A Catalog,
// its Principals and its Tenants are shared by concurrent requests and must not
// be modified. The zero value and a nil *Catalog are empty catalogs.
type Catalog struct {
	tokens  map[Digest]*Principal
	tenants map[string]*Tenant
	order   []*Tenant // tenants in file (or argument) order
}

// StaticCatalog is the name under which tests and embedders use a Catalog built
// from Go values with NewStatic: an immutable TokenCatalog that never reloads.
type StaticCatalog = Catalog

var _ TokenCatalog = (*Catalog)(nil)

// Lookup returns the principal of the token whose SHA-256 is d, or (nil, false).
// The match is confirmed with a constant-time comparison of the digests; the map
// probe before it is keyed by the digest, which a caller cannot steer without
// inverting SHA-256. Lookup does not allocate and is safe for concurrent use.
func (c *Catalog) Lookup(d Digest) (*Principal, bool) {
	if c == nil {
		return nil, false
	}
	p, ok := c.tokens[d]
	if !ok || subtle.ConstantTimeCompare(p.Digest[:], d[:]) != 1 {
		return nil, false
	}
	return p, true
}

// Tenant returns the tenant with the given id, or (nil, false).
func (c *Catalog) Tenant(id string) (*Tenant, bool) {
	if c == nil {
		return nil, false
	}
	t, ok := c.tenants[id]
	return t, ok
}

// Tenants returns the catalog's tenants in file order (NewStatic: argument
// order). The slice is a fresh copy; the
// tenants are shared.
func (c *Catalog) Tenants() []*Tenant {
	if c == nil {
		return nil
	}
	return append([]*Tenant(nil), c.order...)
}

// Len returns the number of tokens in the catalog.
func (c *Catalog) Len() int {
	if c == nil {
		return 0
	}
	return len(c.tokens)
}

// StaticToken is one token of NewStatic: the fields of a token-file entry as Go
// values. Tenant is the tenant id; Role "" means RoleMember; Rate nil means the
// gateway's default rate.
type StaticToken struct {
	Tenant string
	Role   string
	Scopes []string
	Deny   []string
	Rate   *Rate
}

// NewStatic returns a Catalog built from Go values, for tests and embedders that
// keep their tokens elsewhere than in a token file. tokens maps each plain bearer
// token to its entry; every entry's Tenant must be the ID of one of tenants.
//
// NewStatic applies the checks of the token file (see ParseCatalog) and returns
// the first problem: a nil or repeated tenant, an empty tenant id, a token bound
// to an unknown tenant, an empty token or one with spaces or control characters,
// an unknown role or content_guard, a malformed scope, a Rate without PerSecond >
// 0 and Burst >= 1, a bad config_caps entry, a negative quota. Errors name a
// token by its TokenID, never by its value. The catalog keeps the tenants as given
// and copies of the scope slices and rates: the tenants must not be modified
// afterwards.
func NewStatic(tenants []*Tenant, tokens map[string]StaticToken) (*Catalog, error) {
	c := &Catalog{
		tokens:  make(map[Digest]*Principal, len(tokens)),
		tenants: make(map[string]*Tenant, len(tenants)),
	}
	for _, t := range tenants {
		if t == nil {
			return nil, errors.New("auth.NewStatic: nil tenant")
		}
		if _, dup := c.tenants[t.ID]; dup {
			return nil, fmt.Errorf("auth.NewStatic: duplicate tenant id %q", t.ID)
		}
		if err := checkTenant(t); err != nil {
			return nil, fmt.Errorf("auth.NewStatic: tenant %q: %w", t.ID, err)
		}
		c.tenants[t.ID] = t
		c.order = append(c.order, t)
	}
	// Visit tokens in a fixed order so that the error reported is stable.
	plain := make([]string, 0, len(tokens))
	for tok := range tokens {
		plain = append(plain, tok)
	}
	sort.Strings(plain)
	for _, tok := range plain {
		st := tokens[tok]
		d := DigestOf(tok)
		p := &Principal{
			TokenID: hex.EncodeToString(d[:6]),
			Digest:  d,
			Role:    cmp.Or(st.Role, RoleMember),
			Scopes:  slices.Clone(st.Scopes),
			Deny:    slices.Clone(st.Deny),
		}
		if st.Rate != nil {
			r := *st.Rate
			p.Rate = &r
		}
		var ok bool
		if p.Tenant, ok = c.tenants[st.Tenant]; !ok {
			return nil, fmt.Errorf("auth.NewStatic: token %s: token bound to unknown tenant %q", p.TokenID, st.Tenant)
		}
		if err := checkToken(tok); err != nil {
			return nil, fmt.Errorf("auth.NewStatic: token %s: %w", p.TokenID, err)
		}
		if err := checkPrincipal(p); err != nil {
			return nil, fmt.Errorf("auth.NewStatic: token %s: %w", p.TokenID, err)
		}
		c.tokens[d] = p
	}
	return c, nil
}

// MustStatic is NewStatic for tests and examples: it panics on error.
func MustStatic(tenants []*Tenant, tokens map[string]StaticToken) *Catalog {
	c, err := NewStatic(tenants, tokens)
	if err != nil {
		panic(err)
	}
	return c
}

// The checks below are shared by the token-file parser and NewStatic. They return
// messages without position; callers add it.

// checkTenant validates the fields of a tenant.
func checkTenant(t *Tenant) error {
	if t.ID == "" {
		return errors.New("empty tenant id")
	}
	for _, m := range t.Models {
		if m == "" {
			return errors.New("models: empty alias")
		}
	}
	if err := checkContentGuard(t.Settings.ContentGuard); err != nil {
		return err
	}
	for k, v := range t.ConfigCaps {
		if err := checkCap(k, int64(v)); err != nil {
			return err
		}
	}
	for alias, q := range t.Quotas {
		if alias == "" {
			return errors.New("quotas: empty alias")
		}
		if q.TokensPerDay < 0 || q.RequestsPerDay < 0 {
			return fmt.Errorf("quotas: %q: negative budget", alias)
		}
	}
	return nil
}

// checkPrincipal validates role, scopes and rate of a principal.
func checkPrincipal(p *Principal) error {
	if err := checkRole(p.Role); err != nil {
		return err
	}
	for _, s := range p.Scopes {
		if err := checkScope(s); err != nil {
			return err
		}
	}
	for _, s := range p.Deny {
		if err := checkScope(s); err != nil {
			return err
		}
	}
	if p.Rate != nil {
		if err := checkRate(*p.Rate); err != nil {
			return err
		}
	}
	return nil
}

func checkToken(tok string) error {
	if tok == "" {
		return errors.New("empty token")
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c == 0x7f {
			return errors.New("token contains a space or control character, which a bearer token cannot carry")
		}
	}
	return nil
}

func checkRole(r string) error {
	if r != RoleTenantAdmin && r != RoleMember {
		return fmt.Errorf("unknown role %q (want %s or %s)", r, RoleTenantAdmin, RoleMember)
	}
	return nil
}

// checkScope accepts resource:action[:qualifier], each part non-empty and made of
// lower-case letters, digits, '_' and '-'.
func checkScope(s string) error {
	parts := strings.Split(s, ":")
	ok := len(parts) == 2 || len(parts) == 3
	for _, p := range parts {
		if p == "" {
			ok = false
		}
		for i := 0; i < len(p); i++ {
			c := p[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
				ok = false
			}
		}
	}
	if !ok {
		return fmt.Errorf("malformed scope %q (want resource:action[:qualifier])", s)
	}
	return nil
}

func checkRate(r Rate) error {
	if !(r.PerSecond > 0) || r.Burst < 1 {
		return fmt.Errorf("rate: want per_second > 0 and burst >= 1, got %v and %d", r.PerSecond, r.Burst)
	}
	return nil
}

func checkContentGuard(g string) error {
	switch g {
	case "", "off", "audit", "block":
		return nil
	}
	return fmt.Errorf("settings: unknown content_guard %q (want \"off\", \"audit\" or \"block\")", g)
}

// checkCap validates one config_caps entry: the key must be a writable tenant
// config key with a hard cap, which "the operator can lift ... in token
// configuration", and the cap at least 1.
func checkCap(key string, v int64) error {
	switch key {
	case "image_gen_rate_per_hour", "image_max_ttl_hours", "compact_keep_last_n":
	default:
		return fmt.Errorf("config_caps: unknown key %q (want image_gen_rate_per_hour, image_max_ttl_hours or compact_keep_last_n)", key)
	}
	if v < 1 {
		return fmt.Errorf("config_caps: %s: want a cap >= 1, got %d", key, v)
	}
	return nil
}
