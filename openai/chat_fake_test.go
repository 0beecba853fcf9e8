package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/openai"
	"github.com/chatgw/gateway/upstream"
)

// fakeUpstream records the calls it gets and answers with respond.
type fakeUpstream struct {
	mu      sync.Mutex
	calls   []call
	respond func(ctx context.Context, req *upstream.Request) (*upstream.Response, error)
}

type call struct {
	ctx context.Context
	req upstream.Request
}

var _ upstream.Upstream = (*fakeUpstream)(nil)

func (f *fakeUpstream) Do(ctx context.Context, req *upstream.Request) (*upstream.Response, error) {
	f.mu.Lock()
	c := *req
	c.Body = bytes.Clone(req.Body)
	f.calls = append(f.calls, call{ctx: ctx, req: c})
	respond := f.respond
	f.mu.Unlock()
	if respond == nil {
		return answerJSON(completionJSON)(ctx, req)
	}
	return respond(ctx, req)
}

func (f *fakeUpstream) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

const completionJSON = `{"id":"chatcmpl-7","object":"chat.completion","created":1700000000,"model":"scout-17b","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`

// asAlias is an upstream answer as the client gets it: its "model" (the
// backend's scout-17b in completionJSON) is the alias the client asked for.
func asAlias(answer, alias string) string {
	return strings.Replace(answer, `"model":"scout-17b"`, `"model":"`+alias+`"`, 1)
}

func answerJSON(body string) func(context.Context, *upstream.Request) (*upstream.Response, error) {
	return func(context.Context, *upstream.Request) (*upstream.Response, error) {
		return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Provider: "local", RouterAlias: "scout-local"}, nil
	}
}

func answerSSE(transcript string) func(context.Context, *upstream.Request) (*upstream.Response, error) {
	return func(context.Context, *upstream.Request) (*upstream.Response, error) {
		return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(strings.NewReader(transcript)), Provider: "local", RouterAlias: "scout-local"}, nil
	}
}

func answerErr(err error) func(context.Context, *upstream.Request) (*upstream.Response, error) {
	return func(context.Context, *upstream.Request) (*upstream.Response, error) { return nil, err }
}

func intp(n int) *int       { return &n }
func strp(s string) *string { return &s }

func testCatalog() *upstream.Catalog {
	vision := upstream.Modalities{TextIn: true, TextOut: true, ImageIn: true}
	text := upstream.Modalities{TextIn: true, TextOut: true}
	chain := func(providers ...string) []upstream.BackendInfo {
		var out []upstream.BackendInfo
		for _, p := range providers {
			b := upstream.BackendInfo{Provider: p, RouterAlias: "scout-" + strings.ToLower(p), Status: upstream.StatusAvailable, BaseURLEnv: p}
			if p != "local" {
				b.Pricing = strp("free tier")
			}
			out = append(out, b)
		}
		return out
	}
	return &upstream.Catalog{Notes: "test catalog", Models: []upstream.ModelInfo{
		{Alias: "lm-4-scout", Description: "Scout with fallback", Family: "lm-4", Kind: upstream.KindChat, ContextWindow: 100000,
			Modalities: vision, Tools: true, JSONMode: true, License: "open", Backends: chain("local", "cloudA", "cloudB"),
			Constraints: upstream.Constraints{TypicalResponseSeconds: intp(20)}},
		{Alias: "lm-4-scout-local", Description: "Scout, local only", Family: "lm-4", Kind: upstream.KindChat, ContextWindow: 100000,
			Modalities: vision, License: "open", Backends: chain("local")},
		{Alias: "lm-text", Description: "Text only", Family: "lm-t", Kind: upstream.KindChat, ContextWindow: 100, Modalities: text,
			License: "open", Backends: chain("local")},
		{Alias: "lm-reason", Description: "Reasoning", Family: "lm-r", Kind: upstream.KindChat, ContextWindow: 100000, Modalities: text,
			ReasoningMode: true, License: "open", Backends: chain("cloudA"), Constraints: upstream.Constraints{MinMaxTokens: intp(200)}},
		{Alias: "lm-embed", Description: "Embeddings", Family: "lm-e", Kind: upstream.KindEmbeddings, ContextWindow: 8192,
			Modalities: upstream.Modalities{TextIn: true}, License: "open", Backends: chain("local")},
	}}
}

func newService(up upstream.Upstream, edit ...func(*openai.Config)) *openai.Service {
	cfg := openai.Config{Upstream: up, Catalog: testCatalog()}
	for _, e := range edit {
		e(&cfg)
	}
	return openai.New(cfg)
}

var allTenants = &auth.Tenant{ID: "acme"}

// request is a request of a member of tenant, as testkit builds it (a string
// body always builds), in the argument order of the many tests that send
// one.
func request(method, target, body string, tenant *auth.Tenant, header http.Header) *http.Request {
	r, _ := testkit.Request{Method: method, Target: target, Body: body, Header: header, Principal: testkit.Member(tenant)}.Build()
	return r
}

// envelope is the error body.
type envelope struct {
	Error struct {
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	} `json:"error"`
	GWCode           string              `json:"gw_code"`
	RequiredConsents []map[string]string `json:"required_consents"`
}

func decodeEnvelope(t *testing.T, w *httptest.ResponseRecorder) envelope {
	t.Helper()
	var e envelope
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %q: %v", w.Body.String(), err)
	}
	return e
}

// lockedRecorder is an http.ResponseWriter safe to read while a handler's
// keepalive goroutine writes to it.
type lockedRecorder struct {
	mu     sync.Mutex
	header http.Header
	status int
	body   bytes.Buffer
}

func newLockedRecorder() *lockedRecorder { return &lockedRecorder{header: http.Header{}} }

func (r *lockedRecorder) Header() http.Header { return r.header }
func (r *lockedRecorder) WriteHeader(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == 0 {
		r.status = status
	}
}
func (r *lockedRecorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == 0 {
		r.status = 200
	}
	return r.body.Write(b)
}
func (r *lockedRecorder) Flush() {}
func (r *lockedRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body.String()
}

// pipeBody is an upstream body the test writes to; it records Close.
type pipeBody struct {
	*io.PipeReader
	closed chan struct{}
	once   sync.Once
}

func newPipeBody() (*pipeBody, *io.PipeWriter) {
	pr, pw := io.Pipe()
	return &pipeBody{PipeReader: pr, closed: make(chan struct{})}, pw
}

func (p *pipeBody) Close() error {
	p.once.Do(func() { close(p.closed) })
	return p.PipeReader.Close()
}
