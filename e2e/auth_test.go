package e2e_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// authedEndpoints is one request per authenticated family.
var authedEndpoints = []struct{ method, path, body string }{
	{"POST", "/v1/chat/completions", `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}]}`},
	{"GET", "/v1/models", ""},
	{"GET", "/v1/info", ""},
	{"POST", "/v1/embeddings", `{"model":"lm-embed","input":["a"]}`},
	{"POST", "/v1/images/generations", `{"model":"lm-image","prompt":"cat"}`},
	{"GET", "/v1/images", ""},
	{"POST", "/v1/tools/execute", `{"inspect":true}`},
	{"POST", "/v1/memory", `{"key":"k","value":"v","visibility":"private"}`},
	{"GET", "/v1/memory/usage?visibility=private", ""},
	{"GET", "/v1/system-prompts/user/versions", ""},
	{"GET", "/v1/tenant/config", ""},
	{"POST", "/c1/chat", `{"message":"hi"}`},
	{"GET", "/c1/conversations", ""},
	{"GET", "/c1/conversations/abc", ""},
	{"DELETE", "/c1/conversations/abc", ""},
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	const ref4 = "spec Authentication 4; Codes table"
	for _, ep := range authedEndpoints {
		var body any
		if ep.body != "" {
			body = ep.body
		}
		t.Run(ep.method+" "+ep.path, func(t *testing.T) {
			r := g.do(t, ep.method, ep.path, "", "u1", body, nil)
			wantErr(t, r, 401, "authentication_error", "missing_authorization", "headers.authorization", ref4)
			r = g.do(t, ep.method, ep.path, "no-such-token", "u1", body, nil)
			wantErr(t, r, 401, "authentication_error", "invalid_authorization", "headers.authorization", ref4)
		})
	}
	// without GW-User-Id: authentication comes before the user rules
	for _, path := range []string{"/v1/models", "/c1/conversations", "/v1/tenant/config"} {
		runErrCases(t, g, errCases{
			{name: path + " no authorization", path: path, code: "missing_authorization"},
			{name: path + " unknown token", path: path, token: "nope"},
			{name: path + " basic scheme", path: path, hdr: H{"Authorization": "Basic dXNlcjpwYXNz"}},
			{name: path + " bearer without token", path: path, hdr: H{"Authorization": "Bearer "}},
			{name: path + " tenant header of another tenant", path: path, token: tokAdmin, hdr: H{"GW-Tenant-Id": "globex"},
				ref: "spec Authentication 4: GW-Tenant-Id not bound to the token"},
			{name: path + " tenant header of unknown tenant", path: path, token: tokMember, hdr: H{"GW-Tenant-Id": "nobody"}},
			{name: path + " sha256 hex used as the token", path: path, token: sha256Hex(tokHashed),
				ref: "DECISIONS 3: sha256 entries match the token, not its digest"},
			{name: path + " token with trailing garbage", path: path, token: tokAdmin + "x"},
		}.with(401, "authentication_error", "invalid_authorization", "headers.authorization", ref4))
	}

	t.Run("valid tokens", func(t *testing.T) {
		wantStatus(t, g.get(t, "/v1/models", tokAdmin, ""), 200, "valid token")
		wantStatus(t, g.do(t, "GET", "/v1/models", tokAdmin, "", nil, H{"GW-Tenant-Id": "acme"}), 200, "spec Authentication 4: matching GW-Tenant-Id")
		wantStatus(t, g.get(t, "/v1/models", tokHashed, ""), 200, "DECISIONS 3: a sha256 entry matches its token")
		wantStatus(t, g.post(t, "/v1/chat/completions", tokHashed, "", chatBody("lm-4-scout", "hi")), 200, "DECISIONS 3: sha256 token")
	})
}

func TestScopes(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	forbidden := func(name, method, path, token string, body any) errCase {
		return errCase{name: name, method: method, path: path, token: token, user: "alice", body: body,
			status: 403, typ: "permission_error", code: "forbidden", param: anyParam, ref: "spec Authentication 5; DECISIONS 3 roles and scopes"}
	}
	runErrCases(t, g, errCases{
		forbidden("member PUT tenant config", "PUT", "/v1/tenant/config", tokMember, map[string]any{"key": "image_gen_rate_per_hour", "value": 10}),
		forbidden("member PUT tenant prompt", "PUT", "/v1/system-prompts/tenant", tokMember, map[string]any{"content": "x"}),
		forbidden("member PUT scope prompt", "PUT", "/v1/system-prompts/scope", tokMember, map[string]any{"content": "x"}),
		forbidden("member DELETE tenant prompt", "DELETE", "/v1/system-prompts/tenant", tokMember, nil),
		forbidden("member rollback tenant prompt", "PUT", "/v1/system-prompts/tenant/current/1", tokMember, nil),
		forbidden("deny chat:write v1", "POST", "/v1/chat/completions", tokRestrict, chatBody("lm-4-scout", "hi")),
		forbidden("deny chat:write c1", "POST", "/c1/chat", tokRestrict, map[string]any{"message": "hi"}),
		forbidden("deny models:read models", "GET", "/v1/models", tokRestrict, nil),
		forbidden("deny models:read info", "GET", "/v1/info", tokRestrict, nil),
		forbidden("extra scope does not grant tenant level", "PUT", "/v1/system-prompts/tenant", tokRestrict, map[string]any{"content": "x"}),
		forbidden("deny without qualifier denies user level", "PUT", "/v1/system-prompts/user", tokNoPrompt, map[string]any{"content": "x"}),
		forbidden("deny memory:read", "GET", "/v1/memory?visibility=private", tokRestrict, nil),
		forbidden("deny tenant_config:read", "GET", "/v1/tenant/config", tokNoCfgRead, nil),
	})
	allowed := []struct {
		name, method, path, token string
		body                      any
	}{
		{"member GET tenant config", "GET", "/v1/tenant/config", tokMember, nil},
		{"member PUT user prompt", "PUT", "/v1/system-prompts/user", tokMember, map[string]any{"content": "member prompt"}},
		{"member reads tenant prompt versions", "GET", "/v1/system-prompts/tenant/versions", tokMember, nil},
		{"admin PUT tenant config", "PUT", "/v1/tenant/config", tokAdmin, map[string]any{"key": "image_gen_rate_per_hour", "value": 10}},
		{"admin PUT tenant prompt", "PUT", "/v1/system-prompts/tenant", tokAdmin, map[string]any{"content": "tenant prompt"}},
		{"admin PUT scope prompt", "PUT", "/v1/system-prompts/scope", tokAdmin, map[string]any{"content": "scope prompt"}},
		{"extra scope tenant_config:write", "PUT", "/v1/tenant/config", tokRestrict, map[string]any{"key": "image_gen_rate_per_hour", "value": 11}},
		{"extra scope system_prompts:write:scope", "PUT", "/v1/system-prompts/scope", tokRestrict, map[string]any{"content": "scope prompt 2"}},
		{"deny keeps other scopes", "GET", "/c1/conversations", tokRestrict, nil},
		{"deny system_prompts:write keeps read", "GET", "/v1/system-prompts/user/versions", tokNoPrompt, nil},
		{"member embeddings", "POST", "/v1/embeddings", tokMember, map[string]any{"model": "lm-embed", "input": []string{"a"}}},
		{"member chat", "POST", "/v1/chat/completions", tokMember, chatBody("lm-4-scout", "hi")},
		{"deny memory:read keeps memory:write", "POST", "/v1/memory", tokRestrict, map[string]any{"key": "a", "value": "b", "visibility": "private"}},
	}
	for _, a := range allowed {
		t.Run(a.name, func(t *testing.T) {
			wantStatus(t, g.do(t, a.method, a.path, a.token, "alice", a.body, nil), 200, "DECISIONS 3 roles and scopes")
		})
	}
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	// a conversation of alice, for the tenant-wide reads
	r := g.post(t, "/c1/chat", tokMember, "alice", map[string]any{"message": "hello", "stream": false, "model": "lm-4-scout-local"})
	wantStatus(t, r, 200, "c1 chat")
	convID := r.Header.Get("gw-conversation-id")

	const ref2 = "spec End-user identity 2; DECISIONS 8.2"
	bodyUID := func(name, method, path string, body map[string]any) errCase {
		body["user_id"] = "mallory"
		return errCase{name: name, method: method, path: path, token: tokAdmin, user: "alice", body: body,
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.user_id", ref: ref2}
	}
	queryUID := func(name, method, path string) errCase {
		return errCase{name: name, method: method, path: path, token: tokAdmin, user: "alice",
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "query.user_id", ref: ref2}
	}
	missingUser := func(name, method, path, token string, body any) errCase {
		return errCase{name: name, method: method, path: path, token: token, body: body,
			status: 400, typ: "invalid_request_error", code: "missing_field", param: "headers.gw-user-id", ref: "spec End-user identity 3; DECISIONS 8.18"}
	}
	runErrCases(t, g, errCases{
		bodyUID("body user_id v1 chat", "POST", "/v1/chat/completions", chatBody("lm-4-scout", "hi")),
		bodyUID("body user_id c1 chat", "POST", "/c1/chat", map[string]any{"message": "hi"}),
		bodyUID("body user_id embeddings", "POST", "/v1/embeddings", map[string]any{"model": "lm-embed", "input": []string{"a"}}),
		bodyUID("body user_id memory", "POST", "/v1/memory", map[string]any{"key": "k", "value": "v", "visibility": "private"}),
		bodyUID("body user_id tools", "POST", "/v1/tools/execute", map[string]any{"inspect": true}),
		bodyUID("body user_id prompts", "PUT", "/v1/system-prompts/user", map[string]any{"content": "x"}),
		bodyUID("body user_id tenant config", "PUT", "/v1/tenant/config", map[string]any{"key": "image_gen_rate_per_hour", "value": 5}),
		bodyUID("body user_id images", "POST", "/v1/images/generations", map[string]any{"model": "lm-image", "prompt": "cat"}),
		{name: "body user_id null", method: "POST", path: "/c1/chat", token: tokMember, user: "alice", body: map[string]any{"message": "hi", "user_id": nil},
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.user_id", ref: ref2 + ": even null"},
		queryUID("query user_id c1 list", "GET", "/c1/conversations?user_id=bob"),
		queryUID("query user_id c1 get", "GET", "/c1/conversations/"+convID+"?user_id=bob"),
		queryUID("query user_id c1 delete", "DELETE", "/c1/conversations/"+convID+"?user_id=bob"),
		queryUID("query user_id models", "GET", "/v1/models?user_id=bob"),
		queryUID("query user_id info", "GET", "/v1/info?user_id=bob"),
		queryUID("query user_id memory", "GET", "/v1/memory?visibility=private&user_id=bob"),
		queryUID("query user_id memory usage", "GET", "/v1/memory/usage?visibility=private&user_id=bob"),
		queryUID("query user_id prompts", "GET", "/v1/system-prompts/user/versions?user_id=bob"),
		queryUID("query user_id tenant config", "GET", "/v1/tenant/config?user_id=bob"),
		queryUID("query user_id images", "GET", "/v1/images?user_id=bob"),
		queryUID("query user_id on POST chat", "POST", "/v1/chat/completions?user_id=bob"),
		{name: "query user_id on POST chat with a body", method: "POST", path: "/v1/chat/completions?user_id=bob", token: tokMember, body: chatBody("lm-4-scout", "hi"),
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "query.user_id", ref: ref2},
		missingUser("c1 chat", "POST", "/c1/chat", tokMember, map[string]any{"message": "hi"}),
		missingUser("c1 chat admin", "POST", "/c1/chat", tokAdmin, map[string]any{"message": "hi"}),
		missingUser("c1 list member", "GET", "/c1/conversations", tokMember, nil),
		missingUser("c1 get member", "GET", "/c1/conversations/"+convID, tokMember, nil),
		missingUser("c1 delete member", "DELETE", "/c1/conversations/"+convID, tokMember, nil),
		missingUser("c1 delete admin (not read-only)", "DELETE", "/c1/conversations/"+convID, tokAdmin, nil),
		missingUser("memory write", "POST", "/v1/memory", tokMember, map[string]any{"key": "k", "value": "v", "visibility": "private"}),
		missingUser("memory list", "GET", "/v1/memory?visibility=private", tokMember, nil),
		missingUser("memory list admin", "GET", "/v1/memory?visibility=private", tokAdmin, nil),
		missingUser("memory usage admin", "GET", "/v1/memory/usage?visibility=private", tokAdmin, nil),
		missingUser("memory delete", "DELETE", "/v1/memory?visibility=private&key=k", tokMember, nil),
		missingUser("prompts versions", "GET", "/v1/system-prompts/user/versions", tokMember, nil),
		missingUser("user prompts versions admin", "GET", "/v1/system-prompts/user/versions", tokAdmin, nil),
		missingUser("tenant prompt versions member (not an admin)", "GET", "/v1/system-prompts/tenant/versions", tokMember, nil),
		missingUser("memory usage member", "GET", "/v1/memory/usage?visibility=private", tokMember, nil),
		missingUser("tenant prompt delete admin (not read-only)", "DELETE", "/v1/system-prompts/tenant", tokAdmin, nil),
		missingUser("prompts put", "PUT", "/v1/system-prompts/user", tokMember, map[string]any{"content": "x"}),
		missingUser("user prompt get admin", "GET", "/v1/system-prompts/user", tokAdmin, nil),
		missingUser("tenant prompt put admin (not read-only)", "PUT", "/v1/system-prompts/tenant", tokAdmin, map[string]any{"content": "x"}),
		{name: "GW-User-Id with a control character", method: "POST", path: "/c1/chat", token: tokMember, user: "ali\tce", body: map[string]any{"message": "x", "stream": false},
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "headers.gw-user-id", ref: "docs/decisions.md: GW-User-Id of at most 256 printable characters"},
		{name: "GW-User-Id over 256 characters", method: "POST", path: "/c1/chat", token: tokMember, user: strings.Repeat("u", 257), body: map[string]any{"message": "x", "stream": false},
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "headers.gw-user-id", ref: "spec End-user identity 1: GW-User-Id of at most 256 characters"},
	})

	t.Run("GW-User-Id of 256 characters", func(t *testing.T) {
		wantStatus(t, g.get(t, "/c1/conversations", tokMember, strings.Repeat("u", 256)), 200, "docs/decisions.md: GW-User-Id of at most 256 printable characters")
	})

	// docs/decisions.md, order of checks: 401, 429, 403, query.user_id,
	// body.user_id, the GW-User-Id rule, then the handler's own validation
	// (413 by Content-Length first: TestBodyLimit; 429 before 403: TestRateLimit).
	const order = "docs/decisions.md: order of checks on an authenticated route"
	runErrCases(t, g, errCases{
		{name: "403 before query.user_id", path: "/v1/models?user_id=bob", token: tokRestrict, user: "alice",
			status: 403, typ: "permission_error", code: "forbidden", param: anyParam},
		{name: "403 before the GW-User-Id rule", method: "POST", path: "/c1/chat", token: tokRestrict, body: map[string]any{"message": "hi"},
			status: 403, typ: "permission_error", code: "forbidden", param: anyParam},
		{name: "403 before body.user_id", method: "POST", path: "/c1/chat", token: tokRestrict, user: "alice", body: map[string]any{"message": "hi", "user_id": "bob"},
			status: 403, typ: "permission_error", code: "forbidden", param: anyParam},
		{name: "query.user_id before body.user_id", method: "POST", path: "/c1/chat?user_id=bob", token: tokMember, user: "alice", body: map[string]any{"message": "hi", "user_id": "bob"},
			code: "invalid_field", param: "query.user_id"},
		{name: "body.user_id before the GW-User-Id rule", method: "POST", path: "/c1/chat", token: tokMember, body: map[string]any{"message": "hi", "user_id": "bob"},
			code: "invalid_field", param: "body.user_id"},
		{name: "GW-User-Id rule before the handler's validation", method: "POST", path: "/c1/chat", token: tokMember, body: map[string]any{"colour": "red"},
			code: "missing_field", param: "headers.gw-user-id"},
		{name: "GW-User-Id rule before invalid_json", method: "POST", path: "/v1/memory", token: tokMember, body: `{"key":`,
			code: "missing_field", param: "headers.gw-user-id"},
		{name: "401 before the GW-User-Id rule", method: "POST", path: "/c1/chat", token: "nope", body: map[string]any{"message": "hi", "user_id": "bob"},
			status: 401, typ: "authentication_error", code: "invalid_authorization", param: "headers.authorization"},
	}.with(400, "invalid_request_error", "", "", order))

	t.Run("header optional on v1 chat, embeddings, tools", func(t *testing.T) {
		wantStatus(t, g.post(t, "/v1/chat/completions", tokMember, "", chatBody("lm-4-scout", "hi")), 200, "spec End-user identity 5")
		wantStatus(t, g.post(t, "/v1/embeddings", tokMember, "", map[string]any{"model": "lm-embed", "input": []string{"a"}}), 200, "spec End-user identity 5")
		wantStatus(t, g.post(t, "/v1/tools/execute", tokMember, "", map[string]any{"inspect": true}), 200, "spec End-user identity 5")
		wantStatus(t, g.post(t, "/v1/tools/execute", tokMember, "", map[string]any{"name": "current_time", "arguments": map[string]any{}}), 200, "spec End-user identity 5")
	})
	t.Run("nested user_id is data", func(t *testing.T) {
		b := chatBody("lm-4-scout", "hi")
		b["metadata"] = map[string]any{"user_id": "x"}
		wantStatus(t, g.post(t, "/v1/chat/completions", tokMember, "", b), 200, "spec End-user identity 2: only a top-level user_id is forbidden")
	})
	t.Run("tenant admin tenant-wide reads", func(t *testing.T) {
		r := g.post(t, "/c1/chat", tokMember, "bob", map[string]any{"message": "bob here", "stream": false, "model": "lm-4-scout-local"})
		wantStatus(t, r, 200, "c1 chat")
		r = g.get(t, "/c1/conversations", tokAdmin, "")
		if !wantStatus(t, r, 200, "spec End-user identity 4; DECISIONS 8.18: tenant_admin without GW-User-Id sees the tenant") {
			return
		}
		users := map[string]bool{}
		for _, c := range listData(r) {
			u, _ := c["user_id"].(string)
			users[u] = true
		}
		if !users["alice"] || !users["bob"] {
			t.Errorf("tenant-wide list %s: want conversations of alice and bob (spec End-user identity 4)", r.Body)
		}
		wantStatus(t, g.get(t, "/c1/conversations/"+convID, tokAdmin, ""), 200, "spec End-user identity 4: tenant_admin reads any conversation of the tenant")
		wantStatus(t, g.get(t, "/v1/images", tokAdmin, ""), 200, "DECISIONS 8.25: images need no user")
		// with the header, the admin is filtered like anyone
		r = g.get(t, "/c1/conversations", tokAdmin, "bob")
		for _, c := range listData(r) {
			if c["user_id"] != "bob" && c["user_id"] != nil {
				t.Errorf("admin with GW-User-Id bob listed %v (spec: filtered to the header's user)", c)
			}
		}
		// another tenant's admin sees none of it
		r = g.get(t, "/c1/conversations", tokGlobex, "")
		if n := len(listData(r)); r.Status != 200 || n != 0 {
			t.Errorf("%s\n  globex admin must see no acme conversation", r)
		}
		wantErr(t, g.get(t, "/c1/conversations/"+convID, tokGlobex, ""), 404, "not_found_error", "conversation_not_found", "conversation_id", "spec End-user identity 6; issue 4: other tenant")
	})
	t.Run("GW-User-Id is case-insensitive header", func(t *testing.T) {
		r := g.do(t, "GET", "/c1/conversations", tokMember, "", nil, H{"gw-user-id": "alice"})
		wantStatus(t, r, 200, "HTTP header names are case-insensitive")
	})
}

// TestIdentityEncodings: a user_id spelled with escapes is still a user_id.
func TestIdentityEncodings(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	const ref = "spec End-user identity 2: user_id in a body or query is forbidden everywhere"
	runErrCases(t, g, errCases{
		{name: "query user%5Fid", path: "/c1/conversations?user%5Fid=bob", token: tokAdmin, user: "alice",
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "query.user_id", ref: ref + " (percent-encoded key decodes to user_id)"},
		{name: "query user_id empty", path: "/c1/conversations?user_id=", token: tokAdmin, user: "alice",
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "query.user_id", ref: ref},
		{name: "body user\\u005fid c1", method: "POST", path: "/c1/chat", token: tokMember, user: "alice",
			body:   `{"message":"hi","stream":false,"model":"lm-4-scout-local","user\u005fid":"bob"}`,
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.user_id", ref: ref + " (JSON escape decodes to user_id)"},
		{name: "body user\\u005fid v1", method: "POST", path: "/v1/chat/completions", token: tokMember, user: "alice",
			body:   `{"model":"lm-4-scout-local","messages":[{"role":"user","content":"hi"}],"user\u005fid":"bob"}`,
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.user_id", ref: ref + " (JSON escape decodes to user_id)"},
		{name: "body user\\u005fid memory", method: "POST", path: "/v1/memory", token: tokMember, user: "alice",
			body:   `{"key":"k","value":"v","visibility":"private","user\u005fid":"bob"}`,
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.user_id", ref: ref + " (JSON escape decodes to user_id)"},
	})
	t.Run("multipart user_id", func(t *testing.T) {
		body, ct := multipartBody(t, map[string]string{"model": "lm-transcribe", "user_id": "bob"})
		r := g.do(t, "POST", "/v1/audio/transcriptions", tokGlobex, "alice", body, H{"Content-Type": ct})
		wantErr(t, r, 400, "invalid_request_error", "invalid_field", "body.user_id", ref+" (multipart form field)")
	})
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	t.Run("per token rate", func(t *testing.T) {
		t.Parallel()
		g := start(t, nil)
		for i := 0; i < 2; i++ {
			wantStatus(t, g.get(t, "/v1/models", tokSlow, ""), 200, "within burst 2")
		}
		r := g.get(t, "/v1/models", tokSlow, "")
		if wantErr(t, r, 429, "rate_limit_error", "rate_limit_exceeded", noParam, "spec Limits Rate; DECISIONS 8.1") {
			if m := r.JSON()["error"].(map[string]any)["message"]; m != "Rate limit exceeded" {
				t.Errorf("429 message %q, want \"Rate limit exceeded\" (spec Errors rule 3; DECISIONS 8.1)", m)
			}
		}
		ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > 10 {
			t.Errorf("Retry-After %q, want whole seconds in 1..10 for 0.1 req/s (DECISIONS 8.1, 8.22)", r.Header.Get("Retry-After"))
		} else if ra < 9 {
			t.Errorf("Retry-After %d, want 9 or 10 (seconds until one token is back at 0.1/s; DECISIONS 8.1)", ra)
		}
		// the rate limit comes before the scope check (member lacks tenant_config:write)
		wantErr(t, g.do(t, "PUT", "/v1/tenant/config", tokSlow, "", map[string]any{"key": "compact_keep_last_n", "value": 5}, nil),
			429, "rate_limit_error", "rate_limit_exceeded", noParam, "docs/decisions.md: order of checks, 429 before 403")
		// other tokens, even of the same tenant, have their own bucket
		wantStatus(t, g.get(t, "/v1/models", tokMember, ""), 200, "spec Limits: different tokens have separate buckets")
		// the same token from another client IP shares the bucket
		other := clientFrom("127.0.0.2")
		r2 := doURL(t, other, "GET", g.Base+"/v1/models", tokSlow, "", nil, H{"X-Forwarded-For": "10.1.2.3"})
		wantErr(t, r2, 429, "rate_limit_error", "rate_limit_exceeded", noParam, "spec Limits: one token shares one bucket across all IPs")
		// an invalid token is not limited by another's bucket
		wantErr(t, g.get(t, "/v1/models", "nope", ""), 401, "authentication_error", "invalid_authorization", "headers.authorization", "auth before rate")
	})
	t.Run("default 1 rps burst 30", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) {
			s.Env["GATEWAY_RATE_PER_SECOND"] = unset
			s.Env["GATEWAY_RATE_BURST"] = unset
		})
		t0 := time.Now()
		ok := 0
		var limited *resp
		for i := 0; i < 40; i++ {
			r := g.get(t, "/v1/models", tokMember, "")
			if r.Status == 429 {
				limited = r
				break
			}
			ok++
		}
		elapsed := time.Since(t0)
		maxOK := 30 + int(elapsed.Seconds()) + 1
		if limited == nil || ok < 30 || ok > maxOK {
			t.Errorf("default rate: %d requests passed before a 429 (in %v), want 30 (spec Limits: 1 request per second, burst 30)", ok, elapsed)
		}
		if limited != nil {
			wantErr(t, limited, 429, "rate_limit_error", "rate_limit_exceeded", noParam, "spec Limits Rate")
			if ra, err := strconv.Atoi(limited.Header.Get("Retry-After")); err != nil || ra != 1 {
				t.Errorf("Retry-After %q, want 1 at 1 req/s (DECISIONS 8.22)", limited.Header.Get("Retry-After"))
			}
		}
		wantStatus(t, g.get(t, "/v1/models", tokAdmin, ""), 200, "spec Limits: separate buckets per token")
	})
	t.Run("one bucket across routes, refilled at 1 rps", func(t *testing.T) {
		t.Parallel()
		g := start(t, nil)
		var last *resp
		for i := 0; i < 3; i++ {
			last = g.get(t, "/v1/models", tokRate, "")
		}
		if wantErr(t, last, 429, "rate_limit_error", "rate_limit_exceeded", noParam, "spec Limits Rate: third request in burst 2") {
			if m := last.JSON()["error"].(map[string]any)["message"]; m != "Rate limit exceeded" {
				t.Errorf("429 message %q, want \"Rate limit exceeded\" (spec Errors rule 3)", m)
			}
		}
		if ra, err := strconv.Atoi(last.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("429 Retry-After %q, want whole seconds >= 1 (DECISIONS 8.1, 8.22)", last.Header.Get("Retry-After"))
		}
		wantStatus(t, g.get(t, "/v1/models", tokMember, ""), 200, "spec Limits: other tokens have separate buckets")
		// the bucket is per token, across all routes
		wantErr(t, g.post(t, "/c1/chat", tokRate, "u1", map[string]any{"message": "hi"}), 429, "rate_limit_error", "rate_limit_exceeded", noParam, "spec Limits: one bucket per token on every route")
		time.Sleep(1100 * time.Millisecond)
		wantStatus(t, g.get(t, "/v1/models", tokRate, ""), 200, "spec Limits: a token is back after 1 s at 1 req/s")
	})
}

// clientFrom is an HTTP client whose connections come from the local address ip.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	t.Run("small limit", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.Env["GATEWAY_BODY_LIMIT_BYTES"] = "1024" })
		const ref = "spec Limits Body size; Codes body_too_large; issue 2 item 6"
		mk := func(n int) string {
			// a valid chat body of exactly n bytes
			head := `{"model":"lm-4-scout","messages":[{"role":"user","content":"`
			tailS := `"}]}`
			return head + strings.Repeat("a", n-len(head)-len(tailS)) + tailS
		}
		r := g.post(t, "/v1/chat/completions", tokMember, "", mk(1025))
		wantErr(t, r, 413, "request_too_large", "body_too_large", anyParam, ref+" (Content-Length)")
		r = g.post(t, "/v1/chat/completions", "", "", mk(1025))
		wantErr(t, r, 413, "request_too_large", "body_too_large", anyParam, "docs/decisions.md: the body limit by Content-Length is checked before the bearer")
		r = g.post(t, "/v1/chat/completions", tokMember, "", mk(1024))
		wantStatus(t, r, 200, "body of exactly the limit is accepted")
		r = g.post(t, "/c1/chat", tokMember, "alice", `{"message":"`+strings.Repeat("a", 2000)+`"}`)
		wantErr(t, r, 413, "request_too_large", "body_too_large", anyParam, ref+" (Content-Length /c1/chat)")
		// chunked: no Content-Length
		r = chunked(t, g, "/v1/chat/completions", tokMember, "", mk(5000))
		wantErr(t, r, 413, "request_too_large", "body_too_large", anyParam, ref+" (chunked)")
		r = chunked(t, g, "/c1/chat", tokMember, "alice", `{"message":"`+strings.Repeat("b", 3000)+`"}`)
		wantErr(t, r, 413, "request_too_large", "body_too_large", anyParam, ref+" (chunked /c1/chat)")
		r = chunked(t, g, "/v1/memory", tokMember, "alice", `{"key":"k","visibility":"private","value":"`+strings.Repeat("b", 3000)+`"}`)
		wantErr(t, r, 413, "request_too_large", "body_too_large", anyParam, ref+" (chunked /v1/memory)")
		r = chunked(t, g, "/v1/chat/completions", tokMember, "", mk(600))
		wantStatus(t, r, 200, "chunked body under the limit")
		// a multipart audio upload streams through: still held to the limit
		audio, ct := multipartBody(t, map[string]string{"model": "lm-transcribe"})
		audio = append(audio[:len(audio):len(audio)], bytes.Repeat([]byte("\r\n"), 1000)...) // epilogue padding past the limit
		r = g.do(t, "POST", "/v1/audio/transcriptions", tokGlobex, "", audio, H{"Content-Type": ct})
		wantErr(t, r, 413, "request_too_large", "body_too_large", anyParam, ref+" (Content-Length, multipart audio)")
		big, ct := multipartBody(t, map[string]string{"model": "lm-transcribe"})
		big = bytes.Replace(big, bytes.Repeat([]byte{0x52, 0x49, 0x46, 0x46}, 64), bytes.Repeat([]byte{0x52, 0x49, 0x46, 0x46}, 1000), 1)
		req, _ := http.NewRequest("POST", g.Base+"/v1/audio/transcriptions", io.MultiReader(bytes.NewReader(big)))
		req.ContentLength = -1
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+tokGlobex)
		r = send(t, client, req, " (chunked multipart)")
		wantErr(t, r, 413, "request_too_large", "body_too_large", anyParam, ref+" (chunked multipart audio: uploads stream through, the limit still holds)")
	})
	t.Run("default 32 MiB by Content-Length", func(t *testing.T) {
		t.Parallel()
		g := start(t, nil)
		status, text := rawHeadersOnly(t, g, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tokMember+
			"\r\nContent-Type: application/json\r\nContent-Length: 33554433\r\n\r\n")
		if status != 413 || !strings.Contains(text, "body_too_large") {
			t.Errorf("POST /v1/chat/completions with Content-Length 33554433 -> %d %s, want 413 body_too_large before the body is read (spec Limits: 32 MB default; DECISIONS 8.8: 33554432 bytes)", status, truncate(text, 300))
		}
	})
}

// rawHeadersOnly sends a raw request head without its body and reads the answer.
func rawHeadersOnly(t *testing.T, g *gw, head string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.Base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(conn)
	text := string(data)
	var status int
	if f := strings.Fields(text); len(f) > 1 {
		status, _ = strconv.Atoi(f[1])
	}
	return status, text
}

func TestSIGHUPReload(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	// reload sends SIGHUP and waits for gatewayd to log the outcome, so that
	// what the test checks next happens after the reload, not before it.
	reload := func(outcome string) {
		t.Helper()
		before := strings.Count(g.stderr.String(), outcome)
		g.Signal(syscall.SIGHUP)
		if !waitFor(3*time.Second, func() bool { return strings.Count(g.stderr.String(), outcome) > before }) {
			t.Fatalf("gatewayd did not log %q after SIGHUP (DECISIONS 3: re-read on SIGHUP):\n%s", outcome, tail(g.stderr.String(), 1000))
		}
	}
	const (
		reloaded = "token catalog reloaded"
		refused  = "token catalog reload failed; keeping the old catalog"
	)
	const newTok = "reloaded-token-0100"
	wantErr(t, g.get(t, "/v1/models", newTok, ""), 401, "authentication_error", "invalid_authorization", "headers.authorization", "before reload")
	// a good file adds newTok and drops tokMember
	file := defaultTokenFile()
	var tokens []any
	for _, e := range file["tokens"].([]any) {
		if e.(map[string]any)["token"] != tokMember {
			tokens = append(tokens, e)
		}
	}
	file["tokens"] = append([]any{map[string]any{"token": newTok, "tenant": "globex", "role": "member"}}, tokens...)
	good := tokenFileJSON(file)
	writeFile(t, g.TokensPath, good)
	reload(reloaded)
	wantStatus(t, g.get(t, "/v1/models", newTok, ""), 200, "DECISIONS 3: a token added by the reloaded file works")
	wantStatus(t, g.get(t, "/v1/models", tokAdmin, ""), 200, "old tokens still valid after reload")
	wantErr(t, g.get(t, "/v1/models", tokMember, ""), 401, "authentication_error", "invalid_authorization", "headers.authorization", "DECISIONS 3: a token left out of the reloaded file is refused")

	// a bad file keeps the old catalog
	const badTok = "bad-file-token-0200"
	bad := strings.Replace(good, `"tokens": [`, `"tokens": [
    {"token": "`+badTok+`", "tenant": "no-such-tenant"},`, 1)
	writeFile(t, g.TokensPath, bad)
	reload(refused)
	wantStatus(t, g.get(t, "/v1/models", newTok, ""), 200, "DECISIONS 3: a bad file keeps the old catalog")
	wantErr(t, g.get(t, "/v1/models", badTok, ""), 401, "authentication_error", "invalid_authorization", "headers.authorization", "DECISIONS 3: a bad file is not loaded")
	if g.cmd.ProcessState != nil {
		t.Fatalf("gatewayd exited after SIGHUP with a bad file")
	}
	logs := g.stderr.String()
	if !strings.Contains(logs, "no-such-tenant") && !strings.Contains(logs, "tokens.json:") {
		t.Errorf("a refused reload is not logged with its reason (DECISIONS 3: keeps the old catalog and logs why):\n%s", tail(logs, 600))
	}
	if !strings.Contains(logs, "no-such-tenant") && !strings.Contains(logs, "line") {
		t.Errorf("a refused reload's log names neither the unknown tenant nor the line (DECISIONS 3):\n%s", tail(logs, 800))
	}
	// the default file again: newTok removed, tokMember back
	writeFile(t, g.TokensPath, defaultTokens())
	reload(reloaded)
	wantErr(t, g.get(t, "/v1/models", newTok, ""), 401, "authentication_error", "invalid_authorization", "headers.authorization", "DECISIONS 3: a token removed from the file is refused after SIGHUP")
	wantStatus(t, g.get(t, "/v1/models", tokMember, ""), 200, "DECISIONS 3: a token added back by reload")
}
