package blackbox_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// Group 4: memory caps, confirm tokens, system prompts, tenant config, injection.

func mem(key, value, vis string) map[string]any {
	return map[string]any{"key": key, "value": value, "visibility": vis}
}

func TestMemoryCaps(t *testing.T) {
	t.Parallel()
	g := startGW(t, gwOpts{})
	put := func(u string, b map[string]any) *resp { return g.post(t, "/v1/memory", tokMember, user(u), b) }
	usage := func(u, vis string) map[string]any {
		r := g.get(t, "/v1/memory/usage?visibility="+vis, tokMember, user(u))
		wantStatus(t, "usage", r, 200)
		return r.JSON
	}
	// Exactly 16384 bytes: key 1 + value 16383.
	wantStatus(t, "write of exactly 16384", put("m1", mem("k", strings.Repeat("v", 16383), "private")), 200)
	u := usage("m1", "private")
	if u["used_bytes"] != float64(16384) || u["cap_bytes"] != float64(16384) || u["entries"] != float64(1) {
		t.Errorf("usage at the cap: %v", u)
	}
	wantErr(t, "one more entry", put("m1", mem("a", "b", "private")), 409, "conflict_error", "memory_bucket_full", "value")
	// Replacing the key with a smaller value fits.
	wantStatus(t, "replace with smaller", put("m1", mem("k", strings.Repeat("v", 16000), "private")), 200)
	wantStatus(t, "then a new entry fits", put("m1", mem("ab", strings.Repeat("c", 381), "private")), 200)
	wantErr(t, "and one byte more does not", put("m1", mem("z", "1", "private")), 409, "conflict_error", "memory_bucket_full", "value")
	// One byte over on an empty bucket.
	wantErr(t, "16385 bytes", put("m2", mem("k", strings.Repeat("v", 16384), "private")), 409, "conflict_error", "memory_bucket_full", "value")
	// UTF-8 bytes count: 'é' is 2 bytes.
	wantStatus(t, "utf-8 at cap", put("m3", mem("kk", strings.Repeat("é", 8191), "private")), 200)
	wantErr(t, "utf-8 over cap", put("m4", mem("kkk", strings.Repeat("é", 8191), "private")), 409, "conflict_error", "memory_bucket_full", "value")
	// Buckets are separate per owner, visibility and scope.
	wantStatus(t, "other user's bucket", put("m5", mem("k", strings.Repeat("v", 16383), "private")), 200)
	wantStatus(t, "public bucket separate", put("m1", mem("k", strings.Repeat("v", 16383), "public")), 200)
	b := mem("k", strings.Repeat("v", 16383), "public")
	b["scope_id"] = "other"
	wantStatus(t, "other scope", put("m1", b), 200)
	// Public buckets are shared by the tenant's users in a scope.
	u = usage("m9", "public")
	if u["used_bytes"] != float64(16384) {
		t.Errorf("public bucket not shared: usage of another user %v", u)
	}
	// Delete.
	r := g.do(t, req{method: "DELETE", path: "/v1/memory?visibility=private&key=ab", token: tokMember, hdr: user("m1")})
	wantStatus(t, "delete", r, 200)
	// Validation.
	wantErr(t, "bad visibility", put("m1", mem("k", "v", "secret")), 400, "invalid_request_error", "invalid_field", "body.visibility")
	wantErr(t, "unknown field", put("m1", map[string]any{"key": "k", "value": "v", "visibility": "private", "x": 1}), 400, "invalid_request_error", "invalid_field", "body.x")
	wantErr(t, "missing key", put("m1", map[string]any{"value": "v", "visibility": "private"}), 400, "invalid_request_error", "missing_field", "body.key")
	// REST public writes need no confirm token.
	r = g.get(t, "/v1/memory?visibility=public", tokMember, user("m1"))
	if wantStatus(t, "list public", r, 200) && !strings.Contains(string(r.Body), `"k"`) {
		t.Errorf("REST public write not stored: %s", trunc(r.Body))
	}
}

func TestToolsConfirm(t *testing.T) {
	t.Parallel()
	g := startGW(t, gwOpts{})
	exec := func(u string, args map[string]any) *resp {
		return g.post(t, "/v1/tools/execute", tokMember, user(u), map[string]any{"name": "memory_remember", "arguments": args})
	}
	r := g.post(t, "/v1/tools/execute", tokMember, nil, map[string]any{"inspect": true})
	if wantStatus(t, "inspect", r, 200) {
		names := map[string]bool{}
		for _, tt := range asSlice(r.JSON["tools"]) {
			m := tt.(map[string]any)
			names[m["name"].(string)] = true
			if m["description"] == nil || m["parameters"] == nil {
				t.Errorf("tool %v lacks description/parameters", m["name"])
			}
		}
		// rag_search and agent_call come with the /a1 family, not built yet.
		for _, n := range []string{"memory_remember", "memory_forget", "current_time"} {
			if !names[n] {
				t.Errorf("built-in tool %s not listed (DECISIONS 7)", n)
			}
		}
	}
	listPublic := func() string {
		return string(g.get(t, "/v1/memory?visibility=public", tokMember, user("t1")).Body)
	}
	args := mem("fact", "sky is blue", "public")
	r = exec("t1", args)
	if !wantStatus(t, "public remember", r, 200) {
		return
	}
	tok, _ := r.JSON["confirm_token"].(string)
	if r.JSON["confirm_required"] != true || tok == "" || r.JSON["expires_in"] != float64(60) {
		t.Errorf("first public remember: %s, want confirm_required/confirm_token/expires_in 60", r.Body)
	}
	if strings.Contains(listPublic(), "sky is blue") {
		t.Errorf("first public remember wrote the entry")
	}
	// Mismatched arguments with the token.
	bad := mem("fact", "sky is green", "public")
	bad["confirm_token"] = tok
	wantErr(t, "mismatched args", exec("t1", bad), 400, "invalid_request_error", "memory_confirm_required", "confirm_token")
	wrong := mem("fact", "sky is blue", "public")
	wrong["confirm_token"] = "not-a-token"
	wantErr(t, "wrong token", exec("t1", wrong), 400, "invalid_request_error", "memory_confirm_required", "confirm_token")
	// Another user with the same token.
	other := mem("fact", "sky is blue", "public")
	other["confirm_token"] = tok
	wantErr(t, "other user's token", exec("t2", other), 400, "invalid_request_error", "memory_confirm_required", "confirm_token")
	good := mem("fact", "sky is blue", "public")
	good["confirm_token"] = tok
	r = exec("t1", good)
	wantStatus(t, "confirmed", r, 200)
	if r.JSON["confirm_required"] == true {
		t.Errorf("confirmed write answered confirm_required again: %s", r.Body)
	}
	if !strings.Contains(listPublic(), "sky is blue") {
		t.Errorf("confirmed public remember not stored")
	}
	wantErr(t, "reused token", exec("t1", good), 400, "invalid_request_error", "memory_confirm_required", "confirm_token")
	// Private through the tool path writes at once.
	r = exec("t1", mem("pk", "pv", "private"))
	if wantStatus(t, "private remember", r, 200) && r.JSON["confirm_required"] == true {
		t.Errorf("private remember asked for confirmation")
	}
	if !strings.Contains(string(g.get(t, "/v1/memory?visibility=private", tokMember, user("t1")).Body), "pv") {
		t.Errorf("private tool write not stored")
	}
	r = g.post(t, "/v1/tools/execute", tokMember, user("t1"), map[string]any{"name": "no_such_tool", "arguments": map[string]any{}})
	wantErr(t, "unknown tool", r, 400, "invalid_request_error", "invalid_field", "body.name")
}

func TestSystemPromptVersions(t *testing.T) {
	t.Parallel()
	g := startGW(t, gwOpts{})
	h := user("p1")
	do := func(m, p string, body any) *resp {
		return g.do(t, req{method: m, path: p, token: tokMember, hdr: h, body: body})
	}
	versions := func() string {
		r := do("GET", "/v1/system-prompts/user/versions", nil)
		var s []string
		var items []any
		if v, ok := r.JSON["versions"]; ok {
			items = asSlice(v)
		} else if v, ok := r.JSON["data"]; ok {
			items = asSlice(v)
		} else {
			t.Errorf("versions answer shape: %s", trunc(r.Body))
		}
		for _, it := range items {
			m := it.(map[string]any)
			s = append(s, fmt.Sprintf("%v:%v:%v", m["n"], m["content"], m["is_current"]))
			if m["created_at"] == nil {
				t.Errorf("version without created_at: %v", m)
			}
		}
		return strings.Join(s, ",")
	}
	for i := 1; i <= 3; i++ {
		r := do("PUT", "/v1/system-prompts/user", map[string]any{"content": fmt.Sprint("v", i)})
		if wantStatus(t, fmt.Sprint("put v", i), r, 200) && r.JSON["n"] != float64(i) {
			t.Errorf("put v%d: n %v", i, r.JSON["n"])
		}
	}
	if got := versions(); got != "1:v1:false,2:v2:false,3:v3:true" {
		t.Errorf("versions %q", got)
	}
	wantErr(t, "hard delete current", do("DELETE", "/v1/system-prompts/user/v/3", nil), 409, "conflict_error", "system_prompt_current_locked", "version")
	wantStatus(t, "hard delete non-current", do("DELETE", "/v1/system-prompts/user/v/1", nil), 200)
	wantErr(t, "rollback to deleted", do("PUT", "/v1/system-prompts/user/current/1", nil), 404, "not_found_error", "system_prompt_version_not_found", "version")
	wantErr(t, "rollback to unknown", do("PUT", "/v1/system-prompts/user/current/99", nil), 404, "not_found_error", "system_prompt_version_not_found", "version")
	wantErr(t, "hard delete unknown", do("DELETE", "/v1/system-prompts/user/v/99", nil), 404, "not_found_error", "system_prompt_version_not_found", "version")
	wantStatus(t, "rollback to 2", do("PUT", "/v1/system-prompts/user/current/2", nil), 200)
	if got := versions(); got != "2:v2:true,3:v3:false" {
		t.Errorf("after rollback: %q", got)
	}
	r := do("GET", "/v1/system-prompts/user", nil)
	if wantStatus(t, "get current", r, 200) && r.JSON["content"] != "v2" {
		t.Errorf("current prompt: %s", r.Body)
	}
	wantStatus(t, "prior current now deletable", do("DELETE", "/v1/system-prompts/user/v/3", nil), 200)
	wantErr(t, "2 is locked", do("DELETE", "/v1/system-prompts/user/v/2", nil), 409, "conflict_error", "system_prompt_current_locked", "version")
	wantStatus(t, "soft delete", do("DELETE", "/v1/system-prompts/user", nil), 200)
	wantErr(t, "no current after soft delete", do("GET", "/v1/system-prompts/user", nil), 404, "not_found_error", "system_prompt_version_not_found", anyParam)
	wantStatus(t, "hard delete after soft delete", do("DELETE", "/v1/system-prompts/user/v/2", nil), 200)
	r = do("PUT", "/v1/system-prompts/user", map[string]any{"content": "v4"})
	if wantStatus(t, "new after deletes", r, 200) && r.JSON["n"] != float64(4) {
		t.Errorf("version numbers reused: n %v, want 4", r.JSON["n"])
	}
	// Size cap: 8192 bytes per level.
	wantStatus(t, "8192 bytes", do("PUT", "/v1/system-prompts/user", map[string]any{"content": strings.Repeat("x", 8192)}), 200)
	wantErr(t, "8193 bytes", do("PUT", "/v1/system-prompts/user", map[string]any{"content": strings.Repeat("x", 8193)}), 400, "invalid_request_error", "system_prompt_too_large", "content")
	wantErr(t, "utf-8 over cap", do("PUT", "/v1/system-prompts/user", map[string]any{"content": strings.Repeat("é", 4097)}), 400, "invalid_request_error", "system_prompt_too_large", "content")
	wantErr(t, "unknown level", do("PUT", "/v1/system-prompts/galaxy", map[string]any{"content": "x"}), 400, "invalid_request_error", "invalid_field", anyParam)
	wantErr(t, "unknown field", do("PUT", "/v1/system-prompts/user", map[string]any{"content": "x", "extra": 1}), 400, "invalid_request_error", "invalid_field", "body.extra")
	// Levels are per user: p2 sees no user prompt.
	r = g.get(t, "/v1/system-prompts/user", tokMember, user("p2"))
	wantErr(t, "other user's level", r, 404, "not_found_error", "system_prompt_version_not_found", anyParam)
}

func TestTenantConfig(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	cloudA := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: local.URL, cloudA: cloudA.URL})
	r := g.get(t, "/v1/tenant/config", tokMember, nil)
	if wantStatus(t, "GET config", r, 200) {
		wk := asSlice(r.JSON["writable_keys"])
		var s []string
		for _, k := range wk {
			s = append(s, k.(string))
		}
		if strings.Join(sorted(s), ",") != "compact_keep_last_n,default_model,image_gen_rate_per_hour,image_max_ttl_hours" {
			t.Errorf("writable_keys %v", s)
		}
	}
	put := func(key string, value any) *resp {
		return g.do(t, req{method: "PUT", path: "/v1/tenant/config", token: tokAdmin, body: map[string]any{"key": key, "value": value}})
	}
	inv := func(name string, r *resp) {
		t.Helper()
		wantErr(t, name, r, 400, "invalid_request_error", "tenant_config_invalid_value", "key")
	}
	wantStatus(t, "image_gen_rate_per_hour 500 (cap lifted to 500)", put("image_gen_rate_per_hour", 500), 200)
	inv("image_gen_rate_per_hour 501", put("image_gen_rate_per_hour", 501))
	wantStatus(t, "image_max_ttl_hours 720", put("image_max_ttl_hours", 720), 200)
	inv("image_max_ttl_hours 721", put("image_max_ttl_hours", 721))
	wantStatus(t, "compact_keep_last_n 200", put("compact_keep_last_n", 200), 200)
	inv("compact_keep_last_n 201", put("compact_keep_last_n", 201))
	inv("compact_keep_last_n 0", put("compact_keep_last_n", 0))
	inv("compact_keep_last_n string", put("compact_keep_last_n", "ten"))
	inv("compact_keep_last_n 1.5", put("compact_keep_last_n", 1.5))
	inv("default_model embeddings alias", put("default_model", "lm-embed"))
	inv("default_model outside allowlist", put("default_model", "lm-image"))
	inv("default_model unknown", put("default_model", "nope"))
	inv("unknown key", put("no_such_key", 1))
	for _, k := range []string{"models", "c1_cloud_doc_consent", "content_guard", "coding_agent_repos", "config_caps"} {
		wantErr(t, "readonly "+k, put(k, nil), 400, "invalid_request_error", "tenant_config_key_readonly", "key")
	}
	wantErr(t, "unknown body field", g.do(t, req{method: "PUT", path: "/v1/tenant/config", token: tokAdmin, body: map[string]any{"key": "compact_keep_last_n", "value": 3, "zz": 1}}), 400, "invalid_request_error", "invalid_field", "body.zz")
	wantErr(t, "missing key", g.do(t, req{method: "PUT", path: "/v1/tenant/config", token: tokAdmin, body: map[string]any{"value": 3}}), 400, "invalid_request_error", "missing_field", "body.key")

	// default_model drives /c1 without model/provider; provider strips the suffix.
	wantStatus(t, "default_model cloudA", put("default_model", "lm-4-scout-cloudA"), 200)
	r = g.get(t, "/v1/tenant/config", tokMember, nil)
	if v, _ := r.JSON["values"].(map[string]any); v != nil && v["default_model"] != "lm-4-scout-cloudA" {
		t.Errorf("GET after PUT: default_model %v", v["default_model"])
	}
	n := len(chatCalls(cloudA))
	wantStatus(t, "c1 default", c1(g, t, tokMember, "u", nil, map[string]any{"message": "x"}), 200)
	if len(chatCalls(cloudA)) != n+1 {
		t.Errorf("/c1 without model did not use default_model lm-4-scout-cloudA")
	}
	nl := len(chatCalls(local))
	wantStatus(t, "c1 provider local", c1(g, t, tokMember, "u", nil, map[string]any{"message": "x", "provider": "local"}), 200)
	if len(chatCalls(local)) != nl+1 {
		t.Errorf("provider local with default_model lm-4-scout-cloudA: not routed to lm-4-scout-local (DECISIONS 8.6)")
	}
	// Reset with null.
	wantStatus(t, "reset default_model", put("default_model", nil), 200)
	r = g.get(t, "/v1/tenant/config", tokMember, nil)
	if v, _ := r.JSON["values"].(map[string]any); v != nil && v["default_model"] != "lm-4-scout" {
		t.Errorf("after reset: default_model %v", v["default_model"])
	}
	// Per tenant: beta is unchanged.
	r = g.get(t, "/v1/tenant/config", tokBetaAdmin, nil)
	if v, _ := r.JSON["values"].(map[string]any); v != nil && v["compact_keep_last_n"] == float64(200) {
		t.Errorf("tenant config leaked to another tenant")
	}
}

func TestInjection(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: local.URL})
	adm := func(m, p string, u string, body any) *resp {
		return g.do(t, req{method: m, path: p, token: tokAdmin, hdr: user(u), body: body})
	}
	wantStatus(t, "tenant prompt", adm("PUT", "/v1/system-prompts/tenant", "i1", map[string]any{"content": "TENANT-P"}), 200)
	wantStatus(t, "scope prompt", adm("PUT", "/v1/system-prompts/scope", "i1", map[string]any{"content": "SCOPE-P"}), 200)
	wantStatus(t, "user prompt", adm("PUT", "/v1/system-prompts/user", "i1", map[string]any{"content": "USER-P"}), 200)
	wantStatus(t, "private memory", g.post(t, "/v1/memory", tokMember, user("i1"), mem("color", "green", "private")), 200)
	wantStatus(t, "public memory", g.post(t, "/v1/memory", tokMember, user("i2"), mem("city", "Paris", "public")), 200)

	body := map[string]any{"model": "lm-4-scout-local", "messages": []any{
		map[string]any{"role": "system", "content": "CLIENT-SYS"}, map[string]any{"role": "user", "content": "hi"}}}
	check := func(name string, msgs []map[string]any, wantClientSys bool) {
		t.Helper()
		if len(msgs) == 0 || msgs[0]["role"] != "system" {
			t.Errorf("%s: first message %v, want the injected system message", name, msgs)
			return
		}
		c, _ := msgs[0]["content"].(string)
		order := []string{"TENANT-P", "SCOPE-P", "USER-P", "color: green", "city: Paris"}
		last := -1
		for _, s := range order {
			i := strings.Index(c, s)
			if i < 0 || i < last {
				t.Errorf("%s: injected system message %q lacks %q or has it out of order (DECISIONS 6)", name, c, s)
				break
			}
			last = i
		}
		if strings.Count(roles(msgs), "system:") != map[bool]int{true: 2, false: 1}[wantClientSys] {
			t.Errorf("%s: system messages: %s", name, roles(msgs))
		}
	}
	r := g.post(t, "/v1/chat/completions", tokMember, user("i1"), body)
	if wantStatus(t, "v1 with user", r, 200) {
		calls := chatCalls(local)
		msgs := upstreamMessages(t, calls[len(calls)-1])
		check("/v1 with GW-User-Id", msgs, true)
		if len(msgs) == 3 && msgs[1]["content"] != "CLIENT-SYS" {
			t.Errorf("client system message not kept after the injected one: %s", roles(msgs))
		}
	}
	r = g.post(t, "/v1/chat/completions", tokMember, nil, body)
	if wantStatus(t, "v1 without user", r, 200) {
		calls := chatCalls(local)
		if got := roles(upstreamMessages(t, calls[len(calls)-1])); got != "system:CLIENT-SYS | user:hi" {
			t.Errorf("/v1 without GW-User-Id: upstream messages %s, want no injection", got)
		}
	}
	r = c1(g, t, tokMember, "i1", nil, map[string]any{"message": "hello", "model": "lm-4-scout-local"})
	if wantStatus(t, "c1 injection", r, 200) {
		calls := chatCalls(local)
		check("/c1", upstreamMessages(t, calls[len(calls)-1]), false)
	}
	// Another user gets no private memory of i1 and no user prompt.
	r = c1(g, t, tokMember, "i3", nil, map[string]any{"message": "hello", "model": "lm-4-scout-local"})
	if wantStatus(t, "c1 other user", r, 200) {
		calls := chatCalls(local)
		c := string(calls[len(calls)-1].Body)
		if strings.Contains(c, "green") || strings.Contains(c, "USER-P") {
			t.Errorf("user i1's memory or prompt injected for i3: %s", trunc(calls[len(calls)-1].Body))
		}
		if !strings.Contains(c, "TENANT-P") || !strings.Contains(c, "Paris") {
			t.Errorf("tenant prompt / public memory not injected for i3")
		}
	}
}
