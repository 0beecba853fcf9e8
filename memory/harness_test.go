package memory_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
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
	testkit.Client // T is the test or subtest; H the routes
	st             *memstore.Store
	clk            *clock.Fake
	svc            *memory.Service
	reg            *tools.Registry
	// deny lists scopes the next requests' principal is denied.
	deny []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	return newEnvOver(t, st, clock.NewFake(t0))
}

// newEnvOver builds a fresh Service over st (a restart keeps the store).
func newEnvOver(t *testing.T, st *memstore.Store, clk *clock.Fake) *env {
	t.Helper()
	e := &env{Client: testkit.Client{T: t}, st: st, clk: clk}
	e.svc = memory.New(memory.Config{Store: st, Clock: clk})
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

// req is one request: tenant "" means acme.
type req struct {
	method, path string
	tenant, user string
	body         any // string sent verbatim, anything else as JSON
}

// request is q as the root's middleware hands it to a handler: with a
// principal of a member of the tenant, denied the scopes deny.
func request(q req, deny []string) testkit.Request {
	tenant := q.tenant
	if tenant == "" {
		tenant = "acme"
	}
	return testkit.Request{Method: q.method, Target: q.path, User: q.user, Body: q.body,
		Principal: &auth.Principal{Tenant: &auth.Tenant{ID: tenant}, Role: auth.RoleMember, Deny: deny}}
}

// do sends q and returns the status and the decoded JSON body.
func (e *env) do(q req) (int, any) {
	e.T.Helper()
	return e.JSON(request(q, e.deny))
}

// ok sends q, wants 200 and returns the body.
func (e *env) ok(q req) any {
	e.T.Helper()
	return e.OK(request(q, e.deny))
}

// fails sends q and compares its error with want.
func (e *env) fails(q req, want testkit.Error) {
	e.T.Helper()
	e.Fails(request(q, e.deny), want)
}

// failsIn sends q in the subtest name of t and compares its error with want.
func (e *env) failsIn(t *testing.T, name string, q req, want testkit.Error) {
	t.Helper()
	e.Run(t, name, func(*testing.T) { e.fails(q, want) })
}

// failStorage sends each q with the store failing its next transaction and
// wants storage_error.
func (e *env) failStorage(qs ...req) {
	e.T.Helper()
	for _, q := range qs {
		e.st.FailNext(errors.New("disk on fire"))
		e.fails(q, testkit.WantError(errcat.StorageError, ""))
	}
}

// remember stores an entry through POST /v1/memory; scope "" sends none.
func (e *env) remember(tenant, user, key, value, vis, scope string) {
	e.T.Helper()
	b := map[string]any{"key": key, "value": value, "visibility": vis}
	if scope != "" {
		b["scope_id"] = scope
	}
	e.ok(req{method: "POST", path: "/v1/memory", tenant: tenant, user: user, body: b})
}

// prompt stores a version of level through PUT /v1/system-prompts/{level};
// scope "" sends none.
func (e *env) prompt(tenant, user, level, content, scope string) {
	e.T.Helper()
	b := map[string]any{"content": content}
	if scope != "" {
		b["scope_id"] = scope
	}
	e.ok(req{method: "PUT", path: "/v1/system-prompts/" + level, tenant: tenant, user: user, body: b})
}

// list returns keysValues of GET /v1/memory?query.
func (e *env) list(tenant, user, query string) []string {
	e.T.Helper()
	path := "/v1/memory"
	if query != "" {
		path += "?" + query
	}
	return keysValues(e.ok(req{method: "GET", path: path, tenant: tenant, user: user}))
}

// tool executes a tool through POST /v1/tools/execute.
func (e *env) tool(tenant, user, name string, args map[string]any) (int, any) {
	e.T.Helper()
	return e.do(req{method: "POST", path: "/v1/tools/execute", tenant: tenant, user: user,
		body: map[string]any{"name": name, "arguments": args}})
}

// field returns m[key] of a JSON object.
func field(v any, key string) any {
	m, _ := v.(map[string]any)
	return m[key]
}

// keysValues returns "key=value" for each entry of a list answer.
func keysValues(list any) []string {
	out := []string{}
	data, _ := field(list, "data").([]any)
	for _, d := range data {
		out = append(out, field(d, "key").(string)+"="+field(d, "value").(string)+"/"+field(d, "visibility").(string))
	}
	return out
}

func repeat(n int) string { return strings.Repeat("v", n) }
