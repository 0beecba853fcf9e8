package openai_test

// Helpers of the embeddings and audio tests (prefixed "media" so they never
// meet the chat tests' helpers).

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/openai"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// mediaStart is the fake clock's start in every media test.
var mediaStart = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

// mediaEnv is a Service over the built-in catalog, routed by a real
// upstream.Router to one upstreamtest backend that serves every provider.
type mediaEnv struct {
	cat     *upstream.Catalog
	backend *upstreamtest.Server
	router  *upstream.Router
	st      *memstore.Store
	clk     *clock.Fake
	svc     *openai.Service
}

func newMediaEnv(t *testing.T, opts ...upstreamtest.Option) *mediaEnv {
	t.Helper()
	backend := upstreamtest.New(t, opts...)
	return newMediaEnvWith(t, backend, upstream.Backends{
		LocalURL: backend.URL, CloudAURL: backend.URL, CloudBURL: backend.URL})
}

func newMediaEnvWith(t *testing.T, backend *upstreamtest.Server, b upstream.Backends) *mediaEnv {
	t.Helper()
	cat, err := upstream.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	router, err := upstream.NewRouter(cat, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { router.Close() })
	e := &mediaEnv{cat: cat, backend: backend, router: router, st: memstore.New(), clk: clock.NewFake(mediaStart)}
	e.svc = openai.New(openai.Config{Upstream: router, Catalog: cat, Clock: e.clk, Store: e.st})
	return e
}

// mediaTenant is a tenant that allows every alias.
var mediaTenant = &auth.Tenant{ID: "acme"}

// orMediaTenant is tenant, or mediaTenant when nil (a test case that names
// none).
func orMediaTenant(tenant *auth.Tenant) *auth.Tenant {
	if tenant == nil {
		return mediaTenant
	}
	return tenant
}

// refused checks that w is the error want and that no backend got a call:
// a refused request is answered before the upstream call.
func (e *mediaEnv) refused(t *testing.T, w *httptest.ResponseRecorder, want testkit.Error) {
	t.Helper()
	testkit.CheckError(t, w, want)
	if n := e.backend.CallCount(); n != 0 {
		t.Errorf("upstream got %d calls, want none", n)
	}
}

// embed serves body as POST /v1/embeddings of a member of tenant.
func (e *mediaEnv) embed(t *testing.T, body string, tenant *auth.Tenant) *httptest.ResponseRecorder {
	t.Helper()
	return testkit.Record(e.svc.Embeddings, testkit.NewRequest(t, testkit.Request{
		Method: "POST", Target: "/v1/embeddings", Body: body, Principal: testkit.Member(tenant)}))
}
