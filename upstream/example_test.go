package upstream_test

import (
	"context"
	"fmt"
	"io"

	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// A Router over the built-in catalog: the local backend fails, cloudA answers.
func ExampleRouter() {
	local := upstreamtest.Start(upstreamtest.Config{Reply: upstreamtest.Reply{Status: 503}})
	defer local.Close()
	cloudA := upstreamtest.Start(upstreamtest.Config{Reply: upstreamtest.Reply{Content: "Hi!"}})
	defer cloudA.Close()

	cat, err := upstream.DefaultCatalog()
	if err != nil {
		panic(err)
	}
	r, err := upstream.NewRouter(cat, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL})
	if err != nil {
		panic(err)
	}
	defer r.Close()

	resp, err := r.Do(context.Background(), &upstream.Request{
		Alias: "lm-4-scout",
		Path:  "/chat/completions",
		Body:  []byte(`{"model":"lm-4-scout","messages":[{"role":"user","content":"Hello"}]}`),
	})
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Provider, resp.RouterAlias, resp.Fallback)
	fmt.Println(cloudA.Calls()[0].Model)
	fmt.Println(len(body) > 0)
	// Output:
	// cloudA lm-4-scout-17b-16e-instruct true
	// lm-4-scout-17b-16e-instruct
	// true
}

// The catalog as GET /v1/info shows it when only the local backend is configured.
func ExampleCatalog_WithStatus() {
	cat, _ := upstream.DefaultCatalog()
	view := cat.WithStatus(upstream.Backends{LocalURL: "http://127.0.0.1:11434/v1"})
	for _, b := range view.Lookup("lm-4-scout").Backends {
		fmt.Println(b.Provider, b.Status)
	}
	// Output:
	// local available
	// cloudA unconfigured
	// cloudB unconfigured
}
