package images_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/images"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
	"github.com/julienschmidt/httprouter"
)

// t0 is the fake clock's start in every test.
var t0 = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

// acme is a tenant that allows every alias.
var acme = &auth.Tenant{ID: "acme"}

// env is a Service over the built-in catalog and a memstore, routed by a real
// upstream.Router to one upstreamtest backend that serves every provider.
type env struct {
	cat     *upstream.Catalog
	router  *upstream.Router
	backend *upstreamtest.Server
	st      *memstore.Store
	clk     *clock.Fake
	svc     *images.Service
}

// newEnv returns an env whose Service has no purger: the tests call
// PurgeExpired, and a purge in the background would take the store failures
// they inject.
func newEnv(t *testing.T, opts ...upstreamtest.Option) *env {
	t.Helper()
	e := &env{backend: upstreamtest.New(t, opts...), st: memstore.New(), clk: clock.NewFake(t0)}
	var err error
	if e.cat, err = upstream.DefaultCatalog(); err != nil {
		t.Fatal(err)
	}
	url := e.backend.URL
	if e.router, err = upstream.NewRouter(e.cat, upstream.Backends{LocalURL: url, CloudAURL: url, CloudBURL: url}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.router.Close() })
	e.svc = e.start(t, -1)
	return e
}

// start returns another Service over e's store, clock and upstream, with the
// purger interval every, closed when the test ends.
func (e *env) start(t *testing.T, every time.Duration) *images.Service {
	return e.startWith(t, images.Config{PurgeInterval: every})
}

// startWith is start with cfg, whose Upstream, Catalog, Store and Clock are
// e's.
func (e *env) startWith(t *testing.T, cfg images.Config) *images.Service {
	cfg.Upstream, cfg.Catalog, cfg.Store, cfg.Clock = e.router, e.cat, e.st, e.clk
	s := images.New(cfg)
	t.Cleanup(func() { s.Close() })
	return s
}

// request builds a request of a member token of tenant as the router and the
// middleware hand it to a handler, with the path parameter id. A body ("":
// none) is sent as application/json.
func request(method, target, body string, tenant *auth.Tenant, id string) *http.Request {
	q := testkit.Request{Method: method, Target: target, Principal: testkit.Member(tenant),
		Params: httprouter.Params{{Key: "id", Value: id}}}
	if body != "" {
		q.Body = body
	}
	r, _ := q.Build() // a string body always builds
	return r
}

// apiErr is what the tests compare of an error answer; Param is "<null>" for
// a null param.
type apiErr struct {
	Status      int
	Code, Param string
}

// wantErr checks that w is a JSON error envelope of want.
func wantErr(t *testing.T, w *httptest.ResponseRecorder, want apiErr) {
	t.Helper()
	var body struct{ Error struct{ Code, Param *string } }
	got := apiErr{w.Code, "<not an envelope>", "<null>"}
	if json.Unmarshal(w.Body.Bytes(), &body) == nil && body.Error.Code != nil {
		got.Code = *body.Error.Code
		if body.Error.Param != nil {
			got.Param = *body.Error.Param
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s\nbody: %s", diff, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
}
