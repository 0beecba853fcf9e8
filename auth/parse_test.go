package auth_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/auth"
)

// sha returns the hex SHA-256 of token, as the token file's sha256 field holds it.
func sha(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

const goodFile = `{
  "tenants": [
    {
      "id": "acme",
      "models": ["lm-4-scout", "lm-4-scout-local"],
      "settings": {"c1_cloud_doc_consent": true, "content_guard": "block",
                   "coding_agent_repos": ["https://github.com/acme/app"]},
      "config_caps": {"image_gen_rate_per_hour": 500},
      "quotas": {"lm-4-scout-cloudB": {"tokens_per_day": 100000, "requests_per_day": 500}}
    },
    {"id": "globex", "models": []},
    {"id": "initech", "models": null, "settings": null}
  ],
  "tokens": [
    {"token": "plain-secret", "tenant": "acme", "role": "tenant_admin"},
    {"sha256": "` + "SHA_MEMBER" + `", "tenant": "acme", "role": "member",
     "scopes": ["tenant_config:read"], "deny": ["chat:write"],
     "rate": {"per_second": 5, "burst": 50}},
    {"token": "globex-token", "tenant": "globex"}
  ]
}
`

func goodData() []byte {
	return []byte(strings.Replace(goodFile, "SHA_MEMBER", sha("member-secret"), 1))
}

func TestParseCatalog(t *testing.T) {
	c, err := auth.ParseCatalog(goodData())
	if err != nil {
		t.Fatalf("ParseCatalog: %v", err)
	}
	if got := c.Len(); got != 3 {
		t.Errorf("Len() = %d, want 3", got)
	}

	acme, ok := c.Tenant("acme")
	if !ok {
		t.Fatal(`Tenant("acme") not found`)
	}
	wantAcme := &auth.Tenant{
		ID:     "acme",
		Models: []string{"lm-4-scout", "lm-4-scout-local"},
		Settings: auth.Settings{
			CloudDocConsent:  true,
			ContentGuard:     "block",
			CodingAgentRepos: []string{"https://github.com/acme/app"},
		},
		ConfigCaps: map[string]int{"image_gen_rate_per_hour": 500},
		Quotas:     map[string]auth.Quota{"lm-4-scout-cloudB": {TokensPerDay: 100000, RequestsPerDay: 500}},
	}
	if diff := cmp.Diff(wantAcme, acme); diff != "" {
		t.Errorf("Tenant(acme) mismatch (-want +got):\n%s", diff)
	}

	// models [] allows nothing, models absent or null allows everything.
	globex, _ := c.Tenant("globex")
	initech, _ := c.Tenant("initech")
	if globex.AllowsModel("lm-4-scout") {
		t.Error(`globex (models []) allows lm-4-scout`)
	}
	if !initech.AllowsModel("anything") {
		t.Error(`initech (models null) does not allow every alias`)
	}
	if !acme.AllowsModel("lm-4-scout-local") || acme.AllowsModel("lm-4-scout-cloudB") {
		t.Error("acme allowlist not applied")
	}
	var ids []string
	for _, t := range c.Tenants() {
		ids = append(ids, t.ID)
	}
	if diff := cmp.Diff([]string{"acme", "globex", "initech"}, ids); diff != "" {
		t.Errorf("Tenants() mismatch (-want +got):\n%s", diff)
	}

	// Plain token: looked up by its digest; the plain value is not kept.
	admin, ok := c.Lookup(auth.DigestOf("plain-secret"))
	if !ok {
		t.Fatal("plain token not found")
	}
	d := auth.DigestOf("plain-secret")
	wantAdmin := &auth.Principal{TokenID: hex.EncodeToString(d[:])[:12], Digest: d, Tenant: acme, Role: auth.RoleTenantAdmin}
	if diff := cmp.Diff(wantAdmin, admin); diff != "" {
		t.Errorf("Lookup(plain-secret) mismatch (-want +got):\n%s", diff)
	}

	// sha256 token: matched by the token whose hash the file holds.
	member, ok := c.Lookup(auth.DigestOf("member-secret"))
	if !ok {
		t.Fatal("sha256 token not found")
	}
	d = auth.DigestOf("member-secret")
	wantMember := &auth.Principal{
		TokenID: sha("member-secret")[:12], Digest: d, Tenant: acme, Role: auth.RoleMember,
		Scopes: []string{"tenant_config:read"}, Deny: []string{"chat:write"},
		Rate: &auth.Rate{PerSecond: 5, Burst: 50},
	}
	if diff := cmp.Diff(wantMember, member); diff != "" {
		t.Errorf("Lookup(member-secret) mismatch (-want +got):\n%s", diff)
	}

	// Role defaults to member.
	if p, _ := c.Lookup(auth.DigestOf("globex-token")); p == nil || p.Role != auth.RoleMember {
		t.Errorf("default role = %v, want member", p)
	}
	if _, ok := c.Lookup(auth.DigestOf("nope")); ok {
		t.Error("unknown token found")
	}
	if _, ok := c.Tenant("nope"); ok {
		t.Error("unknown tenant found")
	}
}

func TestParseCatalogUpperCaseSHA(t *testing.T) {
	data := `{"tenants":[{"id":"a"}],"tokens":[{"sha256":"` + strings.ToUpper(sha("x")) + `","tenant":"a"}]}`
	c, err := auth.ParseCatalog([]byte(data))
	if err != nil {
		t.Fatalf("ParseCatalog: %v", err)
	}
	if _, ok := c.Lookup(auth.DigestOf("x")); !ok {
		t.Error("upper-case sha256 not matched")
	}
}

func TestParseCatalogEmpty(t *testing.T) {
	for _, data := range []string{`{}`, `{"tenants":[],"tokens":[]}`, `{"tenants":null}`} {
		c, err := auth.ParseCatalog([]byte(data))
		if err != nil {
			t.Errorf("ParseCatalog(%s): %v", data, err)
			continue
		}
		if c.Len() != 0 {
			t.Errorf("ParseCatalog(%s).Len() = %d, want 0", data, c.Len())
		}
	}
}

func TestParseCatalogErrors(t *testing.T) {
	// Each input puts the problem on a known line. want is a substring of Msg.
	tests := []struct {
		name string
		data string
		line int
		want string
	}{
		{"empty file", ``, 1, "empty file"},
		{"not JSON", "{\n\"tenants\": [\n  {\"id\": \"a\",,}\n]}", 3, "invalid JSON"},
		{"truncated", "{\n\"tenants\": [\n", 3, "unexpected end of file"},
		{"trailing data", "{}\n{}", 2, "data after the top-level object"},
		{"not an object", "\n[]", 2, "file: want an object"},
		{"unknown top-level field", "{\n  \"tenants\": [],\n  \"tokenz\": []\n}", 3, `unknown field "tokenz"`},
		{"tenants not an array", "{\n\"tenants\": {}\n}", 2, "tenants: want an array"},
		{"unknown tenant field", "{\"tenants\": [\n {\"id\": \"a\",\n  \"modles\": []}\n]}", 3, `tenants[0]: unknown field "modles"`},
		{"missing tenant id", "{\"tenants\": [\n {\"models\": []}\n]}", 2, `tenants[0]: missing field "id"`},
		{"empty tenant id", "{\"tenants\": [\n {\"id\": \"\"}\n]}", 2, "empty tenant id"},
		{"tenant id not a string", "{\"tenants\": [\n {\"id\": 7}\n]}", 2, "tenants[0].id: want a string"},
		{"duplicate tenant id", "{\"tenants\": [\n {\"id\": \"a\"},\n {\"id\": \"b\"},\n {\"id\": \"a\"}\n]}", 4, `duplicate tenant id "a" (first at line 2)`},
		{"duplicate member", "{\"tenants\": [\n {\"id\": \"a\",\n  \"id\": \"b\"}\n]}", 3, `field "id" given twice (first at line 2)`},
		{"unknown settings field", "{\"tenants\": [{\"id\": \"a\",\n \"settings\": {\n  \"content_gaurd\": \"block\"}}]}", 3, `tenants[0].settings: unknown field "content_gaurd"`},
		{"bad content_guard", "{\"tenants\": [{\"id\": \"a\",\n \"settings\": {\n  \"content_guard\": \"blok\"}}]}", 3, `unknown content_guard "blok"`},
		{"consent not bool", "{\"tenants\": [{\"id\": \"a\",\n \"settings\": {\"c1_cloud_doc_consent\": \"yes\"}}]}", 2, "want true or false"},
		{"unknown cap key", "{\"tenants\": [{\"id\": \"a\",\n \"config_caps\": {\n\n \"default_model\": 3}}]}", 4, `config_caps: unknown key "default_model"`},
		{"cap below 1", "{\"tenants\": [{\"id\": \"a\",\n \"config_caps\": {\"compact_keep_last_n\": 0}}]}", 2, "want a cap >= 1"},
		{"cap not integer", "{\"tenants\": [{\"id\": \"a\",\n \"config_caps\": {\"compact_keep_last_n\": 1.5}}]}", 2, "want an integer"},
		{"unknown quota field", "{\"tenants\": [{\"id\": \"a\", \"quotas\": {\"m\":\n {\"tokens_per_week\": 1}}}]}", 2, `unknown field "tokens_per_week"`},
		{"negative quota", "{\"tenants\": [{\"id\": \"a\", \"quotas\": {\"m\": {\n\"requests_per_day\": -1}}}]}", 2, "negative budget"},
		{"empty model alias", "{\"tenants\": [{\"id\": \"a\", \"models\": [\n\"x\",\n\"\"]}]}", 3, "tenants[0].models[1]: empty alias"},
		{"token bound to unknown tenant", tokenFile(`{"token": "t", "tenant": "x"}`), 12, `token bound to unknown tenant "x"`},
		{"unknown token field", tokenFile(`{"token": "t", "tenant": "a", "name": "ci"}`), 12, `tokens[1]: unknown field "name"`},
		{"both token and sha256", tokenFile(`{"token": "t", "sha256": "` + sha("t") + `", "tenant": "a"}`), 12, `both "token" and "sha256"`},
		{"neither token nor sha256", tokenFile(`{"tenant": "a"}`), 12, `neither "token" nor "sha256"`},
		{"missing tenant", tokenFile(`{"token": "t"}`), 12, `missing field "tenant"`},
		{"empty token", tokenFile(`{"token": "", "tenant": "a"}`), 12, "empty token"},
		{"token with space", tokenFile(`{"token": "a b", "tenant": "a"}`), 12, "space or control character"},
		{"sha256 not hex", tokenFile(`{"sha256": "zz` + sha("t")[2:] + `", "tenant": "a"}`), 12, "want the 64 hex digits"},
		{"sha256 too short", tokenFile(`{"sha256": "` + sha("t")[:62] + `", "tenant": "a"}`), 12, "want the 64 hex digits"},
		{"sha256 too long", tokenFile(`{"sha256": "` + sha("t") + `00", "tenant": "a"}`), 12, "want the 64 hex digits"},
		{"duplicate plain token", tokenFile(`{"token": "first", "tenant": "a"}`), 12, "duplicate token (same digest as the token at line 11)"},
		{"duplicate plain and sha256", tokenFile(`{"sha256": "` + sha("first") + `", "tenant": "a"}`), 12, "duplicate token (same digest as the token at line 11)"},
		{"unknown role", tokenFile(`{"token": "t", "tenant": "a", "role": "owner"}`), 12, `tokens[1].role: unknown role "owner"`},
		{"empty role", tokenFile(`{"token": "t", "tenant": "a", "role": ""}`), 12, `unknown role ""`},
		{"scope without action", tokenFile(`{"token": "t", "tenant": "a", "scopes": ["chat"]}`), 12, `tokens[1].scopes[0]: malformed scope "chat"`},
		{"scope with four parts", tokenFile(`{"token": "t", "tenant": "a", "deny": ["a:b:c:d"]}`), 12, `tokens[1].deny[0]: malformed scope "a:b:c:d"`},
		{"scope upper case", tokenFile(`{"token": "t", "tenant": "a", "scopes": ["chat:Write"]}`), 12, `malformed scope "chat:Write"`},
		{"scope empty part", tokenFile(`{"token": "t", "tenant": "a", "scopes": ["chat::x"]}`), 12, `malformed scope "chat::x"`},
		{"scope not a string", tokenFile(`{"token": "t", "tenant": "a", "scopes": [1]}`), 12, "tokens[1].scopes[0]: want a string"},
		{"rate zero", tokenFile(`{"token": "t", "tenant": "a", "rate": {"per_second": 0, "burst": 1}}`), 12, "per_second: want a number > 0"},
		{"burst zero", tokenFile(`{"token": "t", "tenant": "a", "rate": {"per_second": 1, "burst": 0}}`), 12, "burst: want an integer >= 1"},
		{"rate missing burst", tokenFile(`{"token": "t", "tenant": "a", "rate": {"per_second": 1}}`), 12, "want both per_second and burst"},
		{"rate unknown field", tokenFile(`{"token": "t", "tenant": "a", "rate": {"per_second": 1, "burst": 2, "per_minute": 3}}`), 12, `unknown field "per_minute"`},
		{"token not an object", tokenFile(`"t"`), 12, "tokens[1]: want an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := auth.ParseCatalog([]byte(tt.data))
			pe, ok := errors.AsType[*auth.ParseError](err)
			if !ok {
				t.Fatalf("ParseCatalog error = %v, want a *ParseError", err)
			}
			if pe.Line != tt.line || !strings.Contains(pe.Msg, tt.want) {
				t.Errorf("ParseCatalog error = %q (line %d), want line %d and %q", err, pe.Line, tt.line, tt.want)
			}
		})
	}
}

// tokenFile returns a token file whose second token, on line 12, is tok.
func tokenFile(tok string) string {
	return `{
  "tenants": [
    {
      "id": "a",
      "settings": {
        "content_guard": "audit"
      }
    }
  ],
  "tokens": [
    {"token": "first", "tenant": "a"},
    ` + tok + `
  ]
}`
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	writeFile(t, path, tokenFile(`{"token": "t", "tenant": "x"}`))
	_, err := auth.LoadFile(path)
	want := path + `:12: tokens[1]: token bound to unknown tenant "x"`
	if err == nil || err.Error() != want {
		t.Errorf("LoadFile error = %v, want %s", err, want)
	}

	if _, err := auth.LoadFile(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFile(missing) error = %v, want os.ErrNotExist", err)
	}

	writeFile(t, path, string(goodData()))
	c, err := auth.LoadFile(path)
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if c.Len() != 3 {
		t.Errorf("Len() = %d, want 3", c.Len())
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestContentGuardValues: the content_guard setting is "off" (the default),
// "audit" or "block"; "off" is accepted as written, like an absent setting.
func TestContentGuardValues(t *testing.T) {
	for _, v := range []string{"off", "audit", "block"} {
		data := []byte(`{"tenants":[{"id":"a","settings":{"content_guard":"` + v + `"}}],"tokens":[]}`)
		c, err := auth.ParseCatalog(data)
		if err != nil {
			t.Fatalf("content_guard %q: %v", v, err)
		}
		if a, _ := c.Tenant("a"); a.Settings.ContentGuard != v {
			t.Errorf("content_guard %q read as %q", v, a.Settings.ContentGuard)
		}
	}
}
