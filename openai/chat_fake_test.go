package openai_test

import (
	"bytes"
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

// completionJSON is the backend's chat completion a backend() answers by
// default: backend model scout-17b, 5 tokens of usage.
const completionJSON = `{"id":"chatcmpl-7","object":"chat.completion","created":1700000000,"model":"scout-17b","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`

// asAlias is an upstream answer as the client gets it: its "model" (the
// backend's scout-17b in completionJSON) is the alias the client asked for.
func asAlias(answer, alias string) string {
	return strings.Replace(answer, `"model":"scout-17b"`, `"model":"`+alias+`"`, 1)
}

// backend is a Fake upstream that answers every call with answers in turn
// (the last one again when it has fewer): completionJSON without any.
func backend(answers ...testkit.Answer) *testkit.Fake {
	if len(answers) == 0 {
		answers = []testkit.Answer{testkit.JSON(completionJSON)}
	}
	f := &testkit.Fake{}
	f.Add(answers...)
	return f
}

func intp(n int) *int       { return &n }
func strp(s string) *string { return &s }

func testCatalog() *upstream.Catalog {
	vision := upstream.Modalities{TextIn: true, TextOut: true, ImageIn: true}
	text := upstream.Modalities{TextIn: true, TextOut: true}
	chain := func(providers ...string) []upstream.BackendInfo {
		out := testkit.Backends(providers...)
		for i, b := range out {
			out[i].BaseURLEnv = b.Provider // a catalog-file field that /v1/info leaves out
			if b.Provider != "local" {
				out[i].Pricing = strp("free tier")
			}
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
