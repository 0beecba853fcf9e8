package rag_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/tools"
)

func TestToolDescription(t *testing.T) {
	e := newEnv(t)
	tool := e.svc.Tool()
	testkit.Diff(t, "name", "rag_search", tool.Name)
	testkit.Diff(t, "scope", "rag:read", tool.Scope)
	var schema map[string]any
	if err := json.Unmarshal(tool.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	testkit.Diff(t, "required", []any{"index", "query"}, schema["required"])
	props, _ := schema["properties"].(map[string]any)
	testkit.Diff(t, "types", map[string]any{"index": "string", "query": "string", "k": "integer"},
		map[string]any{"index": testkit.Field(props["index"], "type"), "query": testkit.Field(props["query"], "type"), "k": testkit.Field(props["k"], "type")})
}

func TestToolMatchesSearchEndpoint(t *testing.T) {
	e := newEnv(t)
	corpus(e, "", "kb")
	for _, tc := range []struct {
		args  map[string]any
		query string
	}{
		{map[string]any{"index": "kb", "query": "the cat"}, "q=the+cat"},
		{map[string]any{"index": "kb", "query": "the cat", "k": 2}, "q=the+cat&k=2"},
		{map[string]any{"index": "kb", "query": "mat"}, "q=mat"},
		{map[string]any{"index": "kb", "query": "unicorn"}, "q=unicorn"},
	} {
		want := e.OK(getReq("", "/a1/rag/indices/kb/search?"+tc.query))
		status, got := e.tool("", tc.args)
		testkit.Diff(t, "status", http.StatusOK, status)
		testkit.Diff(t, "answer of "+tc.query, want, got)
	}
	// Arguments as a JSON string, as OpenAI's function.arguments.
	want := e.OK(getReq("", "/a1/rag/indices/kb/search?q=cat"))
	status, got := e.tool("", `{"index":"kb","query":"cat"}`)
	testkit.Diff(t, "status", http.StatusOK, status)
	testkit.Diff(t, "string arguments", want, got)
}

func TestToolErrors(t *testing.T) {
	e := newEnv(t)
	corpus(e, "", "kb")
	tests := []struct {
		name string
		args any
		want testkit.Error
	}{
		{"no index", map[string]any{"query": "cat"}, testkit.WantError(errcat.MissingField, "body.arguments.index")},
		{"empty index", map[string]any{"index": "", "query": "cat"}, testkit.WantError(errcat.InvalidField, "body.arguments.index")},
		{"index a number", map[string]any{"index": 3, "query": "cat"}, testkit.WantError(errcat.InvalidField, "body.arguments.index")},
		{"no query", map[string]any{"index": "kb"}, testkit.WantError(errcat.MissingField, "body.arguments.query")},
		{"blank query", map[string]any{"index": "kb", "query": " "}, testkit.WantError(errcat.InvalidField, "body.arguments.query")},
		{"k zero", map[string]any{"index": "kb", "query": "cat", "k": 0}, testkit.WantError(errcat.InvalidField, "body.arguments.k")},
		{"k over max", map[string]any{"index": "kb", "query": "cat", "k": 51}, testkit.WantError(errcat.InvalidField, "body.arguments.k")},
		{"k a string", map[string]any{"index": "kb", "query": "cat", "k": "3"}, testkit.WantError(errcat.InvalidField, "body.arguments.k")},
		{"k a fraction", map[string]any{"index": "kb", "query": "cat", "k": 2.5}, testkit.WantError(errcat.InvalidField, "body.arguments.k")},
		{"unknown argument", map[string]any{"index": "kb", "query": "cat", "top": 3}, testkit.WantError(errcat.InvalidField, "body.arguments.top")},
		{"unknown index", map[string]any{"index": "nope", "query": "cat"}, testkit.WantError(errcat.IndexNotFound, "id")},
		{"invalid index id", map[string]any{"index": "../kb", "query": "cat"}, testkit.WantError(errcat.IndexNotFound, "id")},
	}
	for _, tc := range tests {
		e.Run(t, tc.name, func(t *testing.T) {
			status, body := e.tool("", tc.args)
			testkit.Diff(t, "error", tc.want, testkit.ErrorOf(t, status, body))
		})
	}

	e.Deny = []string{"rag:read"}
	status, body := e.tool("", map[string]any{"index": "kb", "query": "cat"})
	testkit.Diff(t, "without rag:read", testkit.WantError(errcat.Forbidden, ""), testkit.ErrorOf(t, status, body))
}

func TestToolRunTenantFromCall(t *testing.T) {
	e := newEnv(t)
	corpus(e, "acme", "kb")
	ctx := context.Background()
	args := json.RawMessage(`{"index":"kb","query":"bird"}`)
	out, err := e.reg.Run(ctx, "rag_search", tools.Call{TenantID: "acme", Principal: testkit.Member(&auth.Tenant{ID: "acme"}), Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	var got any
	_ = json.Unmarshal(b, &got)
	testkit.Diff(t, "hits", []string{"d4#0"}, hitIDs(got))

	// Without a principal (scopes already checked by the caller), the tenant
	// of the call still decides.
	_, err = e.reg.Run(ctx, "rag_search", tools.Call{TenantID: "globex", Arguments: args})
	testkit.Diff(t, "other tenant", errcat.IndexNotFound, errcat.CodeOf(err))
	// A call without TenantID falls back to the principal's tenant.
	if _, err = e.reg.Run(ctx, "rag_search", tools.Call{Principal: testkit.Member(&auth.Tenant{ID: "acme"}), Arguments: args}); err != nil {
		t.Errorf("tenant from principal: %v", err)
	}
	_, err = e.reg.Run(ctx, "rag_search", tools.Call{Arguments: args})
	testkit.Diff(t, "no tenant", errcat.InternalError, errcat.CodeOf(err))
}
