package upstream_test

import (
	"io"
	"testing"

	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// BenchmarkRouterStream measures Do plus reading an 8-chunk stream from the fake.
func BenchmarkRouterStream(b *testing.B) {
	local := upstreamtest.Start(upstreamtest.Config{DiscardCalls: true, Reply: upstreamtest.Reply{Chunks: 8}})
	defer local.Close()
	cat, _ := upstream.DefaultCatalog()
	r, err := upstream.NewRouter(cat, upstream.Backends{LocalURL: local.URL})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	body := []byte(`{"model":"lm-4-scout","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := r.Do(b.Context(), &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: body, Stream: true})
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
