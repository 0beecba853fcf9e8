package rag_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/rag"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/julienschmidt/httprouter"
)

// The root wires the handlers into its route table; agents call Search.
func ExampleService_Search() {
	svc := rag.New(rag.Config{Store: memstore.New()})
	router := httprouter.New()
	router.HandlerFunc("POST", "/a1/rag/indices/:id/documents", svc.ReplaceDocuments)

	body := `{"documents":[
		{"doc_id":"returns","text":"Items can be returned within 30 days."},
		{"doc_id":"shipping","text":"We ship within 2 days. Returned items ship free."}]}`
	r := httptest.NewRequest("POST", "/a1/rag/indices/faq/documents", strings.NewReader(body))
	r = r.WithContext(auth.NewContext(r.Context(), &auth.Principal{Tenant: &auth.Tenant{ID: "acme"}}))
	w := httptest.NewRecorder()
	router.ServeHTTP(w, r)
	fmt.Println(w.Code)

	hits, err := svc.Search(context.Background(), "acme", "faq", "returned within 30 days", 5)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range hits {
		fmt.Printf("%s %.3f %s\n", h.DocID, h.Score, h.Chunk)
	}
	// Output:
	// 200
	// returns 1.307 Items can be returned within 30 days.
	// shipping 0.520 We ship within 2 days. Returned items ship free.
}
