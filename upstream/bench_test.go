package upstream_test

import (
	"io"
	"net/http"
	"strings"
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

// cannedTransport answers every request at once with a small JSON body,
// without a network: what BenchmarkRouterDo measures is the Router's own
// work around the round trip (the request, its headers, the time-outs'
// timer, the log line's absence, the body's wrapper).
type cannedTransport struct{}

func (cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"id":"x","object":"chat.completion","choices":[]}`)), Request: req}, nil
}

// BenchmarkRouterDo measures one JSON call through the Router, the body read
// and closed, on a transport that answers at once.
func BenchmarkRouterDo(b *testing.B) {
	cat, _ := upstream.DefaultCatalog()
	r, err := upstream.NewRouter(cat, upstream.Backends{LocalURL: "http://127.0.0.1:1"}, upstream.WithTransport(cannedTransport{}))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	body := []byte(`{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}]}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := r.Do(b.Context(), &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: body})
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
