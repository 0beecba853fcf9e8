package blackbox_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// Group 1: authentication, identity, scopes, limits, request ids, routing.

func TestAuthBearerAndTenant(t *testing.T) {
	t.Parallel()
	fake := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: fake.URL})
	cases := []struct {
		name             string
		hdr              map[string]string
		status           int
		typ, code, param string
	}{
		{"no header", nil, 401, "authentication_error", "missing_authorization", "headers.authorization"},
		{"unknown token", map[string]string{"Authorization": "Bearer nope"}, 401, "authentication_error", "invalid_authorization", "headers.authorization"},
		{"basic scheme", map[string]string{"Authorization": "Basic " + tokAdmin}, 401, "authentication_error", "invalid_authorization", "headers.authorization"},
		{"empty bearer", map[string]string{"Authorization": "Bearer "}, 401, "authentication_error", "invalid_authorization", "headers.authorization"},
		{"tenant mismatch", map[string]string{"Authorization": "Bearer " + tokAdmin, "GW-Tenant-Id": "beta"}, 401, "authentication_error", "invalid_authorization", "headers.authorization"},
		{"tenant unknown", map[string]string{"Authorization": "Bearer " + tokAdmin, "GW-Tenant-Id": "nosuch"}, 401, "authentication_error", "invalid_authorization", "headers.authorization"},
	}
	for _, path := range []string{"/v1/models", "/c1/conversations", "/v1/tenant/config"} {
		for _, c := range cases {
			r := g.get(t, path, "", c.hdr)
			wantErr(t, "GET "+path+" "+c.name, r, c.status, c.typ, c.code, c.param)
		}
	}
	// POST families too.
	r := g.post(t, "/v1/chat/completions", "", nil, chatBody("lm-4-scout"))
	wantErr(t, "POST chat no bearer", r, 401, "authentication_error", "missing_authorization", "headers.authorization")
	r = g.post(t, "/c1/chat", "bad", user("u1"), map[string]any{"message": "hi"})
	wantErr(t, "POST c1 bad bearer", r, 401, "authentication_error", "invalid_authorization", "headers.authorization")

	// Matching tenant header, lower-case bearer scheme, sha256 token.
	r = g.get(t, "/v1/models", "", map[string]string{"Authorization": "Bearer " + tokAdmin, "GW-Tenant-Id": "acme"})
	wantStatus(t, "tenant header matches", r, 200)
	r = g.get(t, "/v1/models", "", map[string]string{"Authorization": "bearer " + tokAdmin})
	wantStatus(t, "lower-case bearer", r, 200)
	r = g.get(t, "/v1/models", tokSHA, nil)
	wantStatus(t, "sha256 token", r, 200)
	r = g.get(t, "/v1/models", sha(tokSHA), nil)
	wantErr(t, "digest itself used as token", r, 401, "authentication_error", "invalid_authorization", "headers.authorization")
	r = g.post(t, "/v1/chat/completions", tokSHA, nil, chatBody("lm-4-scout"))
	wantStatus(t, "sha256 token chat", r, 200)

	// Public endpoints need no bearer.
	for _, p := range []string{"/", "/healthz", "/readyz", "/errors", "/openapi", "/openapi.json", "/redoc", "/docs/errors", "/playground"} {
		r := g.get(t, p, "", nil)
		if r.Status == 401 || r.Status == 404 || r.Status >= 500 {
			t.Errorf("public GET %s without bearer: status %d, want 2xx; %s", p, r.Status, trunc(r.Body))
		}
		checkReqID(t, "public GET "+p, r)
	}
}

func TestAuthSIGHUPReload(t *testing.T) {
	t.Parallel()
	g := startGW(t, gwOpts{})
	if r := g.get(t, "/v1/models", tokNewReload, nil); r.Status != 401 {
		t.Fatalf("new token before reload: %d", r.Status)
	}
	// A good file adds a token (and removes tokMember).
	tk := defaultTokens()
	toks := tk["tokens"].([]any)
	toks[1] = map[string]any{"token": tokNewReload, "tenant": "acme", "role": "member"}
	data, _ := json.Marshal(tk)
	if err := os.WriteFile(g.tokFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	g.cmd.Process.Signal(syscall.SIGHUP)
	ok := false
	for i := 0; i < 100; i++ {
		if r := g.get(t, "/v1/models", tokNewReload, nil); r.Status == 200 {
			ok = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !ok {
		t.Fatalf("SIGHUP with a good file: new token not accepted within 2s\n%s", tail(g.stderr.String(), 1000))
	}
	wantErr(t, "removed token after reload", g.get(t, "/v1/models", tokMember, nil), 401, "authentication_error", "invalid_authorization", "headers.authorization")

	// A bad file keeps the old catalog.
	os.WriteFile(g.tokFile, []byte(`{"tenants":[{"id":"acme"}],"tokens":[{"token":"x","tenant":"nosuch"}]}`), 0o600)
	g.cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(300 * time.Millisecond)
	wantStatus(t, "old token after bad reload", g.get(t, "/v1/models", tokNewReload, nil), 200)
	wantErr(t, "token of bad file", g.get(t, "/v1/models", "x", nil), 401, "authentication_error", "invalid_authorization", "headers.authorization")
	if !strings.Contains(g.stderr.String(), "nosuch") && !strings.Contains(g.stderr.String(), "line") {
		t.Errorf("bad reload: log does not say why: %s", tail(g.stderr.String(), 800))
	}
}

func TestAuthScopes(t *testing.T) {
	t.Parallel()
	fake := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: fake.URL})
	cfgPut := map[string]any{"key": "compact_keep_last_n", "value": 10}
	type C struct {
		name   string
		r      req
		status int
	}
	cases := []C{
		{"member reads tenant config", req{method: "GET", path: "/v1/tenant/config", token: tokMember}, 200},
		{"member writes tenant config", req{method: "PUT", path: "/v1/tenant/config", token: tokMember, body: cfgPut}, 403},
		{"admin writes tenant config", req{method: "PUT", path: "/v1/tenant/config", token: tokAdmin, body: cfgPut}, 200},
		{"extra scope writes tenant config", req{method: "PUT", path: "/v1/tenant/config", token: tokLimited, body: cfgPut}, 200},
		{"denied chat:write on /v1 chat", req{method: "POST", path: "/v1/chat/completions", token: tokLimited, body: chatBody("lm-4-scout")}, 403},
		{"denied chat:write on /c1 chat", req{method: "POST", path: "/c1/chat", token: tokLimited, hdr: user("u1"), body: map[string]any{"message": "hi", "stream": false}}, 403},
		{"denied memory:read", req{method: "GET", path: "/v1/memory?visibility=private", token: tokLimited, hdr: user("u1")}, 403},
		{"memory:write not denied", req{method: "POST", path: "/v1/memory", token: tokLimited, hdr: user("u1"), body: map[string]any{"key": "a", "value": "b", "visibility": "private"}}, 200},
		{"member chat", req{method: "POST", path: "/v1/chat/completions", token: tokMember, body: chatBody("lm-4-scout")}, 200},
		{"member writes user prompt", req{method: "PUT", path: "/v1/system-prompts/user", token: tokMember, hdr: user("u1"), body: map[string]any{"content": "hello"}}, 200},
		{"member writes tenant prompt", req{method: "PUT", path: "/v1/system-prompts/tenant", token: tokMember, hdr: user("u1"), body: map[string]any{"content": "hello"}}, 403},
		{"member writes scope prompt", req{method: "PUT", path: "/v1/system-prompts/scope", token: tokMember, hdr: user("u1"), body: map[string]any{"content": "hello"}}, 403},
		{"member soft-deletes tenant prompt", req{method: "DELETE", path: "/v1/system-prompts/tenant", token: tokMember, hdr: user("u1")}, 403},
		{"extra scope writes scope prompt", req{method: "PUT", path: "/v1/system-prompts/scope", token: tokLimited, hdr: user("u1"), body: map[string]any{"content": "hello"}}, 200},
		{"extra scope still not tenant prompt", req{method: "PUT", path: "/v1/system-prompts/tenant", token: tokLimited, hdr: user("u1"), body: map[string]any{"content": "hello"}}, 403},
		{"admin writes tenant prompt", req{method: "PUT", path: "/v1/system-prompts/tenant", token: tokAdmin, hdr: user("u1"), body: map[string]any{"content": "hello"}}, 200},
		{"member reads prompts", req{method: "GET", path: "/v1/system-prompts/tenant/versions", token: tokMember, hdr: user("u1")}, 200},
	}
	for _, c := range cases {
		r := g.do(t, c.r)
		if c.status == 403 {
			wantErr(t, c.name, r, 403, "permission_error", "forbidden", anyParam)
		} else {
			wantStatus(t, c.name, r, c.status)
		}
	}
}

func TestAuthUserIDForbidden(t *testing.T) {
	t.Parallel()
	fake := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: fake.URL})
	u := user("u1")
	cases := []struct {
		name  string
		r     req
		param string
	}{
		{"c1 chat body", req{method: "POST", path: "/c1/chat", token: tokMember, hdr: u, body: map[string]any{"message": "hi", "user_id": "x"}}, "body.user_id"},
		{"c1 chat body null", req{method: "POST", path: "/c1/chat", token: tokMember, hdr: u, body: map[string]any{"message": "hi", "user_id": nil}}, "body.user_id"},
		{"c1 list query", req{method: "GET", path: "/c1/conversations?user_id=x", token: tokMember, hdr: u}, "query.user_id"},
		{"c1 get query", req{method: "GET", path: "/c1/conversations/abc?user_id=x", token: tokMember, hdr: u}, "query.user_id"},
		{"c1 delete query", req{method: "DELETE", path: "/c1/conversations/abc?user_id=x", token: tokMember, hdr: u}, "query.user_id"},
		{"v1 chat body", req{method: "POST", path: "/v1/chat/completions", token: tokMember, body: chatBody("lm-4-scout", "user_id", "x")}, "body.user_id"},
		{"v1 chat query", req{method: "POST", path: "/v1/chat/completions?user_id=x", token: tokMember, body: chatBody("lm-4-scout")}, "query.user_id"},
		{"v1 models query", req{method: "GET", path: "/v1/models?user_id=x", token: tokMember}, "query.user_id"},
		{"v1 embeddings body", req{method: "POST", path: "/v1/embeddings", token: tokMember, body: map[string]any{"model": "lm-embed", "input": []string{"a"}, "user_id": "x"}}, "body.user_id"},
		{"v1 memory body", req{method: "POST", path: "/v1/memory", token: tokMember, hdr: u, body: map[string]any{"key": "k", "value": "v", "visibility": "private", "user_id": "x"}}, "body.user_id"},
		{"v1 memory query", req{method: "GET", path: "/v1/memory?visibility=private&user_id=x", token: tokMember, hdr: u}, "query.user_id"},
		{"v1 prompts body", req{method: "PUT", path: "/v1/system-prompts/user", token: tokMember, hdr: u, body: map[string]any{"content": "c", "user_id": "x"}}, "body.user_id"},
		{"v1 tenant config body", req{method: "PUT", path: "/v1/tenant/config", token: tokAdmin, body: map[string]any{"key": "compact_keep_last_n", "value": 5, "user_id": "x"}}, "body.user_id"},
		{"v1 tools body", req{method: "POST", path: "/v1/tools/execute", token: tokMember, body: map[string]any{"inspect": true, "user_id": "x"}}, "body.user_id"},
	}
	for _, c := range cases {
		wantErr(t, c.name, g.do(t, c.r), 400, "invalid_request_error", "invalid_field", c.param)
	}
	// A nested user_id is data, not identity.
	b := chatBody("lm-4-scout", "metadata", map[string]any{"user_id": "x"})
	wantStatus(t, "nested metadata.user_id", g.post(t, "/v1/chat/completions", tokMember, nil, b), 200)
}

func TestAuthUserHeaderRequired(t *testing.T) {
	t.Parallel()
	fake := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: fake.URL})
	missing := []struct {
		name string
		r    req
	}{
		{"c1 chat", req{method: "POST", path: "/c1/chat", token: tokMember, body: map[string]any{"message": "hi", "stream": false}}},
		{"c1 chat admin", req{method: "POST", path: "/c1/chat", token: tokAdmin, body: map[string]any{"message": "hi", "stream": false}}},
		{"c1 list member", req{method: "GET", path: "/c1/conversations", token: tokMember}},
		{"c1 get member", req{method: "GET", path: "/c1/conversations/abc", token: tokMember}},
		{"c1 delete admin", req{method: "DELETE", path: "/c1/conversations/abc", token: tokAdmin}},
		{"memory post", req{method: "POST", path: "/v1/memory", token: tokMember, body: map[string]any{"key": "k", "value": "v", "visibility": "private"}}},
		{"memory get admin", req{method: "GET", path: "/v1/memory?visibility=private", token: tokAdmin}},
		{"memory usage admin", req{method: "GET", path: "/v1/memory/usage?visibility=private", token: tokAdmin}},
		{"memory delete", req{method: "DELETE", path: "/v1/memory?visibility=private&key=k", token: tokMember}},
		{"prompts versions", req{method: "GET", path: "/v1/system-prompts/user/versions", token: tokMember}},
		{"prompts user get admin", req{method: "GET", path: "/v1/system-prompts/user", token: tokAdmin}},
		{"prompts put admin", req{method: "PUT", path: "/v1/system-prompts/tenant", token: tokAdmin, body: map[string]any{"content": "x"}}},
	}
	for _, c := range missing {
		wantErr(t, c.name, g.do(t, c.r), 400, "invalid_request_error", "missing_field", "headers.gw-user-id")
	}
	// tenant_admin reads without the header: tenant-wide view.
	wantStatus(t, "admin lists conversations without user", g.get(t, "/c1/conversations", tokAdmin, nil), 200)
	// Optional on /v1/chat/completions, /v1/embeddings, /v1/tools/execute.
	wantStatus(t, "v1 chat without user", g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-4-scout")), 200)
	wantStatus(t, "v1 embeddings without user", g.post(t, "/v1/embeddings", tokMember, nil, map[string]any{"model": "lm-embed", "input": []string{"a"}}), 200)
	wantStatus(t, "v1 tools inspect without user", g.post(t, "/v1/tools/execute", tokMember, nil, map[string]any{"inspect": true}), 200)
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	g := startGW(t, gwOpts{})
	var last *resp
	for i := 0; i < 3; i++ {
		last = g.get(t, "/v1/models", tokRate, nil)
	}
	wantErr(t, "third request in burst 2", last, 429, "rate_limit_error", "rate_limit_exceeded", noParam)
	if e, _ := last.JSON["error"].(map[string]any); e != nil && e["message"] != "Rate limit exceeded" {
		t.Errorf("429 message %v, want \"Rate limit exceeded\" (spec Errors rule 3)", e["message"])
	}
	ra := last.Header.Get("Retry-After")
	if n, err := strconv.Atoi(ra); err != nil || n < 1 {
		t.Errorf("429 Retry-After %q, want whole seconds >= 1 (DECISIONS 8.1, 8.22)", ra)
	}
	// Other tokens have separate buckets.
	wantStatus(t, "other token not limited", g.get(t, "/v1/models", tokMember, nil), 200)
	// The bucket is per token, across all routes (also on errors such as 404 handlers).
	r := g.post(t, "/c1/chat", tokRate, user("u1"), map[string]any{"message": "hi"})
	wantErr(t, "limited token on /c1", r, 429, "rate_limit_error", "rate_limit_exceeded", noParam)
	// After ~1 s a token is back.
	time.Sleep(1100 * time.Millisecond)
	wantStatus(t, "refilled after 1s", g.get(t, "/v1/models", tokRate, nil), 200)
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	fake := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: fake.URL, env: map[string]string{"GATEWAY_BODY_LIMIT_BYTES": "1024"}})
	big := `{"model":"lm-4-scout","messages":[{"role":"user","content":"` + strings.Repeat("a", 2000) + `"}]}`
	// With Content-Length.
	r := g.post(t, "/v1/chat/completions", tokMember, nil, big)
	wantErr(t, "413 by Content-Length", r, 413, "request_too_large", "body_too_large", anyParam)
	r = g.post(t, "/c1/chat", tokMember, user("u1"), `{"message":"`+strings.Repeat("a", 2000)+`"}`)
	wantErr(t, "413 by Content-Length on /c1", r, 413, "request_too_large", "body_too_large", anyParam)
	// Chunked (no Content-Length).
	hr, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", io.MultiReader(strings.NewReader(big)))
	hr.Header.Set("Authorization", "Bearer "+tokMember)
	hr.Header.Set("Content-Type", "application/json")
	hr.ContentLength = -1
	hresp, err := client.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(hresp.Body)
	hresp.Body.Close()
	cr := &resp{Status: hresp.StatusCode, Header: hresp.Header, Body: body}
	json.Unmarshal(body, &cr.JSON)
	if len(hresp.TransferEncoding) == 0 && hresp.Request != nil {
		// nothing: the request side is what matters
	}
	wantErr(t, "413 chunked", cr, 413, "request_too_large", "body_too_large", anyParam)
	// Exactly at the limit is accepted.
	small := `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}]}`
	exact := small + strings.Repeat(" ", 1024-len(small))
	wantStatus(t, "body of exactly the limit", g.post(t, "/v1/chat/completions", tokMember, nil, exact), 200)
	over := small + strings.Repeat(" ", 1025-len(small))
	wantErr(t, "body of limit+1", g.post(t, "/v1/chat/completions", tokMember, nil, over), 413, "request_too_large", "body_too_large", anyParam)
}

func TestRequestIDAndRouting(t *testing.T) {
	t.Parallel()
	g := startGW(t, gwOpts{})
	// Echo.
	r := g.get(t, "/v1/models", tokMember, map[string]string{"X-Request-Id": "my-req-123"})
	if got := r.Header.Get("X-Request-Id"); got != "my-req-123" {
		t.Errorf("x-request-id echo: got %q", got)
	}
	r = g.get(t, "/v1/models", "", map[string]string{"X-Request-Id": "err-req-1"})
	if got := r.Header.Get("X-Request-Id"); got != "err-req-1" {
		t.Errorf("x-request-id echo on 401: got %q", got)
	}
	long := strings.Repeat("x", 128)
	if got := g.get(t, "/healthz", "", map[string]string{"X-Request-Id": long}).Header.Get("X-Request-Id"); got != long {
		t.Errorf("x-request-id of 128 chars not echoed: %q", got)
	}
	tooLong := strings.Repeat("y", 129)
	if got := g.get(t, "/healthz", "", map[string]string{"X-Request-Id": tooLong}).Header.Get("X-Request-Id"); got == "" || got == tooLong {
		t.Errorf("x-request-id of 129 chars: got %q, want a generated id", got)
	}
	// Generated, distinct.
	a := g.get(t, "/healthz", "", nil).Header.Get("X-Request-Id")
	b := g.get(t, "/healthz", "", nil).Header.Get("X-Request-Id")
	if a == "" || a == b {
		t.Errorf("generated x-request-id: %q, %q", a, b)
	}
	// route_not_found for unknown paths and methods.
	for _, c := range []struct{ m, p, tok string }{
		{"GET", "/v1/nope", tokMember},
		{"GET", "/nope", ""},
		{"DELETE", "/v1/models", tokMember},
		{"PUT", "/v1/chat/completions", tokMember},
		{"GET", "/v1/chat/completions", tokMember},
		{"POST", "/healthz", ""},
		{"GET", "/v1/models/", tokMember},
		{"GET", "/c2/chat", tokMember},
	} {
		r := g.do(t, req{method: c.m, path: c.p, token: c.tok})
		wantErr(t, c.m+" "+c.p, r, 404, "not_found_error", "route_not_found", anyParam)
		if r.Header.Get("Allow") != "" && r.Status == 405 {
			t.Errorf("%s %s answered 405", c.m, c.p)
		}
	}
	// Every JSON answer is application/json.
	for _, p := range []string{"/readyz", "/errors", "/v1/models", "/v1/info", "/v1/tenant/config", "/c1/conversations"} {
		r := g.get(t, p, tokAdmin, nil)
		checkJSONCT(t, "GET "+p, r)
	}
}

// specCodes is the Codes table of the spec: code -> type, status.
var specCodes = map[string]struct {
	typ    string
	status int
}{
	"missing_authorization": {"authentication_error", 401}, "invalid_authorization": {"authentication_error", 401},
	"forbidden": {"permission_error", 403}, "rate_limit_exceeded": {"rate_limit_error", 429},
	"body_too_large": {"request_too_large", 413}, "invalid_json": {"invalid_request_error", 400},
	"missing_field": {"invalid_request_error", 400}, "invalid_field": {"invalid_request_error", 400},
	"model_not_in_allowlist": {"invalid_request_error", 400}, "max_tokens_below_minimum": {"invalid_request_error", 400},
	"image_url_not_supported": {"invalid_request_error", 400}, "image_decode_error": {"invalid_request_error", 400},
	"image_base64_invalid": {"invalid_request_error", 400}, "model_not_vision_capable": {"invalid_request_error", 400},
	"tool_call_arguments_invalid": {"invalid_request_error", 400}, "context_window_exceeded": {"invalid_request_error", 400},
	"upstream_bad_request": {"invalid_request_error", 400}, "embedding_input_too_large": {"invalid_request_error", 400},
	"agent_not_found": {"not_found_error", 404}, "agent_tool_not_registered": {"invalid_request_error", 400},
	"recursion_depth_exceeded": {"invalid_request_error", 400}, "index_not_found": {"not_found_error", 404},
	"document_not_found": {"not_found_error", 404}, "session_not_found": {"not_found_error", 404},
	"session_agent_mismatch": {"invalid_request_error", 400}, "session_compact_conflict": {"conflict_error", 409},
	"runtime_not_runnable": {"invalid_request_error", 400}, "coding_agent_disabled": {"permission_error", 403},
	"coding_agent_repo_not_allowed": {"permission_error", 403}, "coding_agent_run_not_found": {"not_found_error", 404},
	"agent_busy": {"conflict_error", 409}, "tenant_config_key_readonly": {"invalid_request_error", 400},
	"tenant_config_invalid_value": {"invalid_request_error", 400}, "image_not_found": {"not_found_error", 404},
	"memory_bucket_full": {"conflict_error", 409}, "memory_confirm_required": {"invalid_request_error", 400},
	"system_prompt_too_large": {"invalid_request_error", 400}, "system_prompt_version_not_found": {"not_found_error", 404},
	"system_prompt_current_locked": {"conflict_error", 409}, "conversation_not_found": {"not_found_error", 404},
	"route_not_found": {"not_found_error", 404}, "cloud_consent_required": {"conflict_error", 409},
	"content_blocked": {"invalid_request_error", 422}, "model_quota_exhausted": {"rate_limit_error", 429},
	"cloudB_daily_quota_exhausted": {"rate_limit_error", 429}, "upstream_error": {"api_error", 502},
	"upstream_timeout": {"timeout_error", 504}, "upstream_unavailable": {"overloaded_error", 503},
	"internal_error": {"api_error", 500}, "storage_error": {"api_error", 500},
}

func TestErrorCatalog(t *testing.T) {
	t.Parallel()
	g := startGW(t, gwOpts{})
	r := g.get(t, "/errors", "", nil)
	if !wantStatus(t, "GET /errors", r, 200) {
		return
	}
	checkJSONCT(t, "/errors", r)
	var cat struct {
		Version int `json:"version"`
		Count   int `json:"count"`
		Entries []map[string]any
	}
	json.Unmarshal(r.Body, &cat)
	if cat.Version != 1 || cat.Count != 50 || len(cat.Entries) != 50 {
		t.Errorf("catalog version %d count %d entries %d, want 1, 50, 50", cat.Version, cat.Count, len(cat.Entries))
	}
	seen := map[string]bool{}
	for _, e := range cat.Entries {
		code, _ := e["code"].(string)
		seen[code] = true
		want, ok := specCodes[code]
		if !ok {
			t.Errorf("catalog code %q not in the spec", code)
			continue
		}
		if e["type"] != want.typ || e["http_status"] != float64(want.status) {
			t.Errorf("catalog %s: type %v status %v, want %s %d", code, e["type"], e["http_status"], want.typ, want.status)
		}
		for _, f := range []string{"title", "description", "remediation"} {
			if s, _ := e[f].(string); s == "" {
				t.Errorf("catalog %s: %s empty", code, f)
			}
		}
		if _, ok := e["typical_param"]; !ok {
			t.Errorf("catalog %s: typical_param key absent", code)
		}
	}
	for c := range specCodes {
		if !seen[c] {
			t.Errorf("catalog lacks %q", c)
		}
	}
	h := g.get(t, "/docs/errors", "", nil)
	for c := range specCodes {
		if !strings.Contains(string(h.Body), `id="`+c+`"`) {
			t.Errorf("/docs/errors has no anchor id=%q", c)
		}
	}
}
