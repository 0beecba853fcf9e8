package anthropic_test

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chatgw/gateway/anthropic"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// env is a Service over a fake upstream.
type env struct {
	up  *testkit.Fake
	svc *anthropic.Service
}

func newEnv(edit ...func(*anthropic.Config)) *env {
	e := &env{up: &testkit.Fake{}}
	cfg := anthropic.Config{Upstream: e.up, Catalog: testkit.ChatCatalog()}
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
