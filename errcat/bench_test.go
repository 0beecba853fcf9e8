package errcat_test

import (
	"net/http"
	"testing"

	"github.com/chatgw/gateway/errcat"
)

// discardWriter is a ResponseWriter that keeps nothing, reused across
// answers so that the benchmark measures the writer, not a recorder.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkWrite measures one error answer: the 429 of the rate limit (the
// error a client over its limit gets on every request) and a 400 with a
// param, in the gateway's envelope.
func BenchmarkWrite(b *testing.B) {
	for _, bc := range []struct {
		name string
		err  *errcat.Error
	}{
		{"rate-limit", &errcat.Error{Code: errcat.RateLimitExceeded, Message: "Rate limit exceeded", RetryAfter: 1}},
		{"invalid-field", errcat.New(errcat.InvalidField, "body.temperature", "temperature must be between 0 and 2.")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				errcat.Write(w, bc.err)
			}
		})
	}
}
