package rag_test

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/rag"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// corpus is a small index whose BM25 scores are worked out by hand below.
// Every document is one chunk. Term counts: d1 6, d2 3, d3 3, d4 2, so N = 4
// chunks and avgdl = 14/4 = 3.5.
func corpus(e *env, tenant, index string) {
	e.T.Helper()
	e.replace(tenant, index,
		doc("d1", "The cat sat on the mat.", map[string]any{"n": 1}),
		doc("d2", "the dog sat", nil),
		doc("d3", "Cat, cat; CAT!", nil),
		doc("d4", "a bird", nil),
	)
}

// bm25 is one term's contribution, written out for the hand computations:
// idf = ln(1 + (N - df + 0.5)/(df + 0.5)), tf*(k1+1)/(tf + k1*(1 - b + b*dl/avgdl)).
func bm25(tf, dl, df float64) float64 {
	const n, avgdl, k1, b = 4, 3.5, 1.2, 0.75
	return math.Log(1+(n-df+0.5)/(df+0.5)) * tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avgdl))
}

type hit struct {
	Doc   string
	Score float64
}

func hitsOf(list any) []hit {
	out := []hit{}
	for _, h := range testkit.Data(list) {
		out = append(out, hit{testkit.Field(h, "doc_id").(string), testkit.Field(h, "score").(float64)})
	}
	return out
}

func TestBM25Ranking(t *testing.T) {
	e := newEnv(t)
	corpus(e, "", "kb")
	approx := cmpopts.EquateApprox(0, 1e-9)
	tests := []struct {
		q    string
		want []hit
	}{
		// cat: df 2, idf ln(2) = 0.693147.
		// d3: tf 3, dl 3: 3*2.2/(3+1.2*(0.25+0.75*3/3.5)) = 1.621053 -> 1.123628
		// d1: tf 1, dl 6: 2.2/(1+1.2*(0.25+0.75*6/3.5)) = 0.773869 -> 0.536405
		{"cat", []hit{{"d3", 1.1236280611}, {"d1", 0.5364053558}}},
		// Case and punctuation do not matter; repeated query terms count once.
		{"CAT? cat", []hit{{"d3", 1.1236280611}, {"d1", 0.5364053558}}},
		// the: df 2; d1 tf 2 dl 6 -> 0.793641, d2 tf 1 dl 3 -> 0.736170.
		// d1 = 0.536405 + 0.793641 = 1.330046 beats d3's cat alone.
		{"the cat", []hit{{"d1", 1.3300459938}, {"d3", 1.1236280611}, {"d2", 0.7361701090}}},
		// bird: df 1, idf ln(1 + 3.5/1.5) = 1.203973; d4 tf 1 dl 2 -> 1.459936.
		// A rarer term in a shorter chunk wins over sat (df 2).
		{"sat bird", []hit{{"d4", 1.4599355265}, {"d2", 0.7361701090}, {"d1", 0.5364053558}}},
		{"unicorn", []hit{}},
		{"!!! ???", []hit{}},
	}
	for _, tc := range tests {
		e.Run(t, tc.q, func(t *testing.T) {
			got := hitsOf(e.OK(getReq("", "/a1/rag/indices/kb/search?q="+url.QueryEscape(tc.q))))
			testkit.Diff(t, "hits", tc.want, got, approx)
		})
	}
	// The hand-written values are the formula's.
	testkit.Diff(t, "formula", []float64{1.1236280611, 0.5364053558, 1.3300459938, 0.7361701090, 1.4599355265},
		[]float64{bm25(3, 3, 2), bm25(1, 6, 2), bm25(1, 6, 2) + bm25(2, 6, 2), bm25(1, 3, 2), bm25(1, 2, 1)}, approx)

	// A hit carries the chunk and the document's metadata.
	got := e.OK(getReq("", "/a1/rag/indices/kb/search?q=mat&k=1"))
	testkit.Diff(t, "hit", map[string]any{"object": "list", "data": []any{map[string]any{
		"doc_id": "d1", "chunk_index": 0.0, "chunk": "The cat sat on the mat.", "score": bm25(1, 6, 1), "metadata": map[string]any{"n": 1.0},
	}}}, got, approx)
}

func TestSearchValidation(t *testing.T) {
	e := newEnv(t)
	corpus(e, "", "kb")
	tests := []struct {
		name, path string
		want       testkit.Error
		wantHits   int
	}{
		{"ok default k", "/a1/rag/indices/kb/search?q=the", testkit.Error{}, 2},
		{"ok k", "/a1/rag/indices/kb/search?q=the&k=1", testkit.Error{}, 1},
		{"ok k max", "/a1/rag/indices/kb/search?q=the&k=50", testkit.Error{}, 2},
		{"no q", "/a1/rag/indices/kb/search", testkit.WantError(errcat.MissingField, "query.q"), 0},
		{"no q but k", "/a1/rag/indices/kb/search?k=2", testkit.WantError(errcat.MissingField, "query.q"), 0},
		{"empty q", "/a1/rag/indices/kb/search?q=", testkit.WantError(errcat.InvalidField, "query.q"), 0},
		{"blank q", "/a1/rag/indices/kb/search?q=+++", testkit.WantError(errcat.InvalidField, "query.q"), 0},
		{"q too long", "/a1/rag/indices/kb/search?q=" + strings.Repeat("a", rag.MaxQueryBytes+1), testkit.WantError(errcat.InvalidField, "query.q"), 0},
		{"k zero", "/a1/rag/indices/kb/search?q=cat&k=0", testkit.WantError(errcat.InvalidField, "query.k"), 0},
		{"k negative", "/a1/rag/indices/kb/search?q=cat&k=-1", testkit.WantError(errcat.InvalidField, "query.k"), 0},
		{"k over max", "/a1/rag/indices/kb/search?q=cat&k=51", testkit.WantError(errcat.InvalidField, "query.k"), 0},
		{"k not a number", "/a1/rag/indices/kb/search?q=cat&k=five", testkit.WantError(errcat.InvalidField, "query.k"), 0},
		{"k fraction", "/a1/rag/indices/kb/search?q=cat&k=2.5", testkit.WantError(errcat.InvalidField, "query.k"), 0},
		{"k empty", "/a1/rag/indices/kb/search?q=cat&k=", testkit.WantError(errcat.InvalidField, "query.k"), 0},
		{"unknown index", "/a1/rag/indices/nope/search?q=cat", testkit.WantError(errcat.IndexNotFound, "id"), 0},
		{"invalid index id", "/a1/rag/indices/-x/search?q=cat", testkit.WantError(errcat.IndexNotFound, "id"), 0},
		{"query checked before index", "/a1/rag/indices/nope/search?q=cat&k=0", testkit.WantError(errcat.InvalidField, "query.k"), 0},
	}
	for _, tc := range tests {
		e.Run(t, tc.name, func(t *testing.T) {
			status, body := e.JSON(getReq("", tc.path))
			testkit.Diff(t, "error", tc.want, testkit.ErrorOf(t, status, body))
			if tc.want == (testkit.Error{}) {
				testkit.Diff(t, "hits", tc.wantHits, len(testkit.Data(body)))
			}
		})
	}
}

func TestSearchKAndTieBreak(t *testing.T) {
	e := newEnv(t)
	// Same text: same score; ordered by doc_id whatever the write order.
	var ds []map[string]any
	for _, id := range []string{"g", "c", "a", "f", "b", "e", "d"} {
		ds = append(ds, doc(id, "same words", nil))
	}
	e.replace("", "kb", ds...)
	testkit.Diff(t, "default k", []string{"a#0", "b#0", "c#0", "d#0", "e#0"}, e.search("", "kb", "q=words"))
	testkit.Diff(t, "k=2", []string{"a#0", "b#0"}, e.search("", "kb", "q=words&k=2"))
	testkit.Diff(t, "k=50", []string{"a#0", "b#0", "c#0", "d#0", "e#0", "f#0", "g#0"}, e.search("", "kb", "q=words&k=50"))

	// Equal chunks of one document: by chunk index.
	para := strings.TrimSpace(strings.Repeat("lorem ipsum ", 25)) // 299 characters
	e.replace("", "kb2", doc("z", para+"\n\n"+para+"\n\n"+para, nil))
	testkit.Diff(t, "chunks", []string{"z#0", "z#1", "z#2"}, e.search("", "kb2", "q=ipsum"))
	list := e.OK(getReq("", "/a1/rag/indices/kb2/search?q=ipsum"))
	for i, h := range testkit.Data(list) {
		testkit.Diff(t, fmt.Sprintf("chunk %d", i), para, testkit.Field(h, "chunk"))
	}
}

// TestSearchStatsAfterChanges checks that the term statistics kept at write
// time follow every change: an index built through replaces, appends and
// deletes ranks exactly like one written at once with the final documents.
func TestSearchStatsAfterChanges(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("alpha beta gamma delta. ", 60) // several chunks
	e.replace("", "messy", doc("old", "alpha alpha alpha zeta", nil), doc("a", "beta", nil))
	e.appendDocs("", "messy", doc("b", long, nil), doc("c", "gamma gamma", nil))
	e.appendDocs("", "messy", doc("a", "alpha beta", map[string]any{"v": 2}), doc("tmp", "delta delta delta", nil))
	e.OK(testkit.Call{Method: "DELETE", Target: "/a1/rag/indices/messy/documents/tmp"})
	e.replace("", "messy", doc("a", "alpha beta", map[string]any{"v": 2}), doc("b", long, nil), doc("c", "gamma gamma", nil), doc("old", "zeta", nil))
	e.appendDocs("", "messy", doc("old", "alpha zeta zeta", nil))

	e.replace("", "clean", doc("a", "alpha beta", map[string]any{"v": 2}), doc("b", long, nil), doc("c", "gamma gamma", nil), doc("old", "alpha zeta zeta", nil))
	for _, q := range []string{"alpha", "beta", "gamma delta", "zeta", "alpha beta gamma delta zeta"} {
		want := e.OK(getReq("", "/a1/rag/indices/clean/search?k=50&q="+url.QueryEscape(q)))
		got := e.OK(getReq("", "/a1/rag/indices/messy/search?k=50&q="+url.QueryEscape(q)))
		testkit.Diff(t, "search "+q, want, got)
	}
	if hits := e.search("", "messy", "q=delta&k=50"); len(hits) == 0 || strings.Contains(strings.Join(hits, ","), "tmp") {
		t.Errorf("delta hits %v: want b's chunks only", hits)
	}
}

func TestSearchFunc(t *testing.T) {
	e := newEnv(t)
	var ds []map[string]any
	for i := range 60 {
		ds = append(ds, doc(fmt.Sprintf("d%02d", i), "needle", nil))
	}
	e.replace("", "kb", ds...)
	ctx := context.Background()
	tests := []struct {
		name     string
		tenant   string
		index, q string
		k        int
		wantN    int
		wantErr  errcat.Code
	}{
		{"default k", "acme", "kb", "needle", 0, rag.DefaultK, ""},
		{"negative k", "acme", "kb", "needle", -3, rag.DefaultK, ""},
		{"k", "acme", "kb", "needle", 7, 7, ""},
		{"k capped", "acme", "kb", "needle", 1000, rag.MaxK, ""},
		{"no term", "acme", "kb", "  ", 5, 0, ""},
		{"unknown index", "acme", "nope", "needle", 5, 0, errcat.IndexNotFound},
		{"other tenant", "globex", "kb", "needle", 5, 0, errcat.IndexNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := e.svc.Search(ctx, tc.tenant, tc.index, tc.q, tc.k)
			if tc.wantErr != "" {
				testkit.Diff(t, "error", tc.wantErr, errcat.CodeOf(err))
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if hits == nil {
				t.Error("hits is nil, want a non-nil slice")
			}
			testkit.Diff(t, "hits", tc.wantN, len(hits))
		})
	}
	hits, err := e.svc.Search(ctx, "acme", "kb", "needle", 2)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Diff(t, "hits", []rag.Hit{
		{DocID: "d00", Chunk: "needle", Score: hits[0].Score},
		{DocID: "d01", Chunk: "needle", Score: hits[0].Score},
	}, hits)
}
