package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/memory"
	"github.com/chatgw/gateway/tools"
)

func publicArgs(key, value string) map[string]any {
	return map[string]any{"key": key, "value": value, "visibility": "public"}
}

// confirmToken asks for a confirmation of args and returns the token.
func (e *env) confirmToken(tenant, user string, args map[string]any) string {
	e.T.Helper()
	status, body := e.tool(tenant, user, "memory_remember", args)
	if status != http.StatusOK || testkit.Field(body, "confirm_required") != true {
		e.T.Fatalf("memory_remember %v: %d %v, want confirm_required", args, status, body)
	}
	testkit.Diff(e.T, "expires_in", 60.0, testkit.Field(body, "expires_in"))
	tok, _ := testkit.Field(body, "confirm_token").(string)
	if tok == "" {
		e.T.Fatalf("no confirm_token in %v", body)
	}
	return tok
}

func with(args map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for key, val := range args {
		out[key] = val
	}
	out[k] = v
	return out
}

func (e *env) publicList(tenant, user, scope string) []string {
	e.T.Helper()
	q := "visibility=public"
	if scope != "" {
		q += "&scope_id=" + scope
	}
	return e.list(tenant, user, q)
}

func TestRememberPrivateWritesAtOnce(t *testing.T) {
	e := newEnv(t)
	status, body := e.tool("", "alice", "memory_remember", map[string]any{"key": "k", "value": "v", "visibility": "private"})
	testkit.Diff(t, "status", http.StatusOK, status)
	testkit.Diff(t, "answer", map[string]any{"stored": true, "key": "k", "visibility": "private", "scope_id": "default"}, body)
	testkit.Diff(t, "entries", []string{"k=v/private"}, e.list("", "alice", ""))
	// A token on a private write is ignored.
	status, _ = e.tool("", "alice", "memory_remember", map[string]any{"key": "k", "value": "w", "visibility": "private", "confirm_token": "junk"})
	testkit.Diff(t, "status with junk token", http.StatusOK, status)
}

func TestRememberPublicConfirmFlow(t *testing.T) {
	e := newEnv(t)
	args := publicArgs("wifi", "guest")
	tok := e.confirmToken("", "alice", args)
	testkit.Diff(t, "nothing written before confirm", []string{}, e.publicList("", "alice", ""))

	status, body := e.tool("", "alice", "memory_remember", with(args, "confirm_token", tok))
	testkit.Diff(t, "status", http.StatusOK, status)
	testkit.Diff(t, "answer", map[string]any{"stored": true, "key": "wifi", "visibility": "public", "scope_id": "default"}, body)
	testkit.Diff(t, "written", []string{"wifi=guest/public"}, e.publicList("", "bob", ""))

	// Single use.
	status, body = e.tool("", "alice", "memory_remember", with(args, "confirm_token", tok))
	testkit.Diff(t, "reuse", testkit.WantError(errcat.MemoryConfirmRequired, "confirm_token"), testkit.ErrorOf(t, status, body))
}

func TestConfirmTokenRejections(t *testing.T) {
	args := map[string]any{"key": "wifi", "value": "guest", "visibility": "public", "scope_id": "office"}
	bad := testkit.WantError(errcat.MemoryConfirmRequired, "confirm_token")
	tests := []struct {
		name         string
		advance      time.Duration
		tenant, user string
		args         map[string]any
		token        func(tok string) string
		want         testkit.Error
		// stillValid says whether the rightful call may use the token afterwards.
		stillValid bool
	}{
		{name: "valid at 59s", advance: 59 * time.Second, user: "alice", args: args, want: testkit.Error{}},
		{name: "expired at 60s", advance: 60 * time.Second, user: "alice", args: args, want: bad},
		{name: "expired later", advance: time.Hour, user: "alice", args: args, want: bad},
		{name: "wrong token", user: "alice", args: args, token: func(string) string { return "mct_nope" }, want: bad, stillValid: true},
		{name: "other value", user: "alice", args: with(args, "value", "guest2"), want: bad, stillValid: true},
		{name: "other key", user: "alice", args: with(args, "key", "wifi2"), want: bad, stillValid: true},
		{name: "other scope", user: "alice", args: with(args, "scope_id", "default"), want: bad, stillValid: true},
		{name: "other user", user: "bob", args: args, want: bad, stillValid: true},
		{name: "other tenant", tenant: "other", user: "alice", args: args, want: bad, stillValid: true},
		{name: "private with the token writes at once", user: "alice", args: with(args, "visibility", "private"), want: testkit.Error{}, stillValid: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tok := e.confirmToken("", "alice", args)
			e.clk.Advance(tc.advance)
			sent := tok
			if tc.token != nil {
				sent = tc.token(tok)
			}
			status, body := e.tool(tc.tenant, tc.user, "memory_remember", with(tc.args, "confirm_token", sent))
			testkit.Diff(t, "error", tc.want, testkit.ErrorOf(t, status, body))
			if tc.want != (testkit.Error{}) {
				testkit.Diff(t, "nothing written", []string{}, e.publicList("", "alice", "office"))
				testkit.Diff(t, "nothing written for the other tenant", []string{}, e.publicList("other", "alice", "office"))
			}
			status, body = e.tool("", "alice", "memory_remember", with(args, "confirm_token", tok))
			if tc.stillValid {
				testkit.Diff(t, "rightful call afterwards", testkit.Error{}, testkit.ErrorOf(t, status, body))
				testkit.Diff(t, "written", []string{"wifi=guest/public"}, e.publicList("", "alice", "office"))
			} else {
				testkit.Diff(t, "rightful call afterwards", bad, testkit.ErrorOf(t, status, body))
			}
		})
	}
}

func TestConfirmTokensAreDistinct(t *testing.T) {
	e := newEnv(t)
	a := e.confirmToken("", "alice", publicArgs("k", "v"))
	b := e.confirmToken("", "alice", publicArgs("k", "v"))
	if a == b {
		t.Fatalf("two confirmations gave the same token %q", a)
	}
	// Each is valid once.
	for _, tok := range []string{a, b} {
		status, body := e.tool("", "alice", "memory_remember", with(publicArgs("k", "v"), "confirm_token", tok))
		testkit.Diff(t, "error", testkit.Error{}, testkit.ErrorOf(t, status, body))
	}
}

func TestConfirmStoreIsBounded(t *testing.T) {
	e := newEnv(t, func(c *memory.Config) { c.MaxPendingConfirms = 2 })
	call := func(args map[string]any) (any, error) {
		return e.reg.Run(context.Background(), "memory_remember", tools.Call{TenantID: "acme", UserID: "alice", Arguments: mustJSON(t, args)})
	}
	var toks []string
	for i := range 3 {
		e.clk.Advance(time.Second)
		out, err := call(publicArgs("k", strings.Repeat("v", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, out.(memory.ConfirmRequired).ConfirmToken)
	}
	// The oldest token was evicted; the two newer ones still work.
	if _, err := call(with(publicArgs("k", "v"), "confirm_token", toks[0])); errcat.CodeOf(err) != errcat.MemoryConfirmRequired {
		t.Errorf("evicted token: err %v, want memory_confirm_required", err)
	}
	for i, tok := range toks[1:] {
		if _, err := call(with(publicArgs("k", strings.Repeat("v", i+2)), "confirm_token", tok)); err != nil {
			t.Errorf("token %d: %v", i+1, err)
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRememberBucketFull(t *testing.T) {
	e := newEnv(t)
	full := testkit.WantError(errcat.MemoryBucketFull, "value")
	big := repeat(memory.BucketCapBytes - 1)

	// Checked before a token is issued.
	status, body := e.tool("", "alice", "memory_remember", publicArgs("k", big+"x"))
	testkit.Diff(t, "too big at confirm", full, testkit.ErrorOf(t, status, body))

	// Checked again on the confirmed write; a failed write keeps the token.
	tok := e.confirmToken("", "alice", publicArgs("k", big))
	e.remember("", "bob", "other", "x", "public", "")
	status, body = e.tool("", "alice", "memory_remember", with(publicArgs("k", big), "confirm_token", tok))
	testkit.Diff(t, "full at write", full, testkit.ErrorOf(t, status, body))
	e.OK(testkit.Call{Method: "DELETE", Target: "/v1/memory?visibility=public&key=other", User: "bob"})
	status, body = e.tool("", "alice", "memory_remember", with(publicArgs("k", big), "confirm_token", tok))
	testkit.Diff(t, "retry with the same token", testkit.Error{}, testkit.ErrorOf(t, status, body))

	// Private writes overflow like REST writes.
	e.remember("", "alice", "p", big, "private", "")
	status, body = e.tool("", "alice", "memory_remember", map[string]any{"key": "q", "value": "x", "visibility": "private"})
	testkit.Diff(t, "private full", full, testkit.ErrorOf(t, status, body))
}

func TestForget(t *testing.T) {
	e := newEnv(t)
	e.remember("", "alice", "k", "v", "private", "")
	e.remember("", "alice", "s", "v", "public", "team")
	tests := []struct {
		user string
		args map[string]any
		want any
	}{
		{"bob", map[string]any{"key": "k", "visibility": "private"}, map[string]any{"deleted": false, "key": "k", "visibility": "private", "scope_id": "default"}},
		{"alice", map[string]any{"key": "k", "visibility": "private"}, map[string]any{"deleted": true, "key": "k", "visibility": "private", "scope_id": "default"}},
		{"alice", map[string]any{"key": "k", "visibility": "private"}, map[string]any{"deleted": false, "key": "k", "visibility": "private", "scope_id": "default"}},
		{"bob", map[string]any{"key": "s", "visibility": "public"}, map[string]any{"deleted": false, "key": "s", "visibility": "public", "scope_id": "default"}},
		{"bob", map[string]any{"key": "s", "visibility": "public", "scope_id": "team"}, map[string]any{"deleted": true, "key": "s", "visibility": "public", "scope_id": "team"}},
	}
	for _, tc := range tests {
		status, body := e.tool("", tc.user, "memory_forget", tc.args)
		testkit.Diff(t, "status", http.StatusOK, status)
		testkit.Diff(t, "answer", tc.want, body)
	}
	testkit.Diff(t, "usage", usageOf(0, 0), e.usage("alice", "public", "team"))
}

func TestMemoryToolErrors(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		tool string
		user string
		args any
		want testkit.Error
	}{
		{"remember without user", "memory_remember", "", map[string]any{"key": "k", "value": "v", "visibility": "private"}, testkit.WantError(errcat.MissingField, "headers.gw-user-id")},
		{"forget without user", "memory_forget", "", map[string]any{"key": "k", "visibility": "private"}, testkit.WantError(errcat.MissingField, "headers.gw-user-id")},
		{"no key", "memory_remember", "alice", map[string]any{"value": "v", "visibility": "private"}, testkit.WantError(errcat.MissingField, "body.arguments.key")},
		{"empty key", "memory_remember", "alice", map[string]any{"key": "", "value": "v", "visibility": "private"}, testkit.WantError(errcat.InvalidField, "body.arguments.key")},
		{"key not string", "memory_remember", "alice", map[string]any{"key": 1, "value": "v", "visibility": "private"}, testkit.WantError(errcat.InvalidField, "body.arguments.key")},
		{"no value", "memory_remember", "alice", map[string]any{"key": "k", "visibility": "private"}, testkit.WantError(errcat.MissingField, "body.arguments.value")},
		{"empty value", "memory_remember", "alice", map[string]any{"key": "k", "value": "", "visibility": "private"}, testkit.WantError(errcat.InvalidField, "body.arguments.value")},
		{"no visibility", "memory_remember", "alice", map[string]any{"key": "k", "value": "v"}, testkit.WantError(errcat.MissingField, "body.arguments.visibility")},
		{"bad visibility", "memory_remember", "alice", map[string]any{"key": "k", "value": "v", "visibility": "all"}, testkit.WantError(errcat.InvalidField, "body.arguments.visibility")},
		{"bad scope", "memory_remember", "alice", map[string]any{"key": "k", "value": "v", "visibility": "private", "scope_id": strings.Repeat("s", 257)}, testkit.WantError(errcat.InvalidField, "body.arguments.scope_id")},
		{"unknown argument", "memory_remember", "alice", map[string]any{"key": "k", "value": "v", "visibility": "private", "ttl": 1}, testkit.WantError(errcat.InvalidField, "body.arguments.ttl")},
		{"token not string", "memory_remember", "alice", map[string]any{"key": "k", "value": "v", "visibility": "public", "confirm_token": 1}, testkit.WantError(errcat.InvalidField, "body.arguments.confirm_token")},
		{"forget no key", "memory_forget", "alice", map[string]any{"visibility": "private"}, testkit.WantError(errcat.MissingField, "body.arguments.key")},
		{"forget no visibility", "memory_forget", "alice", map[string]any{"key": "k"}, testkit.WantError(errcat.MissingField, "body.arguments.visibility")},
		{"forget unknown argument", "memory_forget", "alice", map[string]any{"key": "k", "visibility": "private", "value": "v"}, testkit.WantError(errcat.InvalidField, "body.arguments.value")},
		{"arguments not an object", "memory_forget", "alice", []int{1}, testkit.WantError(errcat.InvalidField, "body.arguments")},
	}
	for _, tc := range tests {
		e.failsIn(t, tc.name, testkit.Call{Method: "POST", Target: "/v1/tools/execute", User: tc.user,
			Body: map[string]any{"name": tc.tool, "arguments": tc.args}}, tc.want)
	}
}

func TestMemoryToolsNeedMemoryWrite(t *testing.T) {
	e := newEnv(t)
	e.Deny = []string{"memory:write"}
	for _, name := range []string{"memory_remember", "memory_forget"} {
		status, body := e.tool("", "alice", name, map[string]any{"key": "k", "value": "v", "visibility": "private"})
		testkit.Diff(t, name, testkit.WantError(errcat.Forbidden, ""), testkit.ErrorOf(t, status, body))
	}
	status, _ := e.tool("", "alice", "current_time", nil)
	testkit.Diff(t, "current_time", http.StatusOK, status)
}

func TestMemoryToolsStorageError(t *testing.T) {
	e := newEnv(t)
	storage := testkit.WantError(errcat.StorageError, "")
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{"memory_remember", map[string]any{"key": "k", "value": "v", "visibility": "private"}},
		{"memory_remember", publicArgs("k", "v")}, // the bucket check before the token
		{"memory_forget", map[string]any{"key": "k", "visibility": "private"}},
	} {
		e.st.FailNext(errors.New("disk on fire"))
		status, body := e.tool("", "alice", tc.name, tc.args)
		testkit.Diff(t, tc.name, storage, testkit.ErrorOf(t, status, body))
	}
	// A confirmed write that fails keeps its token.
	tok := e.confirmToken("", "alice", publicArgs("k", "v"))
	e.st.FailNext(errors.New("disk on fire"))
	status, body := e.tool("", "alice", "memory_remember", with(publicArgs("k", "v"), "confirm_token", tok))
	testkit.Diff(t, "confirmed write", storage, testkit.ErrorOf(t, status, body))
	status, body = e.tool("", "alice", "memory_remember", with(publicArgs("k", "v"), "confirm_token", tok))
	testkit.Diff(t, "retry", testkit.Error{}, testkit.ErrorOf(t, status, body))
}

func TestToolsInspect(t *testing.T) {
	e := newEnv(t)
	body := e.OK(testkit.Call{Method: "POST", Target: "/v1/tools/execute", Body: map[string]any{"inspect": true}})
	var names []string
	for _, tl := range testkit.Field(body, "tools").([]any) {
		names = append(names, testkit.Field(tl, "name").(string))
		params, _ := testkit.Field(tl, "parameters").(map[string]any)
		if params["type"] != "object" {
			t.Errorf("tool %v: parameters %v are not an object schema", testkit.Field(tl, "name"), params)
		}
	}
	testkit.Diff(t, "tools", []string{"current_time", "memory_forget", "memory_remember"}, names)
}
