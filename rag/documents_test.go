package rag_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/rag"
)

func TestWriteValidation(t *testing.T) {
	long := strings.Repeat("x", rag.MaxIDBytes+1)
	tooMany := make([]map[string]any, rag.MaxDocumentsPerRequest+1)
	for i := range tooMany {
		tooMany[i] = doc(fmt.Sprintf("d%d", i), "t", nil)
	}
	tests := []struct {
		name  string
		index string
		body  any
		want  testkit.Error
	}{
		{"ok", "kb", docs(doc("a", "text", map[string]any{"src": "x"})), testkit.Error{}},
		{"ok id charset", "Kb_1.v2:x-y", docs(doc("A-1_b.c:d", "text", nil)), testkit.Error{}},
		{"ok null metadata", "kb", docs(map[string]any{"doc_id": "a", "text": "t", "metadata": nil}), testkit.Error{}},
		{"ok max id length", strings.Repeat("i", rag.MaxIDBytes), docs(doc(strings.Repeat("d", rag.MaxIDBytes), "t", nil)), testkit.Error{}},
		{"ok max documents", "kb", map[string]any{"documents": tooMany[:rag.MaxDocumentsPerRequest]}, testkit.Error{}},

		{"index id too long", long, docs(doc("a", "t", nil)), testkit.WantError(errcat.InvalidField, "id")},
		{"index id bad char", "k%20b", docs(doc("a", "t", nil)), testkit.WantError(errcat.InvalidField, "id")},
		{"index id starts with dot", ".kb", docs(doc("a", "t", nil)), testkit.WantError(errcat.InvalidField, "id")},
		{"not json", "kb", "{", testkit.WantError(errcat.InvalidJSON, "")},
		{"empty body", "kb", "", testkit.WantError(errcat.InvalidJSON, "")},
		{"body an array", "kb", "[]", testkit.WantError(errcat.InvalidJSON, "")},
		{"unknown field", "kb", map[string]any{"documents": []any{doc("a", "t", nil)}, "mode": "x"}, testkit.WantError(errcat.InvalidField, "body.mode")},
		{"user_id in body", "kb", map[string]any{"documents": []any{doc("a", "t", nil)}, "user_id": "u"}, testkit.WantError(errcat.InvalidField, "body.user_id")},
		{"no documents", "kb", map[string]any{}, testkit.WantError(errcat.MissingField, "body.documents")},
		{"null documents", "kb", map[string]any{"documents": nil}, testkit.WantError(errcat.MissingField, "body.documents")},
		{"documents an object", "kb", map[string]any{"documents": map[string]any{}}, testkit.WantError(errcat.InvalidField, "body.documents")},
		{"documents a string", "kb", map[string]any{"documents": "a"}, testkit.WantError(errcat.InvalidField, "body.documents")},
		{"empty documents", "kb", map[string]any{"documents": []any{}}, testkit.WantError(errcat.InvalidField, "body.documents")},
		{"too many documents", "kb", map[string]any{"documents": tooMany}, testkit.WantError(errcat.InvalidField, "body.documents")},
		{"entry not an object", "kb", map[string]any{"documents": []any{doc("a", "t", nil), "b"}}, testkit.WantError(errcat.InvalidField, "body.documents[1]")},
		{"entry null", "kb", map[string]any{"documents": []any{nil}}, testkit.WantError(errcat.InvalidField, "body.documents[0]")},
		{"entry unknown field", "kb", docs(doc("a", "t", nil), map[string]any{"doc_id": "b", "text": "t", "title": "x"}), testkit.WantError(errcat.InvalidField, "body.documents[1].title")},
		{"entry user_id", "kb", docs(map[string]any{"doc_id": "b", "text": "t", "user_id": "x"}), testkit.WantError(errcat.InvalidField, "body.documents[0].user_id")},
		{"no doc_id", "kb", docs(doc("a", "t", nil), map[string]any{"text": "t"}), testkit.WantError(errcat.MissingField, "body.documents[1].doc_id")},
		{"null doc_id", "kb", docs(map[string]any{"doc_id": nil, "text": "t"}), testkit.WantError(errcat.MissingField, "body.documents[0].doc_id")},
		{"doc_id a number", "kb", docs(map[string]any{"doc_id": 7, "text": "t"}), testkit.WantError(errcat.InvalidField, "body.documents[0].doc_id")},
		{"empty doc_id", "kb", docs(doc("", "t", nil)), testkit.WantError(errcat.InvalidField, "body.documents[0].doc_id")},
		{"doc_id too long", "kb", docs(doc(long, "t", nil)), testkit.WantError(errcat.InvalidField, "body.documents[0].doc_id")},
		{"doc_id with slash", "kb", docs(doc("a/b", "t", nil)), testkit.WantError(errcat.InvalidField, "body.documents[0].doc_id")},
		{"doc_id with space", "kb", docs(doc("a b", "t", nil)), testkit.WantError(errcat.InvalidField, "body.documents[0].doc_id")},
		{"doc_id non-ASCII", "kb", docs(doc("café", "t", nil)), testkit.WantError(errcat.InvalidField, "body.documents[0].doc_id")},
		{"doc_id dot dot", "kb", docs(doc("..", "t", nil)), testkit.WantError(errcat.InvalidField, "body.documents[0].doc_id")},
		{"no text", "kb", docs(map[string]any{"doc_id": "a"}), testkit.WantError(errcat.MissingField, "body.documents[0].text")},
		{"null text", "kb", docs(map[string]any{"doc_id": "a", "text": nil}), testkit.WantError(errcat.MissingField, "body.documents[0].text")},
		{"text an object", "kb", docs(map[string]any{"doc_id": "a", "text": map[string]any{}}), testkit.WantError(errcat.InvalidField, "body.documents[0].text")},
		{"empty text", "kb", docs(doc("a", "", nil)), testkit.WantError(errcat.InvalidField, "body.documents[0].text")},
		{"blank text", "kb", docs(doc("a", " \n\t ", nil)), testkit.WantError(errcat.InvalidField, "body.documents[0].text")},
		{"text too long", "kb", docs(doc("a", strings.Repeat("x", rag.MaxTextBytes+1), nil)), testkit.WantError(errcat.InvalidField, "body.documents[0].text")},
		{"metadata an array", "kb", docs(map[string]any{"doc_id": "a", "text": "t", "metadata": []any{1}}), testkit.WantError(errcat.InvalidField, "body.documents[0].metadata")},
		{"metadata a string", "kb", docs(map[string]any{"doc_id": "a", "text": "t", "metadata": "x"}), testkit.WantError(errcat.InvalidField, "body.documents[0].metadata")},
		{"metadata too large", "kb", docs(doc("a", "t", map[string]any{"x": strings.Repeat("m", rag.MaxMetadataBytes)})), testkit.WantError(errcat.InvalidField, "body.documents[0].metadata")},
		{"duplicate doc_id", "kb", docs(doc("a", "t", nil), doc("b", "t", nil), doc("a", "u", nil)), testkit.WantError(errcat.InvalidField, "body.documents[2].doc_id")},
		{"first error wins", "kb", docs(map[string]any{"text": "t"}, doc("", "t", nil)), testkit.WantError(errcat.MissingField, "body.documents[0].doc_id")},
	}
	for _, mode := range []string{"replace", "append"} {
		for _, tc := range tests {
			e := newEnv(t)
			e.Run(t, mode+"/"+tc.name, func(t *testing.T) {
				q := testkit.Call{Method: "POST", Target: "/a1/rag/indices/" + tc.index + "/documents", Body: tc.body}
				if mode == "append" {
					q.Target += "/append"
				}
				e.Fails(q, tc.want)
				if tc.want != (testkit.Error{}) {
					// A rejected write creates nothing.
					testkit.Diff(t, "indices", []any{}, testkit.Data(e.OK(getReq("", "/a1/rag/indices"))))
				}
			})
		}
	}
}

func TestWriteAnswerAndDocuments(t *testing.T) {
	e := newEnv(t)
	at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }
	got := e.replace("", "kb", doc("b", "Beta text.", map[string]any{"lang": "en", "n": 2}), doc("a", "Alpha", nil))
	testkit.Diff(t, "replace answer", map[string]any{
		"index": map[string]any{"id": "kb", "document_count": 2.0, "chunk_count": 2.0, "created_at": at(0), "updated_at": at(0)},
		"added": 2.0, "replaced": 0.0, "removed": 0.0,
	}, got)

	e.clk.Advance(time.Minute)
	got = e.appendDocs("", "kb", doc("c", "Gamma", nil), doc("a", "Alpha two", map[string]any{"v": 2}))
	testkit.Diff(t, "append answer", map[string]any{
		"index": map[string]any{"id": "kb", "document_count": 3.0, "chunk_count": 3.0, "created_at": at(0), "updated_at": at(time.Minute)},
		"added": 1.0, "replaced": 1.0, "removed": 0.0,
	}, got)

	testkit.Diff(t, "documents", map[string]any{"object": "list", "data": []any{
		map[string]any{"doc_id": "a", "metadata": map[string]any{"v": 2.0}, "size": 9.0, "chunk_count": 1.0, "created_at": at(0), "updated_at": at(time.Minute)},
		map[string]any{"doc_id": "b", "metadata": map[string]any{"lang": "en", "n": 2.0}, "size": 10.0, "chunk_count": 1.0, "created_at": at(0), "updated_at": at(0)},
		map[string]any{"doc_id": "c", "size": 5.0, "chunk_count": 1.0, "created_at": at(time.Minute), "updated_at": at(time.Minute)},
	}}, e.OK(getReq("", "/a1/rag/indices/kb/documents")))

	testkit.Diff(t, "document", map[string]any{"doc_id": "b", "text": "Beta text.", "metadata": map[string]any{"lang": "en", "n": 2.0},
		"size": 10.0, "chunk_count": 1.0, "created_at": at(0), "updated_at": at(0)},
		e.OK(getReq("", "/a1/rag/indices/kb/documents/b")))

	e.clk.Advance(time.Minute)
	got = e.replace("", "kb", doc("c", "Gamma again", nil), doc("d", "Delta", nil))
	testkit.Diff(t, "second replace answer", map[string]any{
		"index": map[string]any{"id": "kb", "document_count": 2.0, "chunk_count": 2.0, "created_at": at(0), "updated_at": at(2 * time.Minute)},
		"added": 1.0, "replaced": 1.0, "removed": 2.0,
	}, got)
	testkit.Diff(t, "documents after replace", []string{"c", "d"}, e.docIDs("", "kb"))
	testkit.Diff(t, "c keeps created_at", at(time.Minute), testkit.Field(e.OK(getReq("", "/a1/rag/indices/kb/documents/c")), "created_at"))
	e.Fails(getReq("", "/a1/rag/indices/kb/documents/a"), testkit.WantError(errcat.DocumentNotFound, "doc_id"))
}

func TestReplaceVersusAppend(t *testing.T) {
	e := newEnv(t)
	steps := []struct {
		name       string
		q          testkit.Call
		wantDocs   []string
		wantSearch []string // hits for "apple banana cherry date"
	}{
		{"append creates the index", appendReq("", "kb", doc("x", "apple", nil)), []string{"x"}, []string{"x#0"}},
		{"replace drops unnamed documents", replaceReq("", "kb", doc("a", "banana", nil), doc("b", "cherry", nil)), []string{"a", "b"}, []string{"a#0", "b#0"}},
		{"append adds", appendReq("", "kb", doc("c", "date", nil)), []string{"a", "b", "c"}, []string{"a#0", "b#0", "c#0"}},
		{"append replaces by doc_id", appendReq("", "kb", doc("a", "nothing relevant", nil)), []string{"a", "b", "c"}, []string{"b#0", "c#0"}},
		{"replace with one document", replaceReq("", "kb", doc("c", "apple", nil)), []string{"c"}, []string{"c#0"}},
		{"replace creates another index", replaceReq("", "kb2", doc("z", "zebra", nil)), []string{"c"}, []string{"c#0"}},
	}
	for _, s := range steps {
		e.Run(t, s.name, func(t *testing.T) {
			e.OK(s.q)
			testkit.Diff(t, "documents", s.wantDocs, e.docIDs("", "kb"))
			testkit.Diff(t, "search", s.wantSearch, e.search("", "kb", "q=apple+banana+cherry+date&k=50"))
		})
	}
	var ids []string
	for _, ix := range testkit.Data(e.OK(getReq("", "/a1/rag/indices"))) {
		ids = append(ids, fmt.Sprintf("%s/%v", testkit.Field(ix, "id"), testkit.Field(ix, "document_count")))
	}
	testkit.Diff(t, "indices", []string{"kb/1", "kb2/1"}, ids)
}

func TestListIndices(t *testing.T) {
	e := newEnv(t)
	testkit.Diff(t, "empty", map[string]any{"object": "list", "data": []any{}}, e.OK(getReq("", "/a1/rag/indices")))
	e.replace("", "zeta", doc("a", "one two", nil), doc("b", "three", nil))
	e.clk.Advance(time.Second)
	e.appendDocs("", "alpha", doc("a", strings.Repeat("word ", 150), nil)) // 750 characters: 2 chunks
	e.replace("", "alpha1", doc("a", "x", nil))
	at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }
	testkit.Diff(t, "list", map[string]any{"object": "list", "data": []any{
		map[string]any{"id": "alpha", "document_count": 1.0, "chunk_count": 2.0, "created_at": at(time.Second), "updated_at": at(time.Second)},
		map[string]any{"id": "alpha1", "document_count": 1.0, "chunk_count": 1.0, "created_at": at(time.Second), "updated_at": at(time.Second)},
		map[string]any{"id": "zeta", "document_count": 2.0, "chunk_count": 2.0, "created_at": at(0), "updated_at": at(0)},
	}}, e.OK(getReq("", "/a1/rag/indices")))
}

func TestGetAndDeleteDocument(t *testing.T) {
	e := newEnv(t)
	e.replace("", "kb", doc("a", "alpha words", nil), doc("b", "beta words", nil))
	tests := []struct {
		name string
		q    testkit.Call
		want testkit.Error
	}{
		{"get unknown index", getReq("", "/a1/rag/indices/nope/documents/a"), testkit.WantError(errcat.IndexNotFound, "id")},
		{"get invalid index id", getReq("", "/a1/rag/indices/%2Ekb/documents/a"), testkit.WantError(errcat.IndexNotFound, "id")},
		{"get unknown doc", getReq("", "/a1/rag/indices/kb/documents/zz"), testkit.WantError(errcat.DocumentNotFound, "doc_id")},
		{"get invalid doc id", getReq("", "/a1/rag/indices/kb/documents/a%20b"), testkit.WantError(errcat.DocumentNotFound, "doc_id")},
		{"list unknown index", getReq("", "/a1/rag/indices/nope/documents"), testkit.WantError(errcat.IndexNotFound, "id")},
		{"delete unknown index", testkit.Call{Method: "DELETE", Target: "/a1/rag/indices/nope/documents/a"}, testkit.WantError(errcat.IndexNotFound, "id")},
		{"delete unknown doc", testkit.Call{Method: "DELETE", Target: "/a1/rag/indices/kb/documents/zz"}, testkit.WantError(errcat.DocumentNotFound, "doc_id")},
		{"delete invalid doc id", testkit.Call{Method: "DELETE", Target: "/a1/rag/indices/kb/documents/-x"}, testkit.WantError(errcat.DocumentNotFound, "doc_id")},
	}
	for _, tc := range tests {
		e.Run(t, tc.name, func(t *testing.T) { e.Fails(tc.q, tc.want) })
	}

	e.clk.Advance(time.Minute)
	testkit.Diff(t, "delete a", map[string]any{"deleted": true, "id": "kb", "doc_id": "a"},
		e.OK(testkit.Call{Method: "DELETE", Target: "/a1/rag/indices/kb/documents/a"}))
	e.Fails(getReq("", "/a1/rag/indices/kb/documents/a"), testkit.WantError(errcat.DocumentNotFound, "doc_id"))
	e.Fails(testkit.Call{Method: "DELETE", Target: "/a1/rag/indices/kb/documents/a"}, testkit.WantError(errcat.DocumentNotFound, "doc_id"))
	testkit.Diff(t, "documents", []string{"b"}, e.docIDs("", "kb"))
	testkit.Diff(t, "search after delete", []string{"b#0"}, e.search("", "kb", "q=alpha+words"))

	// Deleting the last document leaves the index, empty.
	e.OK(testkit.Call{Method: "DELETE", Target: "/a1/rag/indices/kb/documents/b"})
	testkit.Diff(t, "empty index", map[string]any{"object": "list", "data": []any{
		map[string]any{"id": "kb", "document_count": 0.0, "chunk_count": 0.0,
			"created_at": t0.Format(time.RFC3339Nano), "updated_at": t0.Add(time.Minute).Format(time.RFC3339Nano)},
	}}, e.OK(getReq("", "/a1/rag/indices")))
	testkit.Diff(t, "documents of empty index", []string{}, e.docIDs("", "kb"))
	testkit.Diff(t, "search of empty index", []string{}, e.search("", "kb", "q=words"))
	// And it can be filled again.
	e.appendDocs("", "kb", doc("c", "gamma words", nil))
	testkit.Diff(t, "search after refill", []string{"c#0"}, e.search("", "kb", "q=words"))
}

func TestTenantIsolation(t *testing.T) {
	e := newEnv(t)
	e.replace("acme", "kb", doc("a", "secret plans of acme", map[string]any{"owner": "acme"}))
	other := "globex"
	tests := []struct {
		name string
		q    testkit.Call
		want testkit.Error
	}{
		{"list documents", getReq(other, "/a1/rag/indices/kb/documents"), testkit.WantError(errcat.IndexNotFound, "id")},
		{"get document", getReq(other, "/a1/rag/indices/kb/documents/a"), testkit.WantError(errcat.IndexNotFound, "id")},
		{"delete document", testkit.Call{Method: "DELETE", Target: "/a1/rag/indices/kb/documents/a", Tenant: other}, testkit.WantError(errcat.IndexNotFound, "id")},
		{"search", getReq(other, "/a1/rag/indices/kb/search?q=secret"), testkit.WantError(errcat.IndexNotFound, "id")},
	}
	for _, tc := range tests {
		e.Run(t, tc.name, func(t *testing.T) { e.Fails(tc.q, tc.want) })
	}
	status, body := e.tool(other, map[string]any{"index": "kb", "query": "secret"})
	testkit.Diff(t, "tool", testkit.WantError(errcat.IndexNotFound, "id"), testkit.ErrorOf(t, status, body))
	testkit.Diff(t, "other's indices", []any{}, testkit.Data(e.OK(getReq(other, "/a1/rag/indices"))))

	// The same id in another tenant is another index.
	e.replace(other, "kb", doc("a", "globex public notes", nil), doc("b", "more notes", nil))
	testkit.Diff(t, "globex search", []string{}, e.search(other, "kb", "q=secret"))
	testkit.Diff(t, "acme search", []string{"a#0"}, e.search("acme", "kb", "q=secret"))
	testkit.Diff(t, "acme documents", []string{"a"}, e.docIDs("acme", "kb"))
	testkit.Diff(t, "globex documents", []string{"a", "b"}, e.docIDs(other, "kb"))
	testkit.Diff(t, "acme text", "secret plans of acme", testkit.Field(e.OK(getReq("acme", "/a1/rag/indices/kb/documents/a")), "text"))
	// Deleting in one tenant leaves the other alone.
	e.OK(testkit.Call{Method: "DELETE", Target: "/a1/rag/indices/kb/documents/a", Tenant: other})
	testkit.Diff(t, "acme documents after globex delete", []string{"a"}, e.docIDs("acme", "kb"))
	// A tenant id that is a prefix of another does not see its indices.
	e.replace("acm", "x", doc("a", "t", nil))
	testkit.Diff(t, "acme indices", 1, len(testkit.Data(e.OK(getReq("acme", "/a1/rag/indices")))))
	testkit.Diff(t, "acm indices", 1, len(testkit.Data(e.OK(getReq("acm", "/a1/rag/indices")))))
}

func TestMaxDocumentsPerIndex(t *testing.T) {
	e := newEnv(t)
	batch := func(from, n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = doc(fmt.Sprintf("d%05d", from+i), "w", nil)
		}
		return out
	}
	for i := 0; i < rag.MaxDocumentsPerIndex; i += rag.MaxDocumentsPerRequest {
		e.appendDocs("", "kb", batch(i, rag.MaxDocumentsPerRequest)...)
	}
	// Replacing existing documents is fine at the limit; one more is not.
	e.appendDocs("", "kb", batch(0, 10)...)
	e.Fails(appendReq("", "kb", batch(rag.MaxDocumentsPerIndex-1, 2)...), testkit.WantError(errcat.InvalidField, "body.documents"))
	ix := testkit.Data(e.OK(getReq("", "/a1/rag/indices")))[0]
	testkit.Diff(t, "document_count", float64(rag.MaxDocumentsPerIndex), testkit.Field(ix, "document_count"))
	// A full replace starts over.
	got := e.replace("", "kb", doc("a", "w", nil))
	testkit.Diff(t, "removed", float64(rag.MaxDocumentsPerIndex), testkit.Field(got, "removed"))
	testkit.Diff(t, "documents", []string{"a"}, e.docIDs("", "kb"))
}

func TestConcurrentAppends(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := appendReq("", "kb", doc(fmt.Sprintf("d%02d", i), "shared words here", nil)).Request().Build()
			if err != nil {
				errs <- err
				return
			}
			w := httptest.NewRecorder()
			e.H.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				errs <- fmt.Errorf("append %d: %d %s", i, w.Code, w.Body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ix := testkit.Data(e.OK(getReq("", "/a1/rag/indices")))[0]
	testkit.Diff(t, "document_count", 20.0, testkit.Field(ix, "document_count"))
	testkit.Diff(t, "hits", 20, len(e.search("", "kb", "q=shared&k=50")))
}

func TestServiceOverSameStoreSeesData(t *testing.T) {
	e := newEnv(t)
	e.replace("", "kb", doc("a", "persistent text", nil))
	e2 := newEnvOver(t, e.st, e.st, e.clk)
	testkit.Diff(t, "search", []string{"a#0"}, e2.search("", "kb", "q=persistent"))
}
