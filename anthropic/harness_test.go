package anthropic_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chatgw/gateway/anthropic"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

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
	up  *testkit.Fake
	svc *anthropic.Service
}

func newEnv(edit ...func(*anthropic.Config)) *env {
	e := &env{up: &testkit.Fake{}}
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
