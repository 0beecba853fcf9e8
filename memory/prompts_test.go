package memory_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/memory"
)

// ver is a version as the API shows it, created at t0 + minutes.
func ver(n int, content string, current bool, minutes int) map[string]any {
	return map[string]any{"n": float64(n), "content": content, "is_current": current,
		"created_at": t0.Add(time.Duration(minutes) * time.Minute).Format(time.RFC3339Nano)}
}

func versionsOf(current any, vs ...map[string]any) map[string]any {
	data := []any{}
	for _, v := range vs {
		data = append(data, v)
	}
	return map[string]any{"object": "list", "level": "tenant", "current": current, "data": data}
}

// TestPromptTransitions walks every row of the states table for system-prompt
// versions (docs/contract.md#states-and-transitions), and the version numbering.
func TestPromptTransitions(t *testing.T) {
	const base = "/v1/system-prompts/tenant"
	notFound := testkit.WantError(errcat.SystemPromptVersionNotFound, "version")
	locked := testkit.WantError(errcat.SystemPromptCurrentLocked, "version")
	steps := []struct {
		name     string
		method   string
		path     string
		body     any
		want     testkit.Error
		wantBody any // compared when not nil
		versions map[string]any
	}{
		{name: "no current version yet", method: "GET", path: base, want: notFound, versions: versionsOf(nil)},
		{name: "soft delete of nothing", method: "DELETE", path: base, wantBody: map[string]any{"deleted": false}, versions: versionsOf(nil)},
		{name: "first version", method: "PUT", path: base, body: map[string]any{"content": "A"},
			wantBody: ver(1, "A", true, 3), versions: versionsOf(1.0, ver(1, "A", true, 3))},
		{name: "second version becomes current", method: "PUT", path: base, body: map[string]any{"content": "B"},
			wantBody: ver(2, "B", true, 4), versions: versionsOf(2.0, ver(1, "A", false, 3), ver(2, "B", true, 4))},
		{name: "get current", method: "GET", path: base, wantBody: ver(2, "B", true, 4)},
		{name: "hard delete of current is locked", method: "DELETE", path: base + "/v/2", want: locked,
			versions: versionsOf(2.0, ver(1, "A", false, 3), ver(2, "B", true, 4))},
		{name: "hard delete of unknown", method: "DELETE", path: base + "/v/9", want: notFound},
		{name: "hard delete of non-number", method: "DELETE", path: base + "/v/abc", want: notFound},
		{name: "hard delete of zero", method: "DELETE", path: base + "/v/0", want: notFound},
		{name: "rollback to unknown", method: "PUT", path: base + "/current/9", want: notFound,
			versions: versionsOf(2.0, ver(1, "A", false, 3), ver(2, "B", true, 4))},
		{name: "rollback to non-number", method: "PUT", path: base + "/current/-1", want: notFound},
		{name: "rollback", method: "PUT", path: base + "/current/1", wantBody: ver(1, "A", true, 3),
			versions: versionsOf(1.0, ver(1, "A", true, 3), ver(2, "B", false, 4))},
		{name: "rollback to the current one", method: "PUT", path: base + "/current/1", wantBody: ver(1, "A", true, 3)},
		{name: "former current is now deletable", method: "DELETE", path: base + "/v/2",
			wantBody: map[string]any{"deleted": true, "n": 2.0}, versions: versionsOf(1.0, ver(1, "A", true, 3))},
		{name: "deleted version is gone", method: "PUT", path: base + "/current/2", want: notFound},
		{name: "numbers are not reused", method: "PUT", path: base, body: map[string]any{"content": "C"},
			wantBody: ver(3, "C", true, 16), versions: versionsOf(3.0, ver(1, "A", false, 3), ver(3, "C", true, 16))},
		{name: "soft delete", method: "DELETE", path: base, wantBody: map[string]any{"deleted": true},
			versions: versionsOf(nil, ver(1, "A", false, 3), ver(3, "C", false, 16))},
		{name: "no current after soft delete", method: "GET", path: base, want: notFound},
		{name: "soft delete again", method: "DELETE", path: base, wantBody: map[string]any{"deleted": false}},
		{name: "formerly current is deletable after soft delete", method: "DELETE", path: base + "/v/3",
			wantBody: map[string]any{"deleted": true, "n": 3.0}, versions: versionsOf(nil, ver(1, "A", false, 3))},
		{name: "restore after soft delete", method: "PUT", path: base + "/current/1", wantBody: ver(1, "A", true, 3),
			versions: versionsOf(1.0, ver(1, "A", true, 3))},
		{name: "soft delete once more", method: "DELETE", path: base, wantBody: map[string]any{"deleted": true}},
		{name: "delete the last version", method: "DELETE", path: base + "/v/1", wantBody: map[string]any{"deleted": true, "n": 1.0},
			versions: versionsOf(nil)},
		{name: "new version after all were deleted", method: "PUT", path: base, body: map[string]any{"content": "D"},
			wantBody: ver(4, "D", true, 24), versions: versionsOf(4.0, ver(4, "D", true, 24))},
	}
	e := newEnv(t)
	for _, s := range steps {
		e.clk.Advance(time.Minute)
		e.Run(t, s.name, func(t *testing.T) {
			status, body := e.JSON(testkit.Call{Method: s.method, Target: s.path, User: "alice", Body: s.body})
			testkit.Diff(t, "error", s.want, testkit.ErrorOf(t, status, body))
			if s.wantBody != nil {
				testkit.Diff(t, "answer", s.wantBody, body)
			}
			if s.versions != nil {
				testkit.Diff(t, "versions", s.versions, e.OK(testkit.Call{Method: "GET", Target: base + "/versions", User: "alice"}))
			}
		})
	}
}

func TestPromptValidation(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		method string
		path   string
		user   string
		body   any
		want   testkit.Error
	}{
		{"unknown level put", "PUT", "/v1/system-prompts/org", "alice", map[string]any{"content": "x"}, testkit.WantError(errcat.InvalidField, "level")},
		{"unknown level get", "GET", "/v1/system-prompts/org", "alice", nil, testkit.WantError(errcat.InvalidField, "level")},
		{"unknown level versions", "GET", "/v1/system-prompts/Tenant/versions", "alice", nil, testkit.WantError(errcat.InvalidField, "level")},
		{"unknown level rollback", "PUT", "/v1/system-prompts/x/current/1", "alice", nil, testkit.WantError(errcat.InvalidField, "level")},
		{"unknown level hard delete", "DELETE", "/v1/system-prompts/x/v/1", "alice", nil, testkit.WantError(errcat.InvalidField, "level")},
		{"unknown level soft delete", "DELETE", "/v1/system-prompts/x", "alice", nil, testkit.WantError(errcat.InvalidField, "level")},
		{"cap", "PUT", "/v1/system-prompts/tenant", "alice", map[string]any{"content": strings.Repeat("p", memory.PromptCapBytes)}, testkit.Error{}},
		{"cap+1", "PUT", "/v1/system-prompts/tenant", "alice", map[string]any{"content": strings.Repeat("p", memory.PromptCapBytes+1)},
			testkit.WantError(errcat.SystemPromptTooLarge, "content")},
		{"cap+1 in UTF-8 bytes", "PUT", "/v1/system-prompts/user", "alice", map[string]any{"content": strings.Repeat("é", memory.PromptCapBytes/2) + "x"},
			testkit.WantError(errcat.SystemPromptTooLarge, "content")},
		{"cap+1 on scope level", "PUT", "/v1/system-prompts/scope", "alice", map[string]any{"content": strings.Repeat("p", memory.PromptCapBytes+1)},
			testkit.WantError(errcat.SystemPromptTooLarge, "content")},
		{"no content", "PUT", "/v1/system-prompts/tenant", "alice", map[string]any{}, testkit.WantError(errcat.MissingField, "body.content")},
		{"empty content", "PUT", "/v1/system-prompts/tenant", "alice", map[string]any{"content": ""}, testkit.WantError(errcat.InvalidField, "body.content")},
		{"content not string", "PUT", "/v1/system-prompts/tenant", "alice", map[string]any{"content": 1}, testkit.WantError(errcat.InvalidField, "body.content")},
		{"unknown field", "PUT", "/v1/system-prompts/tenant", "alice", map[string]any{"content": "x", "level": "user"}, testkit.WantError(errcat.InvalidField, "body.level")},
		{"scope_id on user level", "PUT", "/v1/system-prompts/user", "alice", map[string]any{"content": "x", "scope_id": "s"}, testkit.WantError(errcat.InvalidField, "body.scope_id")},
		{"scope_id on tenant level", "GET", "/v1/system-prompts/tenant/versions?scope_id=s", "alice", nil, testkit.WantError(errcat.InvalidField, "query.scope_id")},
		{"scope_id too long", "PUT", "/v1/system-prompts/scope", "alice", map[string]any{"content": "x", "scope_id": strings.Repeat("s", 300)}, testkit.WantError(errcat.InvalidField, "body.scope_id")},
		{"scope_id body and query differ", "PUT", "/v1/system-prompts/scope?scope_id=a", "alice", map[string]any{"content": "x", "scope_id": "b"}, testkit.WantError(errcat.InvalidField, "body.scope_id")},
		{"user level without user", "PUT", "/v1/system-prompts/user", "", map[string]any{"content": "x"}, testkit.WantError(errcat.MissingField, "headers.gw-user-id")},
		{"user level read without user", "GET", "/v1/system-prompts/user/versions", "", nil, testkit.WantError(errcat.MissingField, "headers.gw-user-id")},
	}
	for _, tc := range tests {
		e.failsIn(t, tc.name, testkit.Call{Method: tc.method, Target: tc.path, User: tc.user, Body: tc.body}, tc.want)
	}
}

func TestPromptSubjects(t *testing.T) {
	e := newEnv(t)
	e.prompt("", "alice", "user", "alice's", "")
	e.prompt("", "bob", "user", "bob's", "")
	e.prompt("", "alice", "scope", "default scope", "")
	e.prompt("", "alice", "scope", "team scope", "team")
	e.prompt("", "alice", "scope", "team scope 2", "team")
	e.prompt("", "alice", "scope?scope_id=lab", "lab scope", "")
	e.prompt("", "alice", "tenant", "acme", "")
	e.prompt("other", "alice", "tenant", "other", "")

	current := func(path, user, tenant string) any {
		return testkit.Field(e.OK(testkit.Call{Method: "GET", Target: path, User: user, Tenant: tenant}), "content")
	}
	testkit.Diff(t, "alice", "alice's", current("/v1/system-prompts/user", "alice", ""))
	testkit.Diff(t, "bob", "bob's", current("/v1/system-prompts/user", "bob", ""))
	testkit.Diff(t, "default scope", "default scope", current("/v1/system-prompts/scope", "bob", ""))
	testkit.Diff(t, "default scope by name", "default scope", current("/v1/system-prompts/scope?scope_id=default", "bob", ""))
	testkit.Diff(t, "team scope", "team scope 2", current("/v1/system-prompts/scope?scope_id=team", "bob", ""))
	testkit.Diff(t, "lab scope", "lab scope", current("/v1/system-prompts/scope?scope_id=lab", "bob", ""))
	testkit.Diff(t, "tenant", "acme", current("/v1/system-prompts/tenant", "bob", ""))
	testkit.Diff(t, "other tenant", "other", current("/v1/system-prompts/tenant", "bob", "other"))
	e.Fails(testkit.Call{Method: "GET", Target: "/v1/system-prompts/user", User: "carol"}, testkit.WantError(errcat.SystemPromptVersionNotFound, "version"))
	e.Fails(testkit.Call{Method: "GET", Target: "/v1/system-prompts/scope", User: "alice", Tenant: "other"}, testkit.WantError(errcat.SystemPromptVersionNotFound, "version"))
	// Versions are numbered per subject; bob cannot touch alice's versions.
	e.Fails(testkit.Call{Method: "DELETE", Target: "/v1/system-prompts/user/v/1", User: "bob"}, testkit.WantError(errcat.SystemPromptCurrentLocked, "version"))
	e.OK(testkit.Call{Method: "DELETE", Target: "/v1/system-prompts/user", User: "bob"})
	e.OK(testkit.Call{Method: "DELETE", Target: "/v1/system-prompts/user/v/1", User: "bob"})
	testkit.Diff(t, "alice after bob's delete", "alice's", current("/v1/system-prompts/user", "alice", ""))
	e.OK(testkit.Call{Method: "PUT", Target: "/v1/system-prompts/scope/current/1?scope_id=team", User: "alice"})
	testkit.Diff(t, "team scope rolled back", "team scope", current("/v1/system-prompts/scope?scope_id=team", "bob", ""))
}

func TestPromptStorageError(t *testing.T) {
	e := newEnv(t)
	e.prompt("", "alice", "tenant", "A", "")
	e.prompt("", "alice", "tenant", "B", "")
	e.failStorage(
		testkit.Call{Method: "PUT", Target: "/v1/system-prompts/tenant", User: "alice", Body: map[string]any{"content": "C"}},
		testkit.Call{Method: "GET", Target: "/v1/system-prompts/tenant", User: "alice"},
		testkit.Call{Method: "GET", Target: "/v1/system-prompts/tenant/versions", User: "alice"},
		testkit.Call{Method: "PUT", Target: "/v1/system-prompts/tenant/current/1", User: "alice"},
		testkit.Call{Method: "DELETE", Target: "/v1/system-prompts/tenant/v/1", User: "alice"},
		testkit.Call{Method: "DELETE", Target: "/v1/system-prompts/tenant", User: "alice"},
	)
	testkit.Diff(t, "versions after failures", map[string]any{"object": "list", "level": "tenant", "current": 2.0,
		"data": []any{ver(1, "A", false, 0), ver(2, "B", true, 0)}},
		e.OK(testkit.Call{Method: "GET", Target: "/v1/system-prompts/tenant/versions", User: "alice"}))
}
