package gateway_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// Mount the gateway under a prefix of an existing service.
func Example() {
	model := upstreamtest.Start(upstreamtest.Config{}) // stands in for a real backend
	defer model.Close()

	tokens := auth.MustStatic([]*auth.Tenant{{ID: "acme"}},
		map[string]auth.StaticToken{"secret": {Tenant: "acme", Role: auth.RoleMember}})
	g, err := gateway.New(
		gateway.WithTokenCatalog(tokens),
		gateway.WithStore(memstore.New()), // default: bbolt in ./data
		gateway.WithBackends(upstream.Backends{LocalURL: model.URL}),
		gateway.WithLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		panic(err)
	}
	defer g.Close()

	mux := http.NewServeMux()
	mux.Handle("/llm/", http.StripPrefix("/llm", g))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/llm/v1/chat/completions",
		strings.NewReader(`{"model":"lm-4-scout","messages":[{"role":"user","content":"Hi"}]}`))
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, strings.Contains(string(body), upstreamtest.DefaultContent))
	// Output: 200 OK true
}
