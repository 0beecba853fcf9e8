package relay_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/upstream"
)

// chunks is an upstream stream of n copies of one chunk, then [DONE], made up
// as it is read.
type chunks struct {
	event []byte
	n     int
	off   int
}

func (c *chunks) Read(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		if c.n == 0 {
			if total > 0 {
				return total, nil
			}
			if c.event == nil {
				return 0, io.EOF
			}
			c.event, c.off = nil, 0
			n := copy(p, "data: [DONE]\n\n")
			return n, nil
		}
		n := copy(p, c.event[c.off:])
		p, total, c.off = p[n:], total+n, c.off+n
		if c.off == len(c.event) {
			c.off = 0
			c.n--
		}
	}
	return total, nil
}

func (c *chunks) Close() error { return nil }

type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteString(s string) (int, error) {
	return len(s), nil
}
func (d *discard) Flush() {}

// BenchmarkRelayChunk measures the relay of one typical content chunk: one op
// is one chunk of a stream of b.N chunks, its "model" written as the alias
// as every caller asks (Options.Model).
func BenchmarkRelayChunk(b *testing.B) {
	event := []byte("data: " + chunk(`{"index":0,"delta":{"content":" token"},"finish_reason":null}`) + "\n\n")
	resp := &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: &chunks{event: event, n: b.N}}
	r := httptest.NewRequest("POST", "/", nil)
	w := &discard{h: http.Header{}}
	b.SetBytes(int64(len(event)))
	b.ReportAllocs()
	b.ResetTimer()
	res := relay.Response(w, r, resp, relay.Options{Model: "lm-4-scout"})
	if !res.Complete {
		b.Fatal(res.Err)
	}
}

// BenchmarkRelayChunkCapture is BenchmarkRelayChunk with a Capture, as /c1
// relays: each chunk is also folded into the captured reply.
func BenchmarkRelayChunkCapture(b *testing.B) {
	event := []byte("data: " + chunk(`{"index":0,"delta":{"content":" token"},"finish_reason":null}`) + "\n\n")
	resp := &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: &chunks{event: event, n: b.N}}
	r := httptest.NewRequest("POST", "/", nil)
	w := &discard{h: http.Header{}}
	var c relay.Capture
	b.SetBytes(int64(len(event)))
	b.ReportAllocs()
	b.ResetTimer()
	res := relay.Response(w, r, resp, relay.Options{Capture: &c, Model: "lm-4-scout"})
	if !res.Complete {
		b.Fatal(res.Err)
	}
}

// firstFlusher is a discard writer that notes when it is first flushed.
type firstFlusher struct {
	discard
	at time.Time
}

func (f *firstFlusher) Flush() {
	if f.at.IsZero() {
		f.at = time.Now()
	}
}

// BenchmarkFirstFlush measures how long a stream's first event takes to be
// flushed when the upstream sent the whole answer, 16 chunks and [DONE], in
// one write (as the benchmarks' fake does): the time to first byte the relay
// adds. One op is one stream; first-flush-ns/op is the mean from the call to
// the first Flush.
func BenchmarkFirstFlush(b *testing.B) {
	event := []byte("data: " + chunk(`{"index":0,"delta":{"content":" token"},"finish_reason":null}`) + "\n\n")
	r := httptest.NewRequest("POST", "/", nil)
	var first time.Duration
	b.ReportAllocs()
	for b.Loop() {
		resp := &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: &chunks{event: event, n: 16}}
		w := &firstFlusher{discard: discard{h: http.Header{}}}
		start := time.Now()
		if res := relay.Response(w, r, resp, relay.Options{Model: "lm-4-scout"}); !res.Complete {
			b.Fatal(res.Err)
		}
		first += w.at.Sub(start)
	}
	b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "first-flush-ns/op")
}
