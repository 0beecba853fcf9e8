package memory_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/memory"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/tools"
	"github.com/google/go-cmp/cmp"
	"github.com/julienschmidt/httprouter"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a memory Service behind the routes the root wires, with a stand-in for
// the root's auth middleware: the tenant comes from the test's request.
type env struct {
	t   *testing.T
	st  *memstore.Store
	clk *clock.Fake
	svc *memory.Service
	reg *tools.Registry
	h   http.Handler
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
	e := &env{t: t, st: st, clk: clk}
	e.svc = memory.New(memory.Config{Store: st, Clock: clk})
	reg, err := tools.NewRegistry(append(e.svc.Tools(), tools.CurrentTime(clk))...)
	if err != nil {
		t.Fatal(err)
	}
	e.reg = reg
	r := httprouter.New()
	for _, rt := range []struct {
		method, path string
		h            http.HandlerFunc
	}{
		// The route list of the report, as the root wires it.
		{"POST", "/v1/memory", e.svc.PutEntry},
		{"GET", "/v1/memory", e.svc.ListEntries},
		{"DELETE", "/v1/memory", e.svc.DeleteEntry},
		{"GET", "/v1/memory/usage", e.svc.GetUsage},
		{"PUT", "/v1/system-prompts/:level", e.svc.PutPrompt},
		{"GET", "/v1/system-prompts/:level", e.svc.GetPrompt},
		{"DELETE", "/v1/system-prompts/:level", e.svc.DeletePrompt},
		{"GET", "/v1/system-prompts/:level/versions", e.svc.ListPromptVersions},
		{"PUT", "/v1/system-prompts/:level/current/:n", e.svc.SetCurrentPrompt},
		{"DELETE", "/v1/system-prompts/:level/v/:n", e.svc.DeletePromptVersion},
		{"POST", "/v1/tools/execute", reg.Execute},
	} {
		r.Handler(rt.method, rt.path, rt.h)
	}
	e.h = r
	return e
}

// req is one request: tenant "" means acme.
type req struct {
	method, path string
	tenant, user string
	body         any // string sent verbatim, anything else as JSON
}

// newRequest builds q as the root's middleware hands it to a handler: with a
// principal of the tenant that denies the scopes deny. It returns an error
// instead of failing a test so that other goroutines may call it.
func newRequest(q req, deny []string) (*http.Request, error) {
	var body []byte
	switch b := q.body.(type) {
	case nil:
	case string:
		body = []byte(b)
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			return nil, fmt.Errorf("body of %s %s: %w", q.method, q.path, err)
		}
	}
	r := httptest.NewRequest(q.method, q.path, bytes.NewReader(body))
	if q.user != "" {
		r.Header.Set(httpx.HeaderUserID, q.user)
	}
	tenant := q.tenant
	if tenant == "" {
		tenant = "acme"
	}
	p := &auth.Principal{Tenant: &auth.Tenant{ID: tenant}, Role: auth.RoleMember, Deny: deny}
	return r.WithContext(auth.NewContext(r.Context(), p)), nil
}

// do sends q and returns the status and the decoded JSON body.
func (e *env) do(q req) (int, any) {
	e.t.Helper()
	r, err := newRequest(q, e.deny)
	if err != nil {
		e.t.Fatal(err)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		e.t.Fatalf("%s %s: Content-Type %q", q.method, q.path, ct)
	}
	var out any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		e.t.Fatalf("%s %s: body %q: %v", q.method, q.path, w.Body.String(), err)
	}
	return w.Code, out
}

// ok sends q, wants 200 and returns the body.
func (e *env) ok(q req) any {
	e.t.Helper()
	status, out := e.do(q)
	if status != http.StatusOK {
		e.t.Fatalf("%s %s: status %d, want 200; body %v", q.method, q.path, status, out)
	}
	return out
}

// apiErr is the part of an error envelope the tests compare.
type apiErr struct {
	Status      int
	Code, Param string
}

// errOf returns the error of an answer, or the zero apiErr for a 200.
func errOf(status int, body any) apiErr {
	if status == http.StatusOK {
		return apiErr{}
	}
	m, _ := body.(map[string]any)
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(string)
	param, _ := e["param"].(string)
	return apiErr{Status: status, Code: code, Param: param}
}

// wantErr builds the expected apiErr of code, with the catalog's status.
func wantErr(code errcat.Code, param string) apiErr {
	return apiErr{Status: errcat.Lookup(code).HTTPStatus, Code: string(code), Param: param}
}

// fails sends q and compares its error with want.
func (e *env) fails(q req, want apiErr) {
	e.t.Helper()
	status, body := e.do(q)
	if diff := cmp.Diff(want, errOf(status, body)); diff != "" {
		e.t.Errorf("%s %s error mismatch (-want +got):\n%s", q.method, q.path, diff)
	}
}

// run runs f as the subtest name of t, with e reporting to the subtest while
// it runs.
func (e *env) run(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		parent := e.t
		e.t = t
		defer func() { e.t = parent }()
		f(t)
	})
}

// failsIn sends q in the subtest name of t and compares its error with want.
func (e *env) failsIn(t *testing.T, name string, q req, want apiErr) {
	t.Helper()
	e.run(t, name, func(*testing.T) { e.fails(q, want) })
}

// failStorage sends each q with the store failing its next transaction and
// wants storage_error.
func (e *env) failStorage(qs ...req) {
	e.t.Helper()
	for _, q := range qs {
		e.st.FailNext(errors.New("disk on fire"))
		e.fails(q, wantErr(errcat.StorageError, ""))
	}
}

// remember stores an entry through POST /v1/memory; scope "" sends none.
func (e *env) remember(tenant, user, key, value, vis, scope string) {
	e.t.Helper()
	b := map[string]any{"key": key, "value": value, "visibility": vis}
	if scope != "" {
		b["scope_id"] = scope
	}
	e.ok(req{method: "POST", path: "/v1/memory", tenant: tenant, user: user, body: b})
}

// prompt stores a version of level through PUT /v1/system-prompts/{level};
// scope "" sends none.
func (e *env) prompt(tenant, user, level, content, scope string) {
	e.t.Helper()
	b := map[string]any{"content": content}
	if scope != "" {
		b["scope_id"] = scope
	}
	e.ok(req{method: "PUT", path: "/v1/system-prompts/" + level, tenant: tenant, user: user, body: b})
}

// list returns keysValues of GET /v1/memory?query.
func (e *env) list(tenant, user, query string) []string {
	e.t.Helper()
	path := "/v1/memory"
	if query != "" {
		path += "?" + query
	}
	return keysValues(e.ok(req{method: "GET", path: path, tenant: tenant, user: user}))
}

// tool executes a tool through POST /v1/tools/execute.
func (e *env) tool(tenant, user, name string, args map[string]any) (int, any) {
	e.t.Helper()
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

func diffT(t *testing.T, what string, want, got any) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, diff)
	}
}
