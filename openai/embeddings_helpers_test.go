package openai_test

// Helpers of the embeddings and audio tests (prefixed "media" so they never
// meet the chat tests' helpers).

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/openai"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
	"github.com/julienschmidt/httprouter"
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

// mediaReq builds a request as the gateway's middleware hands it over: the
// principal of a member token of tenant, the request info, and the path
// parameters (name, value pairs).
func mediaReq(method, target string, body io.Reader, tenant *auth.Tenant, header http.Header, params ...string) *http.Request {
	if body == nil {
		body = http.NoBody
	}
	r := httptest.NewRequest(method, target, body)
	for k, v := range header {
		r.Header[k] = v
	}
	ctx := auth.NewContext(r.Context(), &auth.Principal{TokenID: "tok", Tenant: tenant, Role: auth.RoleMember})
	ctx = httpx.WithInfo(ctx, &httpx.Info{RequestID: "req-7", Logger: slog.New(slog.DiscardHandler)})
	var ps httprouter.Params
	for i := 0; i+1 < len(params); i += 2 {
		ps = append(ps, httprouter.Param{Key: params[i], Value: params[i+1]})
	}
	ctx = context.WithValue(ctx, httprouter.ParamsKey, ps)
	return r.WithContext(ctx)
}

func mediaServe(h http.HandlerFunc, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h(w, r)
	return w
}

// mediaJSON is a JSON body with jsonType Content-Type.
func mediaJSON(body string) (io.Reader, http.Header) {
	return strings.NewReader(body), http.Header{"Content-Type": {"application/json"}}
}

// mediaErr is what the tests compare of an error answer.
type mediaErr struct {
	Status int
	Code   string
	Param  string // "<null>" for a null param
}

func mediaErrOf(t *testing.T, w *httptest.ResponseRecorder) mediaErr {
	t.Helper()
	var env struct {
		Error struct {
			Code  string  `json:"code"`
			Param *string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
		return mediaErr{Status: w.Code, Code: "<not an envelope: " + w.Body.String() + ">"}
	}
	got := mediaErr{Status: w.Code, Code: env.Error.Code, Param: "<null>"}
	if env.Error.Param != nil {
		got.Param = *env.Error.Param
	}
	return got
}

func wantMediaErr(t *testing.T, w *httptest.ResponseRecorder, want mediaErr) {
	t.Helper()
	if diff := cmp.Diff(want, mediaErrOf(t, w)); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s\nbody: %s", diff, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
}
