package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// versions returns n -> is_current of a level's versions.
func versions(t *testing.T, g *gw, token, user, level string) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	for _, v := range versionList(t, g, token, user, level) {
		n, _ := v["n"].(float64)
		cur, _ := v["is_current"].(bool)
		out[int(n)] = cur
	}
	return out
}

// versionContents returns "n:content:is_current" for each of a level's versions.
func versionContents(t *testing.T, g *gw, token, user, level string) []string {
	t.Helper()
	var out []string
	for _, v := range versionList(t, g, token, user, level) {
		out = append(out, fmt.Sprintf("%v:%v:%v", v["n"], v["content"], v["is_current"]))
	}
	return out
}

// versionList returns a level's versions, checking each entry's fields.
func versionList(t *testing.T, g *gw, token, user, level string) []map[string]any {
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
	for _, v := range list {
		_, ok := v["n"].(float64)
		_, ok2 := v["is_current"].(bool)
		if _, ok3 := v["content"].(string); !ok || !ok2 || !ok3 || v["created_at"] == nil {
			t.Errorf("version entry %v: want n, content, is_current, created_at (DECISIONS 6)", v)
		}
	}
	return list
}

func TestSystemPrompts(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	put := func(content string) *resp {
		return g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "alice", map[string]any{"content": content}, nil)
	}
	putN := func(content string, n int) {
		t.Helper()
		if r := put(content); wantStatus(t, r, 200, "DECISIONS 6: PUT stores a version") && r.JSON()["n"] != float64(n) {
			t.Errorf("%s\n  want version n %d (DECISIONS 6: n = last + 1, never reused)", r, n)
		}
	}
	current := func(user string) *resp {
		return g.get(t, "/v1/system-prompts/user", tokMember, user)
	}
	putN("first", 1)
	putN("second", 2)
	if v := versions(t, g, tokMember, "alice", "user"); mustJSON(v) != mustJSON(map[int]bool{1: false, 2: true}) {
		t.Errorf("versions %v, want 1 not current, 2 current (DECISIONS 6)", v)
	}
	if diff := cmp.Diff([]string{"1:first:false", "2:second:true"}, versionContents(t, g, tokMember, "alice", "user")); diff != "" {
		t.Errorf("versions mismatch (-want +got):\n%s", diff)
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
	if r := current("alice"); wantStatus(t, r, 200, "GET the current prompt") && r.JSON()["content"] != "first" {
		t.Errorf("%s\n  want the rolled-back-to content \"first\" (spec States)", r)
	}
	wantStatus(t, del("/v1/system-prompts/user/v/2"), 200, st+": prior version may then be hard-deleted")
	wantErr(t, g.do(t, "PUT", "/v1/system-prompts/user/current/2", tokMember, "alice", nil, nil), 404, "not_found_error", "system_prompt_version_not_found", "version", st+": rollback to a hard-deleted version")
	wantErr(t, del("/v1/system-prompts/user/v/1"), 409, "conflict_error", "system_prompt_current_locked", "version", st)
	wantStatus(t, del("/v1/system-prompts/user"), 200, st+": soft delete")
	wantErr(t, current("alice"), 404, "not_found_error", "system_prompt_version_not_found", anyParam, st+": no current version after a soft delete")
	if v := versions(t, g, tokMember, "alice", "user"); mustJSON(v) != mustJSON(map[int]bool{1: false}) {
		t.Errorf("versions after soft delete %v, want only 1, not current (spec States)", v)
	}
	wantStatus(t, del("/v1/system-prompts/user/v/1"), 200, st+": after soft delete a version may be hard-deleted")
	putN("third", 3)
	if v := versions(t, g, tokMember, "alice", "user"); !v[3] || len(v) != 1 {
		t.Errorf("versions %v, want version 3 current (DECISIONS 6: n = last + 1)", v)
	}

	const sz = "spec Limits System prompt 8 KB; DECISIONS 8.8 (8192 bytes)"
	wantStatus(t, put(strings.Repeat("p", 8192)), 200, sz+": exactly 8192 bytes")
	wantErr(t, put(strings.Repeat("p", 8193)), 400, "invalid_request_error", "system_prompt_too_large", "content", sz)
	wantErr(t, put(strings.Repeat("é", 4097)), 400, "invalid_request_error", "system_prompt_too_large", "content", sz+": UTF-8 bytes (8194)")
	r := g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "alice", map[string]any{"content": "x", "extra": 1}, nil)
	wantErr(t, r, 400, "invalid_request_error", "invalid_field", "body.extra", "DECISIONS 5: unknown field")
	r = g.do(t, "PUT", "/v1/system-prompts/galaxy", tokMember, "alice", map[string]any{"content": "x"}, nil)
	wantErr(t, r, 400, "invalid_request_error", "invalid_field", "level", "DECISIONS 6: levels are tenant, scope and user; docs/decisions.md: param level")
	// docs/decisions.md: a non-integer or zero n is 404; every level has the 8 KB cap
	const nf = "docs/decisions.md System prompts: a non-integer or zero n is 404 system_prompt_version_not_found"
	runErrCases(t, g, errCases{
		{name: "unknown level versions", path: "/v1/system-prompts/galaxy/versions", status: 400, typ: "invalid_request_error", code: "invalid_field", param: "level"},
		{name: "rollback to n=0", method: "PUT", path: "/v1/system-prompts/user/current/0"},
		{name: "rollback to n=x", method: "PUT", path: "/v1/system-prompts/user/current/x"},
		{name: "rollback to n=-1", method: "PUT", path: "/v1/system-prompts/user/current/-1"},
		{name: "hard delete n=0", method: "DELETE", path: "/v1/system-prompts/user/v/0"},
		{name: "hard delete n=1.5", method: "DELETE", path: "/v1/system-prompts/user/v/1.5"},
		{name: "tenant level over 8 KB", method: "PUT", path: "/v1/system-prompts/tenant", token: tokAdmin, body: map[string]any{"content": strings.Repeat("t", 8193)},
			status: 400, typ: "invalid_request_error", code: "system_prompt_too_large", param: "content", ref: sz + ": tenant level"},
		{name: "scope level over 8 KB", method: "PUT", path: "/v1/system-prompts/scope", token: tokAdmin, body: map[string]any{"content": strings.Repeat("s", 8193)},
			status: 400, typ: "invalid_request_error", code: "system_prompt_too_large", param: "content", ref: sz + ": scope level"},
	}.withDefaults(tokMember, "alice").with(404, "not_found_error", "system_prompt_version_not_found", "version", nf))
	wantErr(t, current("bob"), 404, "not_found_error", "system_prompt_version_not_found", anyParam, "user levels are per user: bob has none")
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
	must(g.post(t, "/v1/memory", tokMember, "dan", map[string]any{"key": "city", "value": "Paris", "visibility": "public"}))

	checkInjected := func(where string, msgs []map[string]any, clientMsgs int) {
		t.Helper()
		if len(msgs) == 0 || msgs[0]["role"] != "system" {
			t.Errorf("%s: upstream messages %s, want an injected system message first (DECISIONS 6)", where, truncate(mustJSON(msgs), 400))
			return
		}
		sys := textOf(msgs[0])
		last := -1
		for _, part := range []string{"TENANT-PROMPT", "SCOPE-PROMPT", "USER-PROMPT", "favourite_colour: ultramarine", "city: Paris"} {
			i := strings.Index(sys, part)
			if i < 0 || i < last {
				t.Errorf("%s: injected system message %q lacks %q or has it out of order: want tenant, scope, user prompt, then private and public memory as key: value (DECISIONS 6)", where, sys, part)
				break
			}
			last = i
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
	msgs = messagesOf(lastBody(t, g.Local, "/chat/completions"))
	checkInjected("/c1", msgs, -1)
	if n := len(msgs) - len(nonSystem(msgs)); n != 1 {
		t.Errorf("/c1: upstream got %d system messages, want the injected one only: %v", n, roles(msgs))
	}
	cid := r.Header.Get("gw-conversation-id")
	hist := g.get(t, "/c1/conversations/"+cid, tokMember, "alice")
	if strings.Contains(string(hist.Body), "TENANT-PROMPT") || strings.Contains(string(hist.Body), "ultramarine") {
		t.Errorf("injected content persisted in the conversation: %s (issue 5 item 4)", truncate(string(hist.Body), 400))
	}
	// another user gets the tenant's prompts and public memory, not alice's
	must(g.post(t, "/c1/chat", tokMember, "carol", map[string]any{"message": "c1 hello", "stream": false, "model": "lm-4-scout-local"}))
	if sys := mustJSON(lastBody(t, g.Local, "/chat/completions")["messages"]); strings.Contains(sys, "ultramarine") || strings.Contains(sys, "USER-PROMPT") {
		t.Errorf("alice's private memory or user prompt injected for carol: %s (DECISIONS 6)", truncate(sys, 400))
	}
	if sys := mustJSON(lastBody(t, g.Local, "/chat/completions")["messages"]); !strings.Contains(sys, "TENANT-PROMPT") || !strings.Contains(sys, "Paris") {
		t.Errorf("tenant prompt or public memory not injected for carol: %s (DECISIONS 6)", truncate(sys, 400))
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
