package rag_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

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
	testkit.Client // T is the test or subtest; H the routes; Deny the calls' denied scopes
	st             *memstore.Store
	clk            *clock.Fake
	svc            *rag.Service
	reg            *tools.Registry
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st := testkit.MemStore(t)
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

// doc is a document of a write body; metadata nil sends none.
func doc(id, text string, metadata map[string]any) map[string]any {
	d := map[string]any{"doc_id": id, "text": text}
	if metadata != nil {
		d["metadata"] = metadata
	}
	return d
}

func docs(ds ...map[string]any) map[string]any { return map[string]any{"documents": ds} }

func replaceReq(tenant, index string, ds ...map[string]any) testkit.Call {
	return testkit.Call{Method: "POST", Target: "/a1/rag/indices/" + index + "/documents", Tenant: tenant, Body: docs(ds...)}
}

func appendReq(tenant, index string, ds ...map[string]any) testkit.Call {
	return testkit.Call{Method: "POST", Target: "/a1/rag/indices/" + index + "/documents/append", Tenant: tenant, Body: docs(ds...)}
}

func getReq(tenant, path string) testkit.Call {
	return testkit.Call{Method: "GET", Target: path, Tenant: tenant}
}

// replace writes ds as the whole index and returns the answer.
func (e *env) replace(tenant, index string, ds ...map[string]any) any {
	e.T.Helper()
	return e.OK(replaceReq(tenant, index, ds...))
}

// appendDocs appends ds to the index and returns the answer.
func (e *env) appendDocs(tenant, index string, ds ...map[string]any) any {
	e.T.Helper()
	return e.OK(appendReq(tenant, index, ds...))
}

// docIDs returns the doc_ids GET .../documents lists.
func (e *env) docIDs(tenant, index string) []string {
	e.T.Helper()
	out := []string{}
	for _, d := range testkit.Data(e.OK(getReq(tenant, "/a1/rag/indices/"+index+"/documents"))) {
		out = append(out, testkit.Field(d, "doc_id").(string))
	}
	return out
}

// search returns the hits of a search as "doc_id#chunk_index".
func (e *env) search(tenant, index, query string) []string {
	e.T.Helper()
	return hitIDs(e.OK(getReq(tenant, "/a1/rag/indices/"+index+"/search?"+query)))
}

func hitIDs(list any) []string {
	out := []string{}
	for _, h := range testkit.Data(list) {
		out = append(out, fmt.Sprintf("%s#%v", testkit.Field(h, "doc_id"), testkit.Field(h, "chunk_index")))
	}
	return out
}

// tool executes rag_search through POST /v1/tools/execute.
func (e *env) tool(tenant string, args any) (int, any) {
	e.T.Helper()
	return e.JSON(testkit.Call{Method: "POST", Target: "/v1/tools/execute", Tenant: tenant,
		Body: map[string]any{"name": "rag_search", "arguments": args}})
}

// snapshot is what the API shows of an index: the list of indices, the
// index's documents with their texts, and a search, so that tests can check
// that a failed write changed nothing.
func (e *env) snapshot(tenant, index, query string) map[string]any {
	e.T.Helper()
	out := map[string]any{"indices": e.OK(getReq(tenant, "/a1/rag/indices"))}
	status, docs := e.JSON(getReq(tenant, "/a1/rag/indices/"+index+"/documents"))
	out["documents"] = docs
	if status == http.StatusOK {
		var texts []any
		for _, d := range testkit.Data(docs) {
			texts = append(texts, e.OK(getReq(tenant, "/a1/rag/indices/"+index+"/documents/"+testkit.Field(d, "doc_id").(string))))
		}
		out["texts"] = texts
		out["search"] = e.OK(getReq(tenant, "/a1/rag/indices/"+index+"/search?k=50&q="+query))
	}
	return out
}
