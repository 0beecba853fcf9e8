package memory_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/memory"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/tools"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a memory Service behind the routes the root wires, with a stand-in for
// the root's auth middleware: the tenant comes from the test's request.
type env struct {
	testkit.Client // T is the test or subtest; H the routes; Deny the calls' denied scopes
	st             *memstore.Store
	clk            *clock.Fake
	svc            *memory.Service
	reg            *tools.Registry
}

// newEnv builds a Service over a fresh store; edit, if any, changes its
// Config (whose Store and Clock are filled in) first.
func newEnv(t *testing.T, edit ...func(*memory.Config)) *env {
	t.Helper()
	return newEnvOver(t, testkit.MemStore(t), clock.NewFake(t0), edit...)
}

// newEnvOver builds a fresh Service over st (a restart keeps the store).
func newEnvOver(t *testing.T, st *memstore.Store, clk *clock.Fake, edit ...func(*memory.Config)) *env {
	t.Helper()
	e := &env{Client: testkit.Client{T: t}, st: st, clk: clk}
	cfg := memory.Config{Store: st, Clock: clk}
	for _, f := range edit {
		f(&cfg)
	}
	e.svc = memory.New(cfg)
	reg, err := tools.NewRegistry(append(e.svc.Tools(), tools.CurrentTime(clk))...)
	if err != nil {
		t.Fatal(err)
	}
	e.reg = reg
	e.H = testkit.Router(t, map[string]http.HandlerFunc{
		// The route list of the report, as the root wires it.
		"POST /v1/memory":                          e.svc.PutEntry,
		"GET /v1/memory":                           e.svc.ListEntries,
		"DELETE /v1/memory":                        e.svc.DeleteEntry,
		"GET /v1/memory/usage":                     e.svc.GetUsage,
		"PUT /v1/system-prompts/:level":            e.svc.PutPrompt,
		"GET /v1/system-prompts/:level":            e.svc.GetPrompt,
		"DELETE /v1/system-prompts/:level":         e.svc.DeletePrompt,
		"GET /v1/system-prompts/:level/versions":   e.svc.ListPromptVersions,
		"PUT /v1/system-prompts/:level/current/:n": e.svc.SetCurrentPrompt,
		"DELETE /v1/system-prompts/:level/v/:n":    e.svc.DeletePromptVersion,
		"POST /v1/tools/execute":                   reg.Execute,
	})
	return e
}

// failsIn sends q in the subtest name of t and compares its error with want.
func (e *env) failsIn(t *testing.T, name string, q testkit.Call, want testkit.Error) {
	t.Helper()
	e.Run(t, name, func(*testing.T) { e.Fails(q, want) })
}

// failStorage sends each q with the store failing its next transaction and
// wants storage_error.
func (e *env) failStorage(qs ...testkit.Call) {
	e.T.Helper()
	for _, q := range qs {
		e.st.FailNext(errors.New("disk on fire"))
		e.Fails(q, testkit.WantError(errcat.StorageError, ""))
	}
}

// remember stores an entry through POST /v1/memory; scope "" sends none.
func (e *env) remember(tenant, user, key, value, vis, scope string) {
	e.T.Helper()
	b := map[string]any{"key": key, "value": value, "visibility": vis}
	if scope != "" {
		b["scope_id"] = scope
	}
	e.OK(testkit.Call{Method: "POST", Target: "/v1/memory", Tenant: tenant, User: user, Body: b})
}

// prompt stores a version of level through PUT /v1/system-prompts/{level};
// scope "" sends none.
func (e *env) prompt(tenant, user, level, content, scope string) {
	e.T.Helper()
	b := map[string]any{"content": content}
	if scope != "" {
		b["scope_id"] = scope
	}
	e.OK(testkit.Call{Method: "PUT", Target: "/v1/system-prompts/" + level, Tenant: tenant, User: user, Body: b})
}

// list returns keysValues of GET /v1/memory?query.
func (e *env) list(tenant, user, query string) []string {
	e.T.Helper()
	path := "/v1/memory"
	if query != "" {
		path += "?" + query
	}
	return keysValues(e.OK(testkit.Call{Method: "GET", Target: path, Tenant: tenant, User: user}))
}

// tool executes a tool through POST /v1/tools/execute.
func (e *env) tool(tenant, user, name string, args map[string]any) (int, any) {
	e.T.Helper()
	return e.JSON(testkit.Call{Method: "POST", Target: "/v1/tools/execute", Tenant: tenant, User: user,
		Body: map[string]any{"name": name, "arguments": args}})
}

// keysValues returns "key=value" for each entry of a list answer.
func keysValues(list any) []string {
	out := []string{}
	for _, d := range testkit.Data(list) {
		out = append(out, testkit.Field(d, "key").(string)+"="+testkit.Field(d, "value").(string)+"/"+testkit.Field(d, "visibility").(string))
	}
	return out
}

func repeat(n int) string { return strings.Repeat("v", n) }
