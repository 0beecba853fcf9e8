package rag_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/rag"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/tools"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a rag Service behind the routes the root wires, with a stand-in for
// the root's auth middleware: the tenant comes from the test's request.
type env struct {
	testkit.Client // T is the test or subtest; H the routes
	st             *memstore.Store
	clk            *clock.Fake
	svc            *rag.Service
	reg            *tools.Registry
	// deny lists scopes the next requests' principal is denied.
	deny []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	return newEnvOver(t, st, st, clock.NewFake(t0))
}

// newEnvOver builds a fresh Service over s (st is the memstore under it, for
// failure injection).
func newEnvOver(t *testing.T, st *memstore.Store, s store.Store, clk *clock.Fake) *env {
	t.Helper()
	e := &env{Client: testkit.Client{T: t}, st: st, clk: clk}
	e.svc = rag.New(rag.Config{Store: s, Clock: clk})
	reg, err := tools.NewRegistry(e.svc.Tool())
	if err != nil {
		t.Fatal(err)
	}
	e.reg = reg
	e.H = testkit.Router(t, map[string]http.HandlerFunc{
		// The route list of the report, as the root wires it.
		"GET /a1/rag/indices":                          e.svc.ListIndices,
		"POST /a1/rag/indices/:id/documents":           e.svc.ReplaceDocuments,
		"POST /a1/rag/indices/:id/documents/append":    e.svc.AppendDocuments,
		"GET /a1/rag/indices/:id/documents":            e.svc.ListDocuments,
		"GET /a1/rag/indices/:id/documents/:doc_id":    e.svc.GetDocument,
		"DELETE /a1/rag/indices/:id/documents/:doc_id": e.svc.DeleteDocument,
		"GET /a1/rag/indices/:id/search":               e.svc.SearchIndex,
		"POST /v1/tools/execute":                       reg.Execute,
	})
	return e
}

// req is one request: tenant "" means acme.
type req struct {
	method, path string
	tenant       string
	body         any // string sent verbatim, anything else as JSON
}

// request is q as the root's middleware hands it to a handler: with a
// principal of the tenant that denies the scopes deny.
func request(q req, deny []string) testkit.Request {
	return testkit.Request{Method: q.method, Target: q.path, Body: q.body, Principal: principal(q.tenant, deny)}
}

// principal is a member token of tenant ("" means acme) denied deny.
func principal(tenant string, deny []string) *auth.Principal {
	if tenant == "" {
		tenant = "acme"
	}
	return &auth.Principal{Tenant: &auth.Tenant{ID: tenant}, Role: auth.RoleMember, Deny: deny}
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

// doc is a document of a write body; metadata nil sends none.
func doc(id, text string, metadata map[string]any) map[string]any {
	d := map[string]any{"doc_id": id, "text": text}
	if metadata != nil {
		d["metadata"] = metadata
	}
	return d
}

func docs(ds ...map[string]any) map[string]any { return map[string]any{"documents": ds} }

func replaceReq(tenant, index string, ds ...map[string]any) req {
	return req{method: "POST", path: "/a1/rag/indices/" + index + "/documents", tenant: tenant, body: docs(ds...)}
}

func appendReq(tenant, index string, ds ...map[string]any) req {
	return req{method: "POST", path: "/a1/rag/indices/" + index + "/documents/append", tenant: tenant, body: docs(ds...)}
}

func getReq(tenant, path string) req { return req{method: "GET", path: path, tenant: tenant} }

// replace writes ds as the whole index and returns the answer.
func (e *env) replace(tenant, index string, ds ...map[string]any) any {
	e.T.Helper()
	return e.ok(replaceReq(tenant, index, ds...))
}

// appendDocs appends ds to the index and returns the answer.
func (e *env) appendDocs(tenant, index string, ds ...map[string]any) any {
	e.T.Helper()
	return e.ok(appendReq(tenant, index, ds...))
}

// docIDs returns the doc_ids GET .../documents lists.
func (e *env) docIDs(tenant, index string) []string {
	e.T.Helper()
	out := []string{}
	for _, d := range data(e.ok(getReq(tenant, "/a1/rag/indices/"+index+"/documents"))) {
		out = append(out, field(d, "doc_id").(string))
	}
	return out
}

// search returns the hits of a search as "doc_id#chunk_index".
func (e *env) search(tenant, index, query string) []string {
	e.T.Helper()
	return hitIDs(e.ok(getReq(tenant, "/a1/rag/indices/"+index+"/search?"+query)))
}

func hitIDs(list any) []string {
	out := []string{}
	for _, h := range data(list) {
		out = append(out, fmt.Sprintf("%s#%v", field(h, "doc_id"), field(h, "chunk_index")))
	}
	return out
}

// tool executes rag_search through POST /v1/tools/execute.
func (e *env) tool(tenant string, args any) (int, any) {
	e.T.Helper()
	return e.do(req{method: "POST", path: "/v1/tools/execute", tenant: tenant,
		body: map[string]any{"name": "rag_search", "arguments": args}})
}

// field returns m[key] of a JSON object.
func field(v any, key string) any {
	m, _ := v.(map[string]any)
	return m[key]
}

// data returns the data array of a list answer.
func data(list any) []any {
	d, _ := field(list, "data").([]any)
	return d
}

// snapshot is what the API shows of an index: the list of indices, the
// index's documents with their texts, and a search, so that tests can check
// that a failed write changed nothing.
func (e *env) snapshot(tenant, index, query string) map[string]any {
	e.T.Helper()
	out := map[string]any{"indices": e.ok(getReq(tenant, "/a1/rag/indices"))}
	status, docs := e.do(getReq(tenant, "/a1/rag/indices/"+index+"/documents"))
	out["documents"] = docs
	if status == http.StatusOK {
		var texts []any
		for _, d := range data(docs) {
			texts = append(texts, e.ok(getReq(tenant, "/a1/rag/indices/"+index+"/documents/"+field(d, "doc_id").(string))))
		}
		out["texts"] = texts
		out["search"] = e.ok(getReq(tenant, "/a1/rag/indices/"+index+"/search?k=50&q="+query))
	}
	return out
}
