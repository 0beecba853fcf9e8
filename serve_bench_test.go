package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/ratelimit"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
)

// benchWriter is a ResponseWriter that keeps nothing, reused across requests
// so that the benchmarks measure the gateway and not httptest.ResponseRecorder.
type benchWriter struct {
	h    http.Header
	code int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) WriteHeader(code int)        { w.code = code }
func (w *benchWriter) Write(b []byte) (int, error) { return len(b), nil }

// WriteString is what net/http's ResponseWriter has too: without it every
// io.WriteString to the writer (the relay's SSE pieces) would copy its string.
func (w *benchWriter) WriteString(s string) (int, error) { return len(s), nil }

func (w *benchWriter) reset() {
	clear(w.h)
	w.code = 0
}

// benchRequest is a request with a bearer token and a GW-User-Id, ready to be
// served again and again (its context and header are never modified by the
// gateway, which works on copies).
func benchRequest(method, path, token string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	r.Body = http.NoBody
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Set(httpx.HeaderUserID, "u1")
	return r
}

// serveLoop serves r with g b.N times and fails on any status but 200.
func serveLoop(b *testing.B, g http.Handler, r *http.Request) {
	b.Helper()
	serveLoopStatus(b, g, r, http.StatusOK)
}

// serveLoopStatus serves r with g b.N times and fails on any status but
// want (200 may also be written implicitly, as 0).
func serveLoopStatus(b *testing.B, g http.Handler, r *http.Request, want int) {
	b.Helper()
	w := &benchWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		w.reset()
		g.ServeHTTP(w, r)
		if w.code != want && (want != http.StatusOK || w.code != 0) {
			b.Fatalf("status %d, want %d", w.code, want)
		}
	}
}

// BenchmarkServeHTTP measures the gateway's own work on one request: the
// outer middleware (request id, Info, body limit, the log line), routing, bearer
// auth with the token look-up, the rate limit, the scope and the GW-User-Id
// rule.
//
//   - middleware: a route whose handler writes nothing, logs discarded: the
//     cost of the middleware alone.
//   - middleware-jsonlog: the same with the log line encoded by
//     slog.JSONHandler into io.Discard, as gatewayd logs by default.
//   - rate-limited: the middleware case for a token whose bucket is empty:
//     every request answers 429 rate_limit_exceeded, the error envelope
//     included (the path a client over its limit keeps hitting).
//   - v1-models: GET /v1/models through gateway.New with memstore, the
//     smallest real route (the list is cached).
func BenchmarkServeHTTP(b *testing.B) {
	tokens := auth.MustStatic([]*auth.Tenant{{ID: "acme"}}, map[string]auth.StaticToken{
		"tok":  {Tenant: "acme", Role: auth.RoleTenantAdmin, Rate: &auth.Rate{PerSecond: 1e9, Burst: 1e9}},
		"slow": {Tenant: "acme", Role: auth.RoleTenantAdmin, Rate: &auth.Rate{PerSecond: 1e-9, Burst: 1}},
	})
	noop := []route{{"GET", "/t/noop", "models:read", userOptional, func(http.ResponseWriter, *http.Request) {}, nil}}
	for _, bc := range []struct {
		name string
		log  slog.Handler
	}{
		{"middleware", slog.DiscardHandler},
		{"middleware-jsonlog", slog.NewJSONHandler(io.Discard, nil)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := defaultConfig()
			cfg.tokens = tokens
			g := &Gateway{cfg: cfg, log: slog.New(bc.log)}
			g.limiter = ratelimit.NewLocal(nil)
			g.router = g.buildRouter(noop)
			serveLoop(b, g, benchRequest("GET", "/t/noop", "tok"))
		})
	}
	b.Run("rate-limited", func(b *testing.B) {
		cfg := defaultConfig()
		cfg.tokens = tokens
		g := &Gateway{cfg: cfg, log: slog.New(slog.DiscardHandler)}
		g.limiter = ratelimit.NewLocal(nil)
		g.router = g.buildRouter(noop)
		r := benchRequest("GET", "/t/noop", "slow")
		g.ServeHTTP(httptest.NewRecorder(), r) // takes the bucket's one request
		serveLoopStatus(b, g, r, http.StatusTooManyRequests)
	})
	b.Run("v1-models", func(b *testing.B) {
		g, err := New(WithTokenCatalog(tokens), WithStore(memstore.New()), WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { g.Close() })
		r := benchRequest("GET", "/v1/models", "tok")
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"object":"list"`) {
			b.Fatalf("GET /v1/models: %d %s", w.Code, w.Body)
		}
		serveLoop(b, g, r)
	})
}

// upstreamFunc is an upstream.Upstream made of a function.
type upstreamFunc func(ctx context.Context, req *upstream.Request) (*upstream.Response, error)

func (f upstreamFunc) Do(ctx context.Context, req *upstream.Request) (*upstream.Response, error) {
	return f(ctx, req)
}

// BenchmarkServeChat measures one chat completion through the whole gateway
// (gateway.New with memstore, the built-in catalog, no quota): the
// middleware, the pre-flight checks, the relay and whatever the gateway does
// once the answer is sent, against an in-process upstream that answers at
// once, so that the gateway's own per-request work is what is measured.
//
//   - v1-json: POST /v1/chat/completions answered with a JSON completion.
//   - v1-stream: the same request streamed, eight content chunks and a usage
//     chunk.
func BenchmarkServeChat(b *testing.B) {
	tokens := auth.MustStatic([]*auth.Tenant{{ID: "acme"}}, map[string]auth.StaticToken{
		"tok": {Tenant: "acme", Role: auth.RoleTenantAdmin, Rate: &auth.Rate{PerSecond: 1e9, Burst: 1e9}},
	})
	completion := testkit.Completion(`{"role":"assistant","content":"Hello there."}`, "stop")
	var stream strings.Builder
	for range 8 {
		stream.WriteString("data: " + testkit.Chunk(`{"content":" token"}`, "") + "\n\n")
	}
	stream.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"lm","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":8,"total_tokens":17}}` + "\n\n")
	stream.WriteString("data: [DONE]\n\n")
	for _, bc := range []struct {
		name, body, answer, contentType string
	}{
		{"v1-json", `{"model":"lm-4-scout","messages":[{"role":"user","content":"Hi"}]}`, completion, "application/json"},
		{"v1-stream", `{"model":"lm-4-scout","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`,
			stream.String(), "text/event-stream"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			up := upstreamFunc(func(context.Context, *upstream.Request) (*upstream.Response, error) {
				return &upstream.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {bc.contentType}},
					Body: io.NopCloser(strings.NewReader(bc.answer)), Provider: "local"}, nil
			})
			g, err := New(WithTokenCatalog(tokens), WithStore(memstore.New()), WithUpstream(up),
				WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { g.Close() })
			body := []byte(bc.body)
			r := benchRequest("POST", "/v1/chat/completions", "tok")
			r.Header.Set("Content-Type", "application/json")
			r.ContentLength = int64(len(body))
			w := &benchWriter{h: http.Header{}}
			rd := bytes.NewReader(body)
			b.ReportAllocs()
			for b.Loop() {
				w.reset()
				rd.Reset(body)
				r.Body = io.NopCloser(rd)
				g.ServeHTTP(w, r)
				if w.code != http.StatusOK && w.code != 0 {
					b.Fatalf("status %d", w.code)
				}
			}
		})
	}
}
