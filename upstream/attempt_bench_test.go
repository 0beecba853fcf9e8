package upstream

import (
	"context"
	"testing"
	"time"
)

// BenchmarkNewAttemptRequest measures building one attempt's HTTP request:
// its body, context, URL and headers.
func BenchmarkNewAttemptRequest(b *testing.B) {
	cat, err := DefaultCatalog()
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRouter(cat, Backends{LocalURL: "http://127.0.0.1:11434/v1"})
	if err != nil {
		b.Fatal(err)
	}
	req := &Request{Alias: "lm-4-scout", Path: "/chat/completions", RequestID: "req_1",
		Body: []byte(`{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}]}`)}
	p, err := newPayload(req)
	if err != nil {
		b.Fatal(err)
	}
	c := &call{ctx: context.Background(), deadline: time.Now().Add(time.Hour), req: req, t: &r.chains["lm-4-scout"][0]}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.newAttemptRequest(c, p); err != nil {
			b.Fatal(err)
		}
		c.cancel(nil)
	}
}
