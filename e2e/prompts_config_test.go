package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// versions returns n -> is_current of a level's versions.
func versions(t *testing.T, g *gw, token, user, level string) map[int]bool {
	t.Helper()
	r := g.get(t, "/v1/system-prompts/"+level+"/versions", token, user)
	if !wantStatus(t, r, 200, "GET versions") {
		return nil
	}
	var list []map[string]any
	if err := json.Unmarshal(r.Body, &list); err != nil {
		list = listData(r)
		if m := r.JSON(); m != nil && len(list) == 0 {
			if v, ok := m["versions"].([]any); ok {
				for _, x := range v {
					list = append(list, x.(map[string]any))
				}
			}
		}
	}
	out := map[int]bool{}
	for _, v := range list {
		n, ok := v["n"].(float64)
		cur, ok2 := v["is_current"].(bool)
		if _, ok3 := v["content"].(string); !ok || !ok2 || !ok3 || v["created_at"] == nil {
			t.Errorf("version entry %v: want n, content, is_current, created_at (DECISIONS 6)", v)
		}
		out[int(n)] = cur
	}
	return out
}

func TestSystemPrompts(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	put := func(content string) *resp {
		return g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "alice", map[string]any{"content": content}, nil)
	}
	wantStatus(t, put("first"), 200, "DECISIONS 6: PUT stores version 1")
	wantStatus(t, put("second"), 200, "DECISIONS 6: PUT stores version 2")
	if v := versions(t, g, tokMember, "alice", "user"); mustJSON(v) != mustJSON(map[int]bool{1: false, 2: true}) {
		t.Errorf("versions %v, want 1 not current, 2 current (DECISIONS 6)", v)
	}
	if v := versions(t, g, tokMember, "bob", "user"); len(v) != 0 {
		t.Errorf("bob sees alice's user-level versions %v (isolation)", v)
	}
	del := func(path string) *resp { return g.do(t, "DELETE", path, tokMember, "alice", nil, nil) }
	const st = "spec States and transitions: system-prompt version"
	wantErr(t, del("/v1/system-prompts/user/v/2"), 409, "conflict_error", "system_prompt_current_locked", "version", st+": hard delete of current")
	wantErr(t, g.do(t, "PUT", "/v1/system-prompts/user/current/9", tokMember, "alice", nil, nil), 404, "not_found_error", "system_prompt_version_not_found", "version", st+": rollback to unknown n")
	wantErr(t, del("/v1/system-prompts/user/v/9"), 404, "not_found_error", "system_prompt_version_not_found", "version", "spec Codes: version tuple unknown")
	wantStatus(t, g.do(t, "PUT", "/v1/system-prompts/user/current/1", tokMember, "alice", nil, nil), 200, st+": rollback")
	if v := versions(t, g, tokMember, "alice", "user"); mustJSON(v) != mustJSON(map[int]bool{1: true, 2: false}) {
		t.Errorf("versions after rollback %v, want 1 current (spec States)", v)
	}
	wantStatus(t, del("/v1/system-prompts/user/v/2"), 200, st+": prior version may then be hard-deleted")
	wantErr(t, del("/v1/system-prompts/user/v/1"), 409, "conflict_error", "system_prompt_current_locked", "version", st)
	wantStatus(t, del("/v1/system-prompts/user"), 200, st+": soft delete")
	if v := versions(t, g, tokMember, "alice", "user"); mustJSON(v) != mustJSON(map[int]bool{1: false}) {
		t.Errorf("versions after soft delete %v, want only 1, not current (spec States)", v)
	}
	wantStatus(t, del("/v1/system-prompts/user/v/1"), 200, st+": after soft delete a version may be hard-deleted")
	wantStatus(t, put("third"), 200, "PUT after deletes")
	if v := versions(t, g, tokMember, "alice", "user"); !v[3] || len(v) != 1 {
		t.Errorf("versions %v, want version 3 current (DECISIONS 6: n = last + 1)", v)
	}

	const sz = "spec Limits System prompt 8 KB; DECISIONS 8.8 (8192 bytes)"
	wantStatus(t, put(strings.Repeat("p", 8192)), 200, sz+": exactly 8192 bytes")
	wantErr(t, put(strings.Repeat("p", 8193)), 400, "invalid_request_error", "system_prompt_too_large", "content", sz)
	wantErr(t, put(strings.Repeat("é", 4097)), 400, "invalid_request_error", "system_prompt_too_large", "content", sz+": UTF-8 bytes (8194)")
	r := g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "alice", map[string]any{"content": "x", "extra": 1}, nil)
	wantErr(t, r, 400, "invalid_request_error", "invalid_field", "body.extra", "DECISIONS 5: unknown field")
	// tenant and scope levels by an admin
	wantStatus(t, g.do(t, "PUT", "/v1/system-prompts/tenant", tokAdmin, "alice", map[string]any{"content": "T1"}, nil), 200, "tenant level")
	wantStatus(t, g.do(t, "PUT", "/v1/system-prompts/scope", tokAdmin, "alice", map[string]any{"content": "S1", "scope_id": "team-a"}, nil), 200, "scope level")
	if v := versions(t, g, tokMember, "bob", "tenant"); !v[1] {
		t.Errorf("tenant-level versions seen by bob %v, want version 1 current (tenant level is shared)", v)
	}
	if v := versions(t, g, tokGlobexMem, "alice", "tenant"); len(v) != 0 {
		t.Errorf("globex sees acme's tenant-level prompt versions %v (tenant isolation)", v)
	}
	if v := versions(t, g, tokGlobexMem, "alice", "user"); len(v) != 0 {
		t.Errorf("globex's alice sees acme's alice's user-level versions %v (tenant isolation)", v)
	}
	// rule 4: a tenant_admin may omit GW-User-Id on read-only endpoints; DECISIONS
	// 8.18 keeps the header mandatory only for memory and user-level prompts
	for _, level := range []string{"tenant", "scope"} {
		r := g.get(t, "/v1/system-prompts/"+level+"/versions", tokAdmin, "")
		wantStatus(t, r, 200, "spec End-user identity 4 (tenant_admin may omit the header on read-only endpoints); DECISIONS 8.18 (only memory and user-level prompts always need a user): GET "+level+"-level versions")
	}
}

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
	if v := g.get(t, "/v1/tenant/config", tokGlobex, "").JSON(); mustJSON(v["keys"]) == mustJSON(got["keys"]) {
		t.Errorf("globex sees acme's configuration (tenant isolation)")
	}
}

func TestInjection(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	must := func(r *resp) {
		t.Helper()
		wantStatus(t, r, 200, "setup")
	}
	must(g.do(t, "PUT", "/v1/system-prompts/tenant", tokAdmin, "alice", map[string]any{"content": "TENANT-PROMPT"}, nil))
	must(g.do(t, "PUT", "/v1/system-prompts/scope", tokAdmin, "alice", map[string]any{"content": "SCOPE-PROMPT"}, nil))
	must(g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "alice", map[string]any{"content": "USER-PROMPT"}, nil))
	must(g.post(t, "/v1/memory", tokMember, "alice", map[string]any{"key": "favourite_colour", "value": "ultramarine", "visibility": "private"}))
	must(g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "bob", map[string]any{"content": "BOB-PROMPT"}, nil))

	checkInjected := func(where string, msgs []map[string]any, clientMsgs int) {
		t.Helper()
		if len(msgs) == 0 || msgs[0]["role"] != "system" {
			t.Errorf("%s: upstream messages %s, want an injected system message first (DECISIONS 6)", where, truncate(mustJSON(msgs), 400))
			return
		}
		sys := textOf(msgs[0])
		idx := []int{strings.Index(sys, "TENANT-PROMPT"), strings.Index(sys, "SCOPE-PROMPT"), strings.Index(sys, "USER-PROMPT"), strings.Index(sys, "ultramarine")}
		if idx[0] < 0 || idx[1] < idx[0] || idx[2] < idx[1] || idx[3] < idx[2] {
			t.Errorf("%s: injected system message %q, want tenant, scope, user prompt then memory, in that order (DECISIONS 6)", where, sys)
		}
		if strings.Contains(sys, "BOB-PROMPT") {
			t.Errorf("%s: alice's request carries bob's prompt", where)
		}
		n := 0
		for _, m := range msgs {
			if strings.Contains(textOf(m), "TENANT-PROMPT") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: the injected text appears in %d messages, want one system message", where, n)
		}
		if clientMsgs >= 0 && len(msgs) != clientMsgs+1 {
			t.Errorf("%s: upstream got %d messages, want the client's %d plus one", where, len(msgs), clientMsgs)
		}
	}
	// /v1 with GW-User-Id
	body := chatBody("lm-4-scout-local", "hello")
	body["messages"] = []any{map[string]any{"role": "system", "content": "CLIENT-SYSTEM"}, map[string]any{"role": "user", "content": "hello"}}
	must(g.post(t, "/v1/chat/completions", tokMember, "alice", body))
	msgs := messagesOf(lastBody(t, g.Local, "/chat/completions"))
	checkInjected("/v1 with GW-User-Id", msgs, 2)
	if len(msgs) == 3 && textOf(msgs[1]) != "CLIENT-SYSTEM" {
		t.Errorf("client system message moved: %s", mustJSON(msgs))
	}
	// /v1 without GW-User-Id: no injection
	must(g.post(t, "/v1/chat/completions", tokMember, "", chatBody("lm-4-scout-local", "plain")))
	up := lastBody(t, g.Local, "/chat/completions")
	if mustJSON(up["messages"]) != mustJSON([]any{map[string]any{"role": "user", "content": "plain"}}) {
		t.Errorf("/v1 without GW-User-Id: upstream messages %s, want the client's unchanged (spec End-user identity 5; DECISIONS 6)", mustJSON(up["messages"]))
	}
	// streaming /v1 too
	sb := chatBody("lm-4-scout-local", "stream")
	sb["stream"] = true
	must(g.post(t, "/v1/chat/completions", tokMember, "alice", sb))
	checkInjected("/v1 streaming", messagesOf(lastBody(t, g.Local, "/chat/completions")), 1)
	// /c1 always, and never persisted
	r := g.post(t, "/c1/chat", tokMember, "alice", map[string]any{"message": "c1 hello", "stream": false, "model": "lm-4-scout-local"})
	must(r)
	checkInjected("/c1", messagesOf(lastBody(t, g.Local, "/chat/completions")), -1)
	cid := r.Header.Get("gw-conversation-id")
	hist := g.get(t, "/c1/conversations/"+cid, tokMember, "alice")
	if strings.Contains(string(hist.Body), "TENANT-PROMPT") || strings.Contains(string(hist.Body), "ultramarine") {
		t.Errorf("injected content persisted in the conversation: %s (issue 5 item 4)", truncate(string(hist.Body), 400))
	}
	// scope prompt of another scope is not used (default scope)
	must(g.do(t, "PUT", "/v1/system-prompts/scope", tokAdmin, "alice", map[string]any{"content": "OTHER-SCOPE", "scope_id": "elsewhere"}, nil))
	must(g.post(t, "/v1/chat/completions", tokMember, "alice", chatBody("lm-4-scout-local", "again")))
	if sys := textOf(messagesOf(lastBody(t, g.Local, "/chat/completions"))[0]); strings.Contains(sys, "OTHER-SCOPE") {
		t.Errorf("the prompt of scope 'elsewhere' was injected into a default-scope chat: %q", sys)
	}
	// an injected 24 KB stack still goes out whole
	must(g.do(t, "PUT", "/v1/system-prompts/tenant", tokAdmin, "alice", map[string]any{"content": strings.Repeat("t", 8192)}, nil))
	must(g.do(t, "PUT", "/v1/system-prompts/scope", tokAdmin, "alice", map[string]any{"content": strings.Repeat("s", 8192)}, nil))
	must(g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "alice", map[string]any{"content": strings.Repeat("u", 8192)}, nil))
	must(g.post(t, "/v1/chat/completions", tokMember, "alice", chatBody("lm-4-scout-local", "big")))
	if sys := textOf(messagesOf(lastBody(t, g.Local, "/chat/completions"))[0]); !strings.Contains(sys, strings.Repeat("u", 8192)) {
		t.Errorf("the 8 KB user prompt was cut from the injected stack (spec Limits: three levels stack to about 24 KB)")
	}
}
