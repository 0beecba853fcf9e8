// Package upstreamtest is an in-process fake OpenAI-compatible model backend for
// tests and benchmarks: chat completions (JSON and SSE chunks), embeddings, image
// generation (b64_json), audio transcription and the model list, with per-call
// behaviour (latency, hang, error status with an OpenAI error body and
// Retry-After, a stream dropped mid-way) and a record of every request.
//
// New starts it on an httptest.Server for a test; NewHandler gives the bare
// http.Handler for a benchmark command or another server. Answers are
// precomputed per reply and model, so one fake serves tens of thousands of
// requests per second. RefusedURL and NotHTTPURL give backends that refuse
// connections or answer with bytes that are not HTTP.
package upstreamtest

import (
	"net/http/httptest"
	"testing"
)

// Server is a fake backend listening on a local address. The embedded *Handler
// gives the call record and changes the replies.
type Server struct {
	*Handler
	// URL is the base URL to configure as a backend: http://127.0.0.1:<port>/v1.
	URL string
	srv *httptest.Server
}

// Option configures New.
type Option func(*Config)

// WithReply sets the reply used for every call once the script is exhausted
// (default: a zero Reply, a 200 answer).
func WithReply(r Reply) Option { return func(c *Config) { c.Reply = r } }

// WithScript queues replies for the first calls, one each, in arrival order.
func WithScript(rs ...Reply) Option {
	return func(c *Config) { c.Script = append(c.Script, rs...) }
}

// WithConfig replaces the whole configuration (options after it still apply).
func WithConfig(cfg Config) Option { return func(c *Config) { *c = cfg } }

// New starts a fake backend for t; it is closed when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var cfg Config
	for _, o := range opts {
		o(&cfg)
	}
	s := Start(cfg)
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake backend without a test (benchmarks); the caller closes it.
func Start(cfg Config) *Server {
	h := NewHandler(cfg)
	srv := httptest.NewServer(h)
	return &Server{Handler: h, URL: srv.URL + "/v1", srv: srv}
}

// Close releases waiting calls and stops the server; later connections are
// refused. It is idempotent.
func (s *Server) Close() {
	s.Handler.Close()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// RefusedURL returns a base URL on which connections are refused, for the
// rest of the test: a local port held by a socket that is bound but not
// listening, so that no other test can take the port meanwhile.
func RefusedURL(t testing.TB) string {
	t.Helper()
	addr, release, err := refusedAddr()
	if err != nil {
		t.Fatalf("upstreamtest.RefusedURL: %v", err)
	}
	t.Cleanup(release)
	return "http://" + addr + "/v1"
}
