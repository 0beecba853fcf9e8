package e2e_test

import (
	"testing"
)

func TestTenantConfig(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	r := g.get(t, "/v1/tenant/config", tokMember, "")
	if !wantStatus(t, r, 200, "spec /v1/tenant/config GET") {
		t.FailNow()
	}
	m := r.JSON()
	wk, _ := m["writable_keys"].([]any)
	wset := map[string]bool{}
	for _, k := range wk {
		wset[str(k)] = true
	}
	for _, k := range []string{"default_model", "image_gen_rate_per_hour", "image_max_ttl_hours", "compact_keep_last_n"} {
		if !wset[k] {
			t.Errorf("writable_keys %v lacks %s (DECISIONS 6)", wk, k)
		}
	}
	if len(wset) != 4 {
		t.Errorf("writable_keys %v, want exactly the 4 writable keys of DECISIONS 6", wk)
	}
	// every key with value, writable, range or enum: find the per-key entries
	keyInfo := map[string]map[string]any{}
	if ks, ok := m["keys"].(map[string]any); ok {
		for k, v := range ks {
			keyInfo[k], _ = v.(map[string]any)
		}
	} else {
		for k, v := range m {
			if vm, ok := v.(map[string]any); ok && vm["writable"] != nil {
				keyInfo[k] = vm
			}
		}
	}
	wantVals := map[string]any{"default_model": "lm-4-scout", "image_max_ttl_hours": 168.0, "image_gen_rate_per_hour": nil, "compact_keep_last_n": nil}
	for k, want := range wantVals {
		ki := keyInfo[k]
		if ki == nil {
			t.Errorf("GET /v1/tenant/config has no entry for %s with value and writable (DECISIONS 8.11): %s", k, truncate(string(r.Body), 400))
			continue
		}
		if _, ok := ki["value"]; !ok || ki["writable"] != true {
			t.Errorf("config key %s = %v: want value and writable true (DECISIONS 8.11)", k, ki)
		}
		if want != nil && ki["value"] != want {
			t.Errorf("config key %s value %v, want default %v (DECISIONS 5, 8.25)", k, ki["value"], want)
		}
		if k != "default_model" && ki["range"] == nil {
			t.Errorf("config key %s has no range (DECISIONS 8.11)", k)
		}
		if k == "default_model" && ki["enum"] == nil {
			t.Errorf("config key default_model has no enum (DECISIONS 8.11: range or enum where one applies)")
		}
	}
	rangeMax := func(k string) any {
		rg, _ := keyInfo[k]["range"].(map[string]any)
		return rg["max"]
	}
	if rangeMax("image_gen_rate_per_hour") != 500.0 {
		t.Errorf("image_gen_rate_per_hour range max %v, want 500 (config_caps lifts the 200 cap)", rangeMax("image_gen_rate_per_hour"))
	}
	if rangeMax("image_max_ttl_hours") != 720.0 || rangeMax("compact_keep_last_n") != 200.0 {
		t.Errorf("range max image_max_ttl_hours %v compact_keep_last_n %v, want 720 and 200 (spec Limits tenant config hard caps)", rangeMax("image_max_ttl_hours"), rangeMax("compact_keep_last_n"))
	}
	for _, k := range []string{"models", "c1_cloud_doc_consent", "content_guard", "coding_agent_repos"} {
		if ki := keyInfo[k]; ki == nil || ki["writable"] != false {
			t.Errorf("config key %s = %v, want listed with writable false (DECISIONS 8.11: GET lists every key)", k, ki)
		}
	}

	put := func(token, key string, value any) *resp {
		return g.do(t, "PUT", "/v1/tenant/config", token, "", map[string]any{"key": key, "value": value}, nil)
	}
	const inv = "invalid_request_error"
	const ref = "spec Limits tenant config hard caps; Codes tenant_config_*; DECISIONS 8.11"
	for _, ok := range []struct {
		key   string
		value any
	}{
		{"image_gen_rate_per_hour", 500}, {"image_max_ttl_hours", 720}, {"compact_keep_last_n", 200},
		{"default_model", "lm-4-scout-local"}, {"image_gen_rate_per_hour", 200},
	} {
		wantStatus(t, put(tokAdmin, ok.key, ok.value), 200, ref+": "+ok.key+" in range")
	}
	bad := func(key string, value any, code, why string) errCase {
		return errCase{name: key + " " + why, method: "PUT", path: "/v1/tenant/config", token: tokAdmin,
			body: map[string]any{"key": key, "value": value}, status: 400, typ: inv, code: code, param: "key", ref: ref}
	}
	badG := func(key string, value any, why string) errCase {
		c := bad(key, value, "tenant_config_invalid_value", why)
		c.token = tokGlobex
		return c
	}
	runErrCases(t, g, errCases{
		bad("image_gen_rate_per_hour", 501, "tenant_config_invalid_value", "over the lifted cap"),
		badG("image_gen_rate_per_hour", 201, "over the hard cap 200"),
		bad("image_max_ttl_hours", 721, "tenant_config_invalid_value", "over 720"),
		bad("compact_keep_last_n", 201, "tenant_config_invalid_value", "over 200"),
		bad("compact_keep_last_n", -1, "tenant_config_invalid_value", "negative"),
		bad("compact_keep_last_n", 0, "tenant_config_invalid_value", "zero"),
		bad("image_gen_rate_per_hour", "ten", "tenant_config_invalid_value", "wrong type"),
		bad("image_max_ttl_hours", 1.5, "tenant_config_invalid_value", "not an integer"),
		bad("default_model", "lm-transcribe", "tenant_config_invalid_value", "not in the allowlist"),
		bad("default_model", "lm-embed", "tenant_config_invalid_value", "not a chat alias (DECISIONS 8.27)"),
		bad("default_model", 5, "tenant_config_invalid_value", "wrong type"),
		bad("nope", 1, "tenant_config_invalid_value", "unknown key"),
		bad("models", []string{"lm-4-scout"}, "tenant_config_key_readonly", "operator key"),
		bad("c1_cloud_doc_consent", false, "tenant_config_key_readonly", "operator key"),
		bad("content_guard", "audit", "tenant_config_key_readonly", "operator key"),
		bad("coding_agent_repos", []string{}, "tenant_config_key_readonly", "operator key"),
		bad("config_caps", map[string]any{"image_gen_rate_per_hour": 1000}, "tenant_config_key_readonly", "operator key"),
		bad("models", nil, "tenant_config_key_readonly", "operator key reset with null"),
		bad("config_caps", nil, "tenant_config_key_readonly", "operator key reset with null"),
		{name: "unknown body field", method: "PUT", path: "/v1/tenant/config", token: tokAdmin,
			body: map[string]any{"key": "compact_keep_last_n", "value": 5, "note": "x"}, status: 400, typ: inv, code: "invalid_field", param: "body.note", ref: "DECISIONS 5"},
		{name: "missing key", method: "PUT", path: "/v1/tenant/config", token: tokAdmin,
			body: map[string]any{"value": 5}, status: 400, typ: inv, code: "missing_field", param: "body.key", ref: "DECISIONS 8.2"},
		{name: "member write", method: "PUT", path: "/v1/tenant/config", token: tokMember,
			body: map[string]any{"key": "compact_keep_last_n", "value": 5}, status: 403, typ: "permission_error", code: "forbidden", param: anyParam, ref: "spec Authentication 5"},
	})
	r = g.get(t, "/v1/tenant/config", tokAdmin, "")
	got := r.JSON()
	vals := map[string]any{}
	if ks, ok := got["keys"].(map[string]any); ok {
		for k, v := range ks {
			vals[k] = v.(map[string]any)["value"]
		}
	}
	if vals["image_gen_rate_per_hour"] != 200.0 || vals["image_max_ttl_hours"] != 720.0 || vals["default_model"] != "lm-4-scout-local" {
		t.Errorf("config after PUTs %v, want the written values (issue 5 item 5)", vals)
	}
	gv := g.get(t, "/v1/tenant/config", tokGlobex, "").JSON()
	if mustJSON(gv["keys"]) == mustJSON(got["keys"]) {
		t.Errorf("globex sees acme's configuration (tenant isolation)")
	}
	gk, _ := gv["keys"].(map[string]any)
	if ck, _ := gk["compact_keep_last_n"].(map[string]any); ck == nil || ck["value"] == 200.0 {
		t.Errorf("globex config keys %v: acme's compact_keep_last_n 200 leaked to another tenant", gv["keys"])
	}
	// null resets a key to its default
	wantStatus(t, put(tokAdmin, "default_model", nil), 200, "DECISIONS 8.11: value null resets")
	ks, _ := g.get(t, "/v1/tenant/config", tokAdmin, "").JSON()["keys"].(map[string]any)
	if dm, _ := ks["default_model"].(map[string]any); dm["value"] != "lm-4-scout" {
		t.Errorf("default_model after a reset with null: %v, want the default lm-4-scout (DECISIONS 5)", dm)
	}
}
