package responses_test

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/responses"
	"github.com/chatgw/gateway/store/memstore"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// env is a Service over a fake upstream and an in-memory store, with ids
// given in sequence and a fake clock.
type env struct {
	up  *testkit.Fake
	st  *testkit.CutStore
	svc *responses.Service
	h   http.Handler
}

func newEnv(t *testing.T, edit ...func(*responses.Config)) *env {
	t.Helper()
	e := &env{up: &testkit.Fake{}, st: &testkit.CutStore{Store: memstore.New()}}
	cfg := responses.Config{Upstream: e.up, Catalog: testkit.ChatCatalog(), Store: e.st,
		Clock: clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	for _, f := range edit {
		f(&cfg)
	}
	e.svc = responses.New(cfg)
	responses.SequentialIDs(e.svc)
	e.h = testkit.Router(t, map[string]http.HandlerFunc{
		"POST /v1/responses":                e.svc.Create,
		"GET /v1/responses/:id":             e.svc.Get,
		"DELETE /v1/responses/:id":          e.svc.Delete,
		"GET /v1/responses/:id/input_items": e.svc.ListInputItems,
	})
	return e
}

// call is one request to the Service.
type call struct {
	method, path string // "" and "" are POST /v1/responses
	body         string
	user         string
	tenant       string // "" is acme
	header       http.Header
}

// serve sends c as the gateway's middleware hands it to the handler of its
// route: with a member's principal.
func (e *env) serve(t *testing.T, c call) *httptest.ResponseRecorder {
	t.Helper()
	if c.method == "" {
		c.method, c.path = "POST", "/v1/responses"
	}
	if c.tenant == "" {
		c.tenant = "acme"
	}
	var body any
	if c.body != "" {
		body = c.body
	}
	return testkit.Serve(t, e.h, testkit.Request{Method: c.method, Target: c.path, Body: body, User: c.user, Header: c.header,
		Principal: testkit.Member(&auth.Tenant{ID: c.tenant})})
}

// create sends body to POST /v1/responses and returns the response object
// answered, failing t on another status.
func (e *env) create(t *testing.T, c call) map[string]any {
	t.Helper()
	w := e.serve(t, c)
	var out map[string]any
	testkit.Decode(t, w, http.StatusOK, &out)
	return out
}
