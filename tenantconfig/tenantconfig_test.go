package tenantconfig_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/tenantconfig"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

func catalog(t *testing.T) *upstream.Catalog {
	t.Helper()
	c, err := upstream.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// call runs h for tenant t with body ("": none) and returns the status and
// decoded answer.
func call(t *testing.T, h http.HandlerFunc, method string, tenant *auth.Tenant, body string) (int, any) {
	t.Helper()
	q := testkit.Request{Method: method, Target: "/v1/tenant/config",
		Principal: &auth.Principal{Tenant: tenant, Role: auth.RoleTenantAdmin}}
	if body != "" {
		q.Body = body
	}
	return testkit.ServeJSON(t, h, q)
}

func values(body any) map[string]any {
	m, _ := body.(map[string]any)
	v, _ := m["values"].(map[string]any)
	return v
}

func TestGetDefaults(t *testing.T) {
	svc := tenantconfig.NewService(memstore.New(), catalog(t), "moderation", "rules")
	tenant := &auth.Tenant{ID: "acme", Models: []string{"lm-4-scout", "lm-4-scout-local", "lm-embed"},
		Settings:   auth.Settings{CloudDocConsent: true, ContentGuard: "block", CodingAgentRepos: []string{"https://github.com/acme/app"}},
		ConfigCaps: map[string]int{"image_gen_rate_per_hour": 500},
		Quotas:     map[string]auth.Quota{"lm-4-scout": {TokensPerDay: 1000}}}
	status, body := call(t, svc.Get, "GET", tenant, "")
	if status != http.StatusOK {
		t.Fatalf("status %d: %v", status, body)
	}
	rng := func(min, max float64) map[string]any { return map[string]any{"min": min, "max": max} }
	want := map[string]any{
		"tenant_id": "acme",
		"values": map[string]any{
			"default_model": "lm-4-scout", "image_gen_rate_per_hour": 60.0, "image_max_ttl_hours": 168.0, "compact_keep_last_n": 20.0,
			"models": []any{"lm-4-scout", "lm-4-scout-local", "lm-embed"}, "c1_cloud_doc_consent": true, "content_guard": "block",
			"content_guard_classifiers": []any{"moderation", "rules"},
			"coding_agent_repos":        []any{"https://github.com/acme/app"},
			"config_caps":               map[string]any{"image_gen_rate_per_hour": 500.0, "image_max_ttl_hours": 720.0, "compact_keep_last_n": 200.0},
			"quotas":                    map[string]any{"lm-4-scout": map[string]any{"tokens_per_day": 1000.0, "requests_per_day": 0.0}},
		},
		"keys": map[string]any{
			"default_model": map[string]any{"value": "lm-4-scout", "writable": true, "type": "string", "default": "lm-4-scout",
				"enum": []any{"lm-4-scout", "lm-4-scout-local"}},
			"image_gen_rate_per_hour":   map[string]any{"value": 60.0, "writable": true, "type": "integer", "default": 60.0, "range": rng(1, 500)},
			"image_max_ttl_hours":       map[string]any{"value": 168.0, "writable": true, "type": "integer", "default": 168.0, "range": rng(1, 720)},
			"compact_keep_last_n":       map[string]any{"value": 20.0, "writable": true, "type": "integer", "default": 20.0, "range": rng(1, 200)},
			"models":                    map[string]any{"value": []any{"lm-4-scout", "lm-4-scout-local", "lm-embed"}, "writable": false, "type": "array"},
			"c1_cloud_doc_consent":      map[string]any{"value": true, "writable": false, "type": "boolean"},
			"content_guard":             map[string]any{"value": "block", "writable": false, "type": "string", "enum": []any{"off", "audit", "block"}},
			"content_guard_classifiers": map[string]any{"value": []any{"moderation", "rules"}, "writable": false, "type": "array"},
			"coding_agent_repos":        map[string]any{"value": []any{"https://github.com/acme/app"}, "writable": false, "type": "array"},
			"config_caps": map[string]any{"value": map[string]any{"image_gen_rate_per_hour": 500.0, "image_max_ttl_hours": 720.0, "compact_keep_last_n": 200.0},
				"writable": false, "type": "object"},
			"quotas": map[string]any{"value": map[string]any{"lm-4-scout": map[string]any{"tokens_per_day": 1000.0, "requests_per_day": 0.0}},
				"writable": false, "type": "object"},
		},
		"writable_keys": []any{"compact_keep_last_n", "default_model", "image_gen_rate_per_hour", "image_max_ttl_hours"},
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("GET mismatch (-want +got):\n%s", diff)
	}
}

func TestGetOperatorDefaults(t *testing.T) {
	cat := catalog(t)
	// A tenant whose guard is off is guarded by no classifier, whatever the
	// gateway has.
	svc := tenantconfig.NewService(memstore.New(), cat, "rules")
	_, body := call(t, svc.Get, "GET", &auth.Tenant{ID: "free"}, "")
	got := values(body)
	var models []any
	for _, a := range cat.Aliases() {
		models = append(models, a)
	}
	want := map[string]any{"models": models, "c1_cloud_doc_consent": false, "content_guard": "off",
		"content_guard_classifiers": []any{}, "coding_agent_repos": []any{}, "quotas": map[string]any{}}
	for k, v := range want {
		if diff := cmp.Diff(v, got[k]); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", k, diff)
		}
	}
}

func TestPut(t *testing.T) {
	acme := &auth.Tenant{ID: "acme", Models: []string{"lm-4-scout", "lm-4-scout-local", "lm-embed", "lm-vision"}}
	lifted := &auth.Tenant{ID: "big", ConfigCaps: map[string]int{"image_gen_rate_per_hour": 500, "image_max_ttl_hours": 1000, "compact_keep_last_n": 50}}
	invalid := testkit.WantError(errcat.TenantConfigInvalidValue, "key")
	readonly := testkit.WantError(errcat.TenantConfigKeyReadonly, "key")
	tests := []struct {
		name   string
		tenant *auth.Tenant
		body   string
		want   testkit.Error
		key    string // checked in the answer's values when the write succeeds
		value  any
	}{
		{"rate at the cap", acme, `{"key":"image_gen_rate_per_hour","value":200}`, testkit.Error{}, "image_gen_rate_per_hour", 200.0},
		{"rate at the minimum", acme, `{"key":"image_gen_rate_per_hour","value":1}`, testkit.Error{}, "image_gen_rate_per_hour", 1.0},
		{"rate over the cap", acme, `{"key":"image_gen_rate_per_hour","value":201}`, invalid, "", nil},
		{"rate zero", acme, `{"key":"image_gen_rate_per_hour","value":0}`, invalid, "", nil},
		{"rate negative", acme, `{"key":"image_gen_rate_per_hour","value":-5}`, invalid, "", nil},
		{"rate as a string", acme, `{"key":"image_gen_rate_per_hour","value":"50"}`, invalid, "", nil},
		{"rate as a fraction", acme, `{"key":"image_gen_rate_per_hour","value":1.5}`, invalid, "", nil},
		{"rate huge", acme, `{"key":"image_gen_rate_per_hour","value":1e30}`, invalid, "", nil},
		{"rate as a bool", acme, `{"key":"image_gen_rate_per_hour","value":true}`, invalid, "", nil},
		{"rate lifted by config_caps", lifted, `{"key":"image_gen_rate_per_hour","value":500}`, testkit.Error{}, "image_gen_rate_per_hour", 500.0},
		{"rate over the lifted cap", lifted, `{"key":"image_gen_rate_per_hour","value":501}`, invalid, "", nil},
		{"ttl at the cap", acme, `{"key":"image_max_ttl_hours","value":720}`, testkit.Error{}, "image_max_ttl_hours", 720.0},
		{"ttl over the cap", acme, `{"key":"image_max_ttl_hours","value":721}`, invalid, "", nil},
		{"ttl lifted", lifted, `{"key":"image_max_ttl_hours","value":1000}`, testkit.Error{}, "image_max_ttl_hours", 1000.0},
		{"ttl zero", acme, `{"key":"image_max_ttl_hours","value":0}`, invalid, "", nil},
		{"keep at the cap", acme, `{"key":"compact_keep_last_n","value":200}`, testkit.Error{}, "compact_keep_last_n", 200.0},
		{"keep over the cap", acme, `{"key":"compact_keep_last_n","value":201}`, invalid, "", nil},
		{"keep under a lowered cap", lifted, `{"key":"compact_keep_last_n","value":50}`, testkit.Error{}, "compact_keep_last_n", 50.0},
		{"keep over a lowered cap", lifted, `{"key":"compact_keep_last_n","value":51}`, invalid, "", nil},
		{"keep zero", acme, `{"key":"compact_keep_last_n","value":0}`, invalid, "", nil},
		{"reset with null", acme, `{"key":"compact_keep_last_n","value":null}`, testkit.Error{}, "compact_keep_last_n", 20.0},
		{"default_model allowed chat alias", acme, `{"key":"default_model","value":"lm-vision"}`, testkit.Error{}, "default_model", "lm-vision"},
		{"default_model not in the allowlist", acme, `{"key":"default_model","value":"lm-reasoner"}`, invalid, "", nil},
		{"default_model not a chat alias", acme, `{"key":"default_model","value":"lm-embed"}`, invalid, "", nil},
		{"default_model unknown alias", acme, `{"key":"default_model","value":"gpt-9"}`, invalid, "", nil},
		{"default_model not a string", acme, `{"key":"default_model","value":3}`, invalid, "", nil},
		{"default_model any chat alias without allowlist", lifted, `{"key":"default_model","value":"lm-reasoner"}`, testkit.Error{}, "default_model", "lm-reasoner"},
		{"default_model reset", acme, `{"key":"default_model","value":null}`, testkit.Error{}, "default_model", "lm-4-scout"},
		{"models is read-only", acme, `{"key":"models","value":["lm-4-scout"]}`, readonly, "", nil},
		{"consent is read-only", acme, `{"key":"c1_cloud_doc_consent","value":false}`, readonly, "", nil},
		{"guard is read-only", acme, `{"key":"content_guard","value":"off"}`, readonly, "", nil},
		{"guard classifiers are read-only", acme, `{"key":"content_guard_classifiers","value":[]}`, readonly, "", nil},
		{"repos are read-only", acme, `{"key":"coding_agent_repos","value":[]}`, readonly, "", nil},
		{"caps are read-only", acme, `{"key":"config_caps","value":{}}`, readonly, "", nil},
		{"quotas are read-only", acme, `{"key":"quotas","value":{}}`, readonly, "", nil},
		{"unknown key", acme, `{"key":"max_tokens","value":5}`, invalid, "", nil},
		{"missing key", acme, `{"value":5}`, testkit.WantError(errcat.MissingField, "body.key"), "", nil},
		{"empty key", acme, `{"key":"","value":5}`, testkit.WantError(errcat.MissingField, "body.key"), "", nil},
		{"missing value", acme, `{"key":"compact_keep_last_n"}`, testkit.WantError(errcat.MissingField, "body.value"), "", nil},
		{"key not a string", acme, `{"key":5,"value":5}`, testkit.WantError(errcat.InvalidField, "body.key"), "", nil},
		{"unknown field", acme, `{"key":"compact_keep_last_n","value":5,"tenant":"x"}`, testkit.WantError(errcat.InvalidField, "body.tenant"), "", nil},
		{"not JSON", acme, `{`, testkit.WantError(errcat.InvalidJSON, ""), "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := memstore.New()
			svc := tenantconfig.NewService(st, catalog(t))
			status, body := call(t, svc.Put, "PUT", tc.tenant, tc.body)
			if diff := cmp.Diff(tc.want, testkit.ErrorOf(t, status, body)); diff != "" {
				t.Fatalf("error mismatch (-want +got):\n%s", diff)
			}
			if tc.key == "" {
				// Nothing was written: the tenant still has the defaults.
				cfg, err := tenantconfig.Load(context.Background(), st, tc.tenant)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(clampDefaults(tc.tenant), cfg); diff != "" {
					t.Errorf("config after a rejected write mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(tc.value, values(body)[tc.key]); diff != "" {
				t.Errorf("%s in the answer mismatch (-want +got):\n%s", tc.key, diff)
			}
			_, got := call(t, svc.Get, "GET", tc.tenant, "")
			if diff := cmp.Diff(tc.value, values(got)[tc.key]); diff != "" {
				t.Errorf("%s in GET mismatch (-want +got):\n%s", tc.key, diff)
			}
		})
	}
}

// clampDefaults is Defaults in the tenant's ranges.
func clampDefaults(t *auth.Tenant) tenantconfig.Config {
	c := tenantconfig.Defaults()
	c.CompactKeepLastN = min(c.CompactKeepLastN, tenantconfig.Cap(t, tenantconfig.KeyCompactKeepLastN))
	return c
}

func TestLoad(t *testing.T) {
	st := memstore.New()
	cat := catalog(t)
	ctx := context.Background()
	tenant := &auth.Tenant{ID: "acme", ConfigCaps: map[string]int{"image_gen_rate_per_hour": 500}}
	svc := tenantconfig.NewService(st, cat)
	for _, b := range []string{
		`{"key":"image_gen_rate_per_hour","value":400}`,
		`{"key":"default_model","value":"lm-vision"}`,
		`{"key":"compact_keep_last_n","value":7}`,
	} {
		if status, body := call(t, svc.Put, "PUT", tenant, b); status != http.StatusOK {
			t.Fatalf("PUT %s: %d %v", b, status, body)
		}
	}
	tests := []struct {
		name   string
		tenant *auth.Tenant
		want   tenantconfig.Config
	}{
		{"stored values", tenant, tenantconfig.Config{DefaultModel: "lm-vision", ImageGenRatePerHour: 400, ImageMaxTTLHours: 168, CompactKeepLastN: 7}},
		{"cap no longer lifted: clamped", &auth.Tenant{ID: "acme"},
			tenantconfig.Config{DefaultModel: "lm-vision", ImageGenRatePerHour: 200, ImageMaxTTLHours: 168, CompactKeepLastN: 7}},
		{"cap lowered below the default", &auth.Tenant{ID: "acme", ConfigCaps: map[string]int{"image_max_ttl_hours": 24, "compact_keep_last_n": 5}},
			tenantconfig.Config{DefaultModel: "lm-vision", ImageGenRatePerHour: 200, ImageMaxTTLHours: 24, CompactKeepLastN: 5}},
		{"model left the allowlist", &auth.Tenant{ID: "acme", Models: []string{"lm-4-scout"}, ConfigCaps: tenant.ConfigCaps},
			tenantconfig.Config{DefaultModel: "lm-4-scout", ImageGenRatePerHour: 400, ImageMaxTTLHours: 168, CompactKeepLastN: 7}},
		{"other tenant", &auth.Tenant{ID: "other"}, tenantconfig.Defaults()},
		{"nil tenant", nil, tenantconfig.Defaults()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tenantconfig.Load(ctx, st, tc.tenant)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Load mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// A restart (a new Service over the same store) sees the same values.
	_, body := call(t, tenantconfig.NewService(st, cat).Get, "GET", tenant, "")
	if diff := cmp.Diff(400.0, values(body)["image_gen_rate_per_hour"]); diff != "" {
		t.Errorf("after restart mismatch (-want +got):\n%s", diff)
	}
}

func TestStorageError(t *testing.T) {
	st := memstore.New()
	svc := tenantconfig.NewService(st, catalog(t))
	tenant := &auth.Tenant{ID: "acme"}
	ctx := context.Background()
	storage := testkit.WantError(errcat.StorageError, "")

	st.FailNext(errors.New("disk on fire"))
	status, body := call(t, svc.Get, "GET", tenant, "")
	if diff := cmp.Diff(storage, testkit.ErrorOf(t, status, body)); diff != "" {
		t.Errorf("GET mismatch (-want +got):\n%s", diff)
	}
	st.FailNext(errors.New("disk on fire"))
	status, body = call(t, svc.Put, "PUT", tenant, `{"key":"compact_keep_last_n","value":5}`)
	if diff := cmp.Diff(storage, testkit.ErrorOf(t, status, body)); diff != "" {
		t.Errorf("PUT mismatch (-want +got):\n%s", diff)
	}
	st.FailNext(errors.New("disk on fire"))
	if _, err := tenantconfig.Load(ctx, st, tenant); err == nil {
		t.Error("Load with a failing store: no error")
	}
	cfg, err := tenantconfig.Load(ctx, st, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tenantconfig.Defaults(), cfg); diff != "" {
		t.Errorf("config after failed PUT mismatch (-want +got):\n%s", diff)
	}
}

func TestCap(t *testing.T) {
	lifted := &auth.Tenant{ID: "a", ConfigCaps: map[string]int{"image_gen_rate_per_hour": 500}}
	tests := []struct {
		tenant *auth.Tenant
		key    string
		want   int
	}{
		{nil, tenantconfig.KeyImageGenRatePerHour, 200},
		{nil, tenantconfig.KeyImageMaxTTLHours, 720},
		{nil, tenantconfig.KeyCompactKeepLastN, 200},
		{lifted, tenantconfig.KeyImageGenRatePerHour, 500},
		{lifted, tenantconfig.KeyImageMaxTTLHours, 720},
		{lifted, tenantconfig.KeyDefaultModel, 0},
	}
	for _, tc := range tests {
		if got := tenantconfig.Cap(tc.tenant, tc.key); got != tc.want {
			t.Errorf("Cap(%v, %s) = %d, want %d", tc.tenant, tc.key, got, tc.want)
		}
	}
}
