package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chatgw/gateway/anthropic"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fakeUpstream records the bodies of the calls it gets and answers each
// with the next of its answers (the last one again when they run out).
type fakeUpstream struct {
	mu      sync.Mutex
	bodies  [][]byte
	answers []func() (*upstream.Response, error)
}

var _ upstream.Upstream = (*fakeUpstream)(nil)

func (f *fakeUpstream) Do(_ context.Context, req *upstream.Request) (*upstream.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bodies = append(f.bodies, bytes.Clone(req.Body))
	i := min(len(f.bodies), len(f.answers)) - 1
	if i < 0 {
		return testkit.JSONAnswer(testkit.Completion(`{"role":"assistant","content":"Hello!"}`, "stop")), nil
	}
	return f.answers[i]()
}

// last returns the body of the last call, indented, or "" without calls.
func (f *fakeUpstream) last(t *testing.T) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		return ""
	}
	var out bytes.Buffer
	if err := json.Indent(&out, f.bodies[len(f.bodies)-1], "", "  "); err != nil {
		t.Fatalf("upstream body %s: %v", f.bodies[len(f.bodies)-1], err)
	}
	return out.String() + "\n"
}

func (f *fakeUpstream) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// jsonAnswer answers the chat completion body.
func jsonAnswer(body string) func() (*upstream.Response, error) {
	return func() (*upstream.Response, error) { return testkit.JSONAnswer(body), nil }
}

// sseAnswer answers a stream of transcript, as the upstream wrote it.
func sseAnswer(transcript string) func() (*upstream.Response, error) {
	return func() (*upstream.Response, error) {
		return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(strings.NewReader(transcript)), Provider: "local", RouterAlias: "scout-local"}, nil
	}
}

// chunks is the transcript of data events, then data: [DONE].
func chunks(data ...string) string {
	var b strings.Builder
	for _, d := range data {
		b.WriteString("data: " + d + "\n\n")
	}
	return b.String() + "data: [DONE]\n\n"
}

func intp(n int) *int { return &n }

func testCatalog() *upstream.Catalog {
	vision := upstream.Modalities{TextIn: true, TextOut: true, ImageIn: true}
	text := upstream.Modalities{TextIn: true, TextOut: true}
	chain := func(providers ...string) []upstream.BackendInfo {
		var out []upstream.BackendInfo
		for _, p := range providers {
			out = append(out, upstream.BackendInfo{Provider: p, RouterAlias: "scout-" + strings.ToLower(p), Status: upstream.StatusAvailable})
		}
		return out
	}
	return &upstream.Catalog{Models: []upstream.ModelInfo{
		{Alias: "lm-4-scout", Kind: upstream.KindChat, ContextWindow: 100000, Modalities: vision, Tools: true, Backends: chain("local", "cloudA")},
		{Alias: "lm-4-scout-local", Kind: upstream.KindChat, ContextWindow: 100000, Modalities: vision, Tools: true, Backends: chain("local")},
		{Alias: "lm-text", Kind: upstream.KindChat, ContextWindow: 100, Modalities: text, Backends: chain("local")},
		{Alias: "lm-reason", Kind: upstream.KindChat, ContextWindow: 100000, Modalities: text, Backends: chain("cloudA"),
			Constraints: upstream.Constraints{MinMaxTokens: intp(200)}},
		{Alias: "lm-embed", Kind: upstream.KindEmbeddings, ContextWindow: 8192, Backends: chain("local")},
	}}
}

// env is a Service over a fake upstream.
type env struct {
	up  *fakeUpstream
	svc *anthropic.Service
}

func newEnv(edit ...func(*anthropic.Config)) *env {
	e := &env{up: &fakeUpstream{}}
	cfg := anthropic.Config{Upstream: e.up, Catalog: testCatalog()}
	for _, f := range edit {
		f(&cfg)
	}
	e.svc = anthropic.New(cfg)
	return e
}

// call is one request to the Service.
type call struct {
	path   string // "" is /v1/messages
	body   string
	tenant *auth.Tenant // nil is acme, which allows every alias
	header http.Header
}

// serve sends c as the gateway's middleware hands it to the handler of
// its route: with a member's principal and the routes' error Format.
func (e *env) serve(t *testing.T, c call) *httptest.ResponseRecorder {
	t.Helper()
	tenant := c.tenant
	if tenant == nil {
		tenant = &auth.Tenant{ID: "acme"}
	}
	h := e.svc.CreateMessage
	if c.path == "" {
		c.path = "/v1/messages"
	}
	if c.path == "/v1/messages/count_tokens" {
		h = e.svc.CountTokens
	}
	r := testkit.NewRequest(t, testkit.Request{Method: "POST", Target: c.path, Body: c.body, Header: c.header, Principal: testkit.Member(tenant)})
	httpx.InfoFrom(r.Context()).ErrorFormat = anthropic.ErrorBody
	return testkit.Record(h, r)
}

// indent returns the JSON answer of w indented, for golden files.
func indent(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimSpace(w.Body.Bytes()), "", "  "); err != nil {
		t.Fatalf("answer %d %s: %v", w.Code, w.Body, err)
	}
	return out.String() + "\n"
}
