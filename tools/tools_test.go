package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/tools"
	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// echo answers its call, to check what Execute hands a tool.
func echo() tools.Tool {
	return tools.Tool{
		Name:        "echo",
		Description: "Echoes the call.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`),
		Execute: func(_ context.Context, c tools.Call) (any, error) {
			var args struct {
				X *int `json:"x"`
			}
			if err := tools.DecodeArgs(c.Arguments, &args); err != nil {
				return nil, err
			}
			return map[string]any{"tenant": c.TenantID, "user": c.UserID, "args": c.Arguments, "principal": c.Principal != nil}, nil
		},
	}
}

func newRegistry(t *testing.T) *tools.Registry {
	t.Helper()
	r, err := tools.NewRegistry(
		tools.CurrentTime(clock.NewFake(t0)),
		echo(),
		tools.Tool{Name: "broken", Execute: func(context.Context, tools.Call) (any, error) { return nil, errors.New("secret detail") }},
		tools.Tool{Name: "guarded", Scope: "rag:write", Execute: func(context.Context, tools.Call) (any, error) { return "ok", nil }},
	)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// execute posts body to r.Execute as tenant acme with user (may be "").
func execute(t *testing.T, r *tools.Registry, user, body string, deny ...string) (int, any) {
	t.Helper()
	return testkit.ServeJSON(t, http.HandlerFunc(r.Execute), testkit.Request{Method: "POST", Target: "/v1/tools/execute", User: user, Body: body,
		Principal: &auth.Principal{Tenant: &auth.Tenant{ID: "acme"}, Role: auth.RoleMember, Deny: deny}})
}

// notFound is what an unknown tool answers.
func notFound() testkit.Error { return testkit.WantError(errcat.InvalidField, "body.name") }

func TestExecute(t *testing.T) {
	r := newRegistry(t)
	tests := []struct {
		name     string
		user     string
		body     string
		deny     []string
		want     testkit.Error
		wantBody any
	}{
		{name: "object arguments", user: "alice", body: `{"name":"echo","arguments":{"x":1}}`,
			wantBody: map[string]any{"tenant": "acme", "user": "alice", "args": map[string]any{"x": 1.0}, "principal": true}},
		{name: "arguments as a JSON string", body: `{"name":"echo","arguments":"{\"x\":2}"}`,
			wantBody: map[string]any{"tenant": "acme", "user": "", "args": map[string]any{"x": 2.0}, "principal": true}},
		{name: "no arguments", body: `{"name":"echo"}`,
			wantBody: map[string]any{"tenant": "acme", "user": "", "args": map[string]any{}, "principal": true}},
		{name: "null arguments", body: `{"name":"echo","arguments":null}`,
			wantBody: map[string]any{"tenant": "acme", "user": "", "args": map[string]any{}, "principal": true}},
		{name: "empty string arguments", body: `{"name":"echo","arguments":""}`,
			wantBody: map[string]any{"tenant": "acme", "user": "", "args": map[string]any{}, "principal": true}},
		{name: "current_time", body: `{"name":"current_time","arguments":{}}`,
			wantBody: map[string]any{"now": "2025-03-01T12:00:00Z", "unix": float64(t0.Unix()), "timezone": "UTC"}},
		{name: "unknown tool", body: `{"name":"nope","arguments":{}}`, want: notFound()},
		{name: "no name", body: `{"arguments":{}}`, want: testkit.WantError(errcat.MissingField, "body.name")},
		{name: "empty name", body: `{"name":""}`, want: testkit.WantError(errcat.MissingField, "body.name")},
		{name: "inspect false needs a name", body: `{"inspect":false}`, want: testkit.WantError(errcat.MissingField, "body.name")},
		{name: "name not a string", body: `{"name":1}`, want: testkit.WantError(errcat.InvalidField, "body.name")},
		{name: "arguments an array", body: `{"name":"echo","arguments":[1]}`, want: testkit.WantError(errcat.InvalidField, "body.arguments")},
		{name: "arguments a number", body: `{"name":"echo","arguments":3}`, want: testkit.WantError(errcat.InvalidField, "body.arguments")},
		{name: "arguments a string without an object", body: `{"name":"echo","arguments":"[1]"}`, want: testkit.WantError(errcat.InvalidField, "body.arguments")},
		{name: "arguments a string with bad JSON", body: `{"name":"echo","arguments":"{"}`, want: testkit.WantError(errcat.InvalidField, "body.arguments")},
		{name: "argument of the wrong type", body: `{"name":"echo","arguments":{"x":"1"}}`, want: testkit.WantError(errcat.InvalidField, "body.arguments.x")},
		{name: "unknown argument", body: `{"name":"echo","arguments":{"y":1}}`, want: testkit.WantError(errcat.InvalidField, "body.arguments.y")},
		{name: "user_id argument", body: `{"name":"echo","arguments":{"user_id":"bob"}}`, want: testkit.WantError(errcat.InvalidField, "body.arguments.user_id")},
		{name: "unknown body field", body: `{"name":"echo","args":{}}`, want: testkit.WantError(errcat.InvalidField, "body.args")},
		{name: "user_id in body", body: `{"name":"echo","user_id":"bob"}`, want: testkit.WantError(errcat.InvalidField, "body.user_id")},
		{name: "not JSON", body: `{`, want: testkit.WantError(errcat.InvalidJSON, "")},
		{name: "tool failure is internal", body: `{"name":"broken"}`, want: testkit.WantError(errcat.InternalError, "")},
		{name: "tool scope held", body: `{"name":"guarded"}`, wantBody: "ok"},
		{name: "tool scope denied", body: `{"name":"guarded"}`, deny: []string{"rag:write"}, want: testkit.WantError(errcat.Forbidden, "")},
		{name: "bad time zone", body: `{"name":"current_time","arguments":{"timezone":"Mars/Olympus"}}`, want: testkit.WantError(errcat.InvalidField, "body.arguments.timezone")},
		{name: "host time zone refused", body: `{"name":"current_time","arguments":{"timezone":"Local"}}`, want: testkit.WantError(errcat.InvalidField, "body.arguments.timezone")},
		{name: "current_time unknown argument", body: `{"name":"current_time","arguments":{"tz":"UTC"}}`, want: testkit.WantError(errcat.InvalidField, "body.arguments.tz")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := execute(t, r, tc.user, tc.body, tc.deny...)
			if diff := cmp.Diff(tc.want, testkit.ErrorOf(t, status, body)); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if tc.wantBody != nil {
				if diff := cmp.Diff(tc.wantBody, body); diff != "" {
					t.Errorf("answer mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestExecuteHidesInternalCause(t *testing.T) {
	r := newRegistry(t)
	_, body := execute(t, r, "", `{"name":"broken"}`)
	if bytes.Contains(mustJSON(t, body), []byte("secret detail")) {
		t.Errorf("internal error leaked its cause: %v", body)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInspect(t *testing.T) {
	r := newRegistry(t)
	status, body := execute(t, r, "", `{"inspect":true}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %v", status, body)
	}
	want := map[string]any{"tools": []any{
		map[string]any{"name": "broken", "description": "", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}},
		map[string]any{"name": "current_time", "description": "Returns the current date and time, in UTC or in the given IANA time zone.",
			"parameters": map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
				"timezone": map[string]any{"type": "string", "description": "IANA time zone name such as Europe/Paris; default UTC."}}}},
		map[string]any{"name": "echo", "description": "Echoes the call.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "integer"}}}},
		map[string]any{"name": "guarded", "description": "", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}},
	}}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("inspect mismatch (-want +got):\n%s", diff)
	}
}

func TestRegister(t *testing.T) {
	exec := func(context.Context, tools.Call) (any, error) { return nil, nil }
	tests := []struct {
		name    string
		tool    tools.Tool
		wantErr bool
	}{
		{"ok", tools.Tool{Name: "a_b-C9", Execute: exec}, false},
		{"duplicate", tools.Tool{Name: "echo", Execute: exec}, true},
		{"empty name", tools.Tool{Name: "", Execute: exec}, true},
		{"name with a space", tools.Tool{Name: "a b", Execute: exec}, true},
		{"name too long", tools.Tool{Name: string(bytes.Repeat([]byte("a"), 65)), Execute: exec}, true},
		{"no Execute", tools.Tool{Name: "x"}, true},
		{"parameters not an object", tools.Tool{Name: "y", Execute: exec, Parameters: json.RawMessage(`[]`)}, true},
		{"parameters not JSON", tools.Tool{Name: "z", Execute: exec, Parameters: json.RawMessage(`{`)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tools.NewRegistry(echo())
			if err != nil {
				t.Fatal(err)
			}
			err = r.Register(tc.tool)
			if (err != nil) != tc.wantErr {
				t.Errorf("Register(%q) = %v, want error %v", tc.tool.Name, err, tc.wantErr)
			}
		})
	}
	if _, err := tools.NewRegistry(echo(), echo()); err == nil {
		t.Error("NewRegistry with a duplicate: no error")
	}
}

func TestRun(t *testing.T) {
	r := newRegistry(t)
	// Without a principal (the caller checked scopes), the tool's scope is not checked.
	out, err := r.Run(context.Background(), "guarded", tools.Call{TenantID: "acme"})
	if err != nil || out != "ok" {
		t.Errorf("Run(guarded) = %v, %v", out, err)
	}
	if _, err := r.Run(context.Background(), "nope", tools.Call{TenantID: "acme"}); errcat.As(err).Param != notFound().Param {
		t.Errorf("Run(nope) = %v", err)
	}
	out, err = r.Run(context.Background(), "echo", tools.Call{TenantID: "acme", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(json.RawMessage("{}"), out.(map[string]any)["args"]); diff != "" {
		t.Errorf("absent arguments mismatch (-want +got):\n%s", diff)
	}
	if _, ok := r.Lookup("echo"); !ok {
		t.Error("Lookup(echo) found nothing")
	}
}

func TestCurrentTimeZone(t *testing.T) {
	if _, err := time.LoadLocation("Europe/Paris"); err != nil {
		t.Skip("no time zone database on this host")
	}
	r, err := tools.NewRegistry(tools.CurrentTime(clock.NewFake(t0)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Run(context.Background(), "current_time", tools.Call{TenantID: "acme", Arguments: json.RawMessage(`{"timezone":"Europe/Paris"}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := tools.CurrentTimeResult{Now: "2025-03-01T13:00:00+01:00", Unix: t0.Unix(), TimeZone: "Europe/Paris"}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("current_time mismatch (-want +got):\n%s", diff)
	}
}
