package auth_test

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/auth"
)

func TestAllows(t *testing.T) {
	admin := &auth.Principal{Role: auth.RoleTenantAdmin}
	member := &auth.Principal{Role: auth.RoleMember}
	tests := []struct {
		name  string
		p     *auth.Principal
		scope string
		want  bool
	}{
		{"admin has everything", admin, "tenant_config:write", true},
		{"admin has qualified", admin, "system_prompts:write:tenant", true},
		{"admin has unqualified", admin, "system_prompts:write", true},
		{"member chat", member, "chat:write", true},
		{"member tenant_config:read", member, "tenant_config:read", true},
		{"member lacks tenant_config:write", member, "tenant_config:write", false},
		{"member lacks system_prompts:write:tenant", member, "system_prompts:write:tenant", false},
		{"member lacks system_prompts:write:scope", member, "system_prompts:write:scope", false},
		{"member has system_prompts:write:user", member, "system_prompts:write:user", true},
		{"member lacks unqualified system_prompts:write", member, "system_prompts:write", false},
		{"member has system_prompts:read", member, "system_prompts:read", true},
		// "GET /v1/usage (scope usage:read, in every role's default set)".
		{"admin usage:read", admin, "usage:read", true},
		{"member usage:read", member, "usage:read", true},
		{"usage:read denied", &auth.Principal{Role: auth.RoleMember, Deny: []string{"usage:read"}}, "usage:read", false},
		{"member extra scope", &auth.Principal{Role: auth.RoleMember, Scopes: []string{"tenant_config:write"}}, "tenant_config:write", true},
		{"member extra unqualified grants every qualifier", &auth.Principal{Role: auth.RoleMember, Scopes: []string{"system_prompts:write"}}, "system_prompts:write:tenant", true},
		{"member extra unqualified grants unqualified", &auth.Principal{Role: auth.RoleMember, Scopes: []string{"system_prompts:write"}}, "system_prompts:write", true},
		{"member extra qualified grants only it", &auth.Principal{Role: auth.RoleMember, Scopes: []string{"system_prompts:write:tenant"}}, "system_prompts:write:scope", false},
		{"member extra qualified is not unqualified", &auth.Principal{Role: auth.RoleMember, Scopes: []string{"system_prompts:write:tenant"}}, "system_prompts:write", false},
		{"deny beats admin", &auth.Principal{Role: auth.RoleTenantAdmin, Deny: []string{"chat:write"}}, "chat:write", false},
		{"deny beats extra scope", &auth.Principal{Role: auth.RoleMember, Scopes: []string{"tenant_config:write"}, Deny: []string{"tenant_config:write"}}, "tenant_config:write", false},
		{"deny other scope", &auth.Principal{Role: auth.RoleMember, Deny: []string{"chat:write"}}, "models:read", true},
		{"deny unqualified denies every qualifier", &auth.Principal{Role: auth.RoleTenantAdmin, Deny: []string{"system_prompts:write"}}, "system_prompts:write:user", false},
		{"deny qualified denies only it", &auth.Principal{Role: auth.RoleTenantAdmin, Deny: []string{"system_prompts:write:tenant"}}, "system_prompts:write:user", true},
		{"deny qualified denies unqualified ask", &auth.Principal{Role: auth.RoleTenantAdmin, Deny: []string{"system_prompts:write:tenant"}}, "system_prompts:write", false},
		{"prefix is not a resource", &auth.Principal{Role: auth.RoleTenantAdmin, Deny: []string{"chat:wr"}}, "chat:write", true},
		{"unknown role has only scopes", &auth.Principal{Role: "", Scopes: []string{"models:read"}}, "models:read", true},
		{"unknown role has nothing else", &auth.Principal{Role: ""}, "chat:write", false},
		{"nil principal", nil, "chat:write", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Allows(tt.scope); got != tt.want {
				t.Errorf("Allows(%q) = %v, want %v", tt.scope, got, tt.want)
			}
		})
	}
}

func TestAllowsFromFile(t *testing.T) {
	c, err := auth.ParseCatalog(goodData())
	if err != nil {
		t.Fatal(err)
	}
	member, _ := c.Lookup(auth.DigestOf("member-secret"))
	for scope, want := range map[string]bool{
		"chat:write":                  false, // denied
		"tenant_config:read":          true,
		"tenant_config:write":         false,
		"system_prompts:write:user":   true,
		"system_prompts:write:tenant": false,
	} {
		if got := member.Allows(scope); got != want {
			t.Errorf("member.Allows(%q) = %v, want %v", scope, got, want)
		}
	}
}

func TestAllowsDoesNotAllocate(t *testing.T) {
	p := &auth.Principal{Role: auth.RoleMember, Scopes: []string{"tenant_config:write"}, Deny: []string{"chat:write"}}
	allocs := testing.AllocsPerRun(1000, func() {
		p.Allows("system_prompts:write:tenant")
		p.Allows("tenant_config:write")
	})
	if allocs != 0 {
		t.Errorf("Allows allocates %v times per run, want 0", allocs)
	}
}

func TestContext(t *testing.T) {
	p := &auth.Principal{TokenID: "x"}
	if got := auth.FromContext(auth.NewContext(context.Background(), p)); got != p {
		t.Errorf("FromContext = %v, want %v", got, p)
	}
	if got := auth.FromContext(context.Background()); got != nil {
		t.Errorf("FromContext(empty) = %v, want nil", got)
	}
}

func TestNewStatic(t *testing.T) {
	acme := &auth.Tenant{ID: "acme"}
	lonely := &auth.Tenant{ID: "lonely"}
	rate := &auth.Rate{PerSecond: 2, Burst: 3}
	scopes := []string{"tenant_config:write"}
	c, err := auth.NewStatic([]*auth.Tenant{lonely, acme}, map[string]auth.StaticToken{
		"tok-a": {Tenant: "acme", Scopes: scopes, Rate: rate},
		"tok-b": {Tenant: "acme", Role: auth.RoleTenantAdmin, Deny: []string{"chat:write"}},
	})
	if err != nil {
		t.Fatalf("NewStatic: %v", err)
	}
	p, ok := c.Lookup(auth.DigestOf("tok-a"))
	if !ok {
		t.Fatal("tok-a not found")
	}
	d := auth.DigestOf("tok-a")
	want := &auth.Principal{TokenID: sha("tok-a")[:12], Digest: d, Tenant: acme, Role: auth.RoleMember,
		Scopes: []string{"tenant_config:write"}, Rate: &auth.Rate{PerSecond: 2, Burst: 3}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("Lookup(tok-a) mismatch (-want +got):\n%s", diff)
	}
	if p.Tenant != acme {
		t.Error("principal does not point to the given tenant")
	}
	rate.Burst, scopes[0] = 99, "chat:write"
	if p.Rate.Burst != 3 || p.Scopes[0] != "tenant_config:write" {
		t.Error("NewStatic shares the caller's Rate or Scopes")
	}
	b, _ := c.Lookup(auth.DigestOf("tok-b"))
	if b == nil || !b.Allows("tenant_config:write") || b.Allows("chat:write") {
		t.Errorf("tok-b = %+v", b)
	}
	if _, ok := c.Tenant("lonely"); !ok {
		t.Error("tenant without tokens not registered")
	}
	var ids []string
	for _, t := range c.Tenants() {
		ids = append(ids, t.ID)
	}
	if got, want := strings.Join(ids, ","), "lonely,acme"; got != want {
		t.Errorf("Tenants() = %s, want %s", got, want)
	}
	var _ auth.TokenCatalog = auth.MustStatic(nil, nil)
}

func TestNewStaticErrors(t *testing.T) {
	a := []*auth.Tenant{{ID: "a"}}
	tests := []struct {
		name    string
		tenants []*auth.Tenant
		tokens  map[string]auth.StaticToken
		want    string
	}{
		{"nil tenant", []*auth.Tenant{nil}, nil, "nil tenant"},
		{"empty tenant id", []*auth.Tenant{{}}, nil, "empty tenant id"},
		{"duplicate tenant", []*auth.Tenant{{ID: "a"}, {ID: "a"}}, nil, `duplicate tenant id "a"`},
		{"bad content guard", []*auth.Tenant{{ID: "x", Settings: auth.Settings{ContentGuard: "on"}}}, nil, "content_guard"},
		{"bad cap", []*auth.Tenant{{ID: "x", ConfigCaps: map[string]int{"nope": 1}}}, nil, "config_caps"},
		{"negative quota", []*auth.Tenant{{ID: "x", Quotas: map[string]auth.Quota{"m": {TokensPerDay: -1}}}}, nil, "negative"},
		{"unknown tenant", a, map[string]auth.StaticToken{"t": {Tenant: "b"}}, `token bound to unknown tenant "b"`},
		{"no tenant", a, map[string]auth.StaticToken{"t": {}}, `token bound to unknown tenant ""`},
		{"empty token", a, map[string]auth.StaticToken{"": {Tenant: "a"}}, "empty token"},
		{"token with newline", a, map[string]auth.StaticToken{"a\n": {Tenant: "a"}}, "control character"},
		{"unknown role", a, map[string]auth.StaticToken{"t": {Tenant: "a", Role: "root"}}, `unknown role "root"`},
		{"bad scope", a, map[string]auth.StaticToken{"t": {Tenant: "a", Scopes: []string{"chat"}}}, `malformed scope "chat"`},
		{"bad deny", a, map[string]auth.StaticToken{"t": {Tenant: "a", Deny: []string{"Chat:write"}}}, `malformed scope "Chat:write"`},
		{"bad rate", a, map[string]auth.StaticToken{"t": {Tenant: "a", Rate: &auth.Rate{PerSecond: 1}}}, "burst >= 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := auth.NewStatic(tt.tenants, tt.tokens)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewStatic error = %v, want %q", err, tt.want)
			}
		})
	}
	// Errors name the token by its id, never by its value.
	_, err := auth.NewStatic(a, map[string]auth.StaticToken{"s3cret": {Tenant: "zz"}})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), sha("s3cret")[:12]) {
		t.Errorf("NewStatic error = %v, want the token id and not the token", err)
	}
}

func TestNilCatalog(t *testing.T) {
	var c *auth.Catalog
	if _, ok := c.Lookup(auth.DigestOf("x")); ok {
		t.Error("nil catalog found a token")
	}
	if _, ok := c.Tenant("x"); ok || c.Len() != 0 || c.Tenants() != nil {
		t.Error("nil catalog is not empty")
	}
}

func TestDigestOfDoesNotAllocate(t *testing.T) {
	token := strings.Repeat("t", 200) // longer than the 32 bytes the compiler keeps on the stack
	if got, want := auth.DigestOf(token), auth.Digest(sha256.Sum256([]byte(token))); got != want {
		t.Fatalf("DigestOf = %x, want %x", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { auth.DigestOf(token) }); n != 0 {
		t.Errorf("DigestOf allocates %v times", n)
	}
}
