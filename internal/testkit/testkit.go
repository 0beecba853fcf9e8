// Package testkit holds the helpers that the families' tests share, as bbolt's
// internal/btesting does for bbolt: building a request as the root's middleware
// hands it to a handler (with a member's principal: Member, Call), serving
// it, decoding the JSON answer and reading values of it (Field, Data),
// reading and checking the error envelope (ErrorOf, CheckError), comparing
// with golden files (Golden, Indent), and parsing a server-sent event stream; the
// OpenAI answers a fake upstream.Upstream gives (Chunk, Completion, SSEAnswer,
// JSONAnswer), and Fake, an upstream.Upstream that records its calls and
// answers them in turn (JSON, Stream, Transcript, Fail); the chat families'
// catalog (ChatCatalog, Backends) and image (OnePixelPNG); CutStore, a store
// whose writes a test cuts off.
//
// It also gives a test a fresh in-memory store (MemStore).
//
// It is a leaf: it imports the leaf packages (auth, errcat, upstream, quota,
// store/memstore, internal/httpx) and never a family, so that every family's
// tests may import it.
//
// Every helper that can fail takes a testing.TB, marks itself with t.Helper and
// fails the test with Fatal: call them from the test's goroutine. Other
// goroutines build their requests with Request.Build, which returns an error.
package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/google/go-cmp/cmp"
	"github.com/julienschmidt/httprouter"
)

// RequestID is the request id of the httpx.Info that Build puts in a request.
const RequestID = "req-test"

// TokenID is the token id of the principals Member returns.
const TokenID = "tok-test"

// Member returns the principal of a member token of tenant denied the scopes
// deny (none when deny is empty), as the root's auth middleware finds it in
// the token file.
func Member(tenant *auth.Tenant, deny ...string) *auth.Principal {
	return &auth.Principal{TokenID: TokenID, Tenant: tenant, Role: auth.RoleMember, Deny: deny}
}

// Request is one request of a test.
type Request struct {
	// Method and Target are those of httptest.NewRequest: Target is a path with
	// an optional query.
	Method, Target string
	// User is sent as the GW-User-Id header; "" sends none.
	User string
	// Header holds further headers, set after User (so it may override it).
	// nil sets none.
	Header http.Header
	// Body is the request body: nil sends none, a string or []byte is sent as
	// it is, an io.Reader as it reads (once: a Request with one is built
	// once), any other value as its JSON encoding. A request with a body has
	// Content-Type application/json unless Header sets another.
	Body any
	// Principal is put in the request's context with auth.NewContext, as the
	// root's auth middleware does; nil puts none (for a test that puts its own
	// with a stand-in middleware).
	Principal *auth.Principal
	// Params are the route's path parameters, as the router gives them to
	// the handler it calls (httpx.Param reads them), for a test that calls a
	// handler without a router; nil puts none.
	Params httprouter.Params
}

// Build returns q as the root's middleware hands it to a handler: with
// q.Principal, q.Params and an httpx.Info (request id RequestID, a logger
// that discards) in its context. It returns an error, instead of failing a test, when
// q.Body does not encode, so that goroutines other than the test's may call
// it.
func (q Request) Build() (*http.Request, error) {
	var rd io.Reader
	switch b := q.Body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	default:
		body, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("body of %s %s: %w", q.Method, q.Target, err)
		}
		rd = bytes.NewReader(body)
	}
	r := httptest.NewRequest(q.Method, q.Target, rd)
	if q.Body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if q.User != "" {
		r.Header.Set(httpx.HeaderUserID, q.User)
	}
	for k, vs := range q.Header {
		r.Header[http.CanonicalHeaderKey(k)] = vs
	}
	ctx := Context(r.Context(), q.Principal)
	if q.Params != nil {
		ctx = context.WithValue(ctx, httprouter.ParamsKey, q.Params)
	}
	return r.WithContext(ctx), nil
}

// Context returns ctx carrying what the root's middleware gives a request
// before its handler runs: an httpx.Info (request id RequestID, a logger that
// discards) and p, unless p is nil. Build uses it; a test serving real HTTP
// calls it on the request its server gets.
func Context(ctx context.Context, p *auth.Principal) context.Context {
	info := new(httpx.Info)
	info.Init(RequestID, slog.New(slog.DiscardHandler))
	ctx = httpx.WithInfo(ctx, info)
	if p != nil {
		ctx = auth.NewContext(ctx, p)
	}
	return ctx
}

// NewRequest is Build for the test's goroutine: it fails t when q.Body does
// not encode.
func NewRequest(t testing.TB, q Request) *http.Request {
	t.Helper()
	r, err := q.Build()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Record serves r, a request built already, through h and returns what h
// wrote.
func Record(h http.HandlerFunc, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h(w, r)
	return w
}

// Serve builds q (see Build), serves it through h and returns what h wrote.
// It fails t when q.Body does not encode.
func Serve(t testing.TB, h http.Handler, q Request) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, NewRequest(t, q))
	return w
}

// Decode decodes the JSON answer w into v (as json.Unmarshal does: fields that
// v lacks are skipped). It fails t when w's status is not status, its
// Content-Type is not application/json or its body does not decode. Pass
// w.Code as status to accept any status.
func Decode(t testing.TB, w *httptest.ResponseRecorder, status int, v any) {
	t.Helper()
	decode(t, w, status, v, json.Unmarshal)
}

// DecodeStrict is Decode that also fails t when the body has a member that v
// lacks (see UnmarshalStrict): for a test that pins every member of an
// answer, so that a member the handler adds fails it until the test knows it.
func DecodeStrict(t testing.TB, w *httptest.ResponseRecorder, status int, v any) {
	t.Helper()
	decode(t, w, status, v, UnmarshalStrict)
}

func decode(t testing.TB, w *httptest.ResponseRecorder, status int, v any, unmarshal func([]byte, any) error) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d; body %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json; body %s", ct, w.Body)
	}
	if err := unmarshal(w.Body.Bytes(), v); err != nil {
		t.Fatalf("body %s: %v", w.Body, err)
	}
}

// UnmarshalStrict is json.Unmarshal with json.Decoder's
// DisallowUnknownFields: a member that v lacks is an error. It returns an
// error instead of failing a test, for code that runs outside one (a helper
// process).
func UnmarshalStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// ServeJSON serves q through h (see Serve) and returns the status and the
// JSON answer decoded into an any, whatever the status. It fails t when the
// answer is not application/json or does not decode.
func ServeJSON(t testing.TB, h http.Handler, q Request) (int, any) {
	t.Helper()
	w := Serve(t, h, q)
	var out any
	Decode(t, w, w.Code, &out)
	return w.Code, out
}

// Error is what the tests compare of an error answer: its status and its
// envelope's error.code and error.param.
type Error struct {
	Status      int
	Code, Param string
}

// WantError is the Error that code answers with param: the catalog's status
// for the code.
func WantError(code errcat.Code, param string) Error {
	return Error{Status: errcat.Lookup(code).HTTPStatus, Code: string(code), Param: param}
}

// ErrorOf returns the Error of an answer of status with body: the zero Error
// for a 200, so that "no error" compares equal to Error{}; for any other
// status, the status and the envelope's code and param (a null or absent
// param, or a body without an envelope, gives ""). body is the answer's
// bytes ([]byte or string) or a value it was decoded into (as Decode into an
// any gives). It fails t when a body of bytes is not JSON.
func ErrorOf(t testing.TB, status int, body any) Error {
	t.Helper()
	if status == http.StatusOK {
		return Error{}
	}
	var raw []byte
	switch b := body.(type) {
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			t.Fatalf("answer %v: %v", body, err)
		}
	}
	var env struct {
		Error struct {
			Code  string  `json:"code"`
			Param *string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("answer %d %q is not JSON: %v", status, raw, err)
	}
	e := Error{Status: status, Code: env.Error.Code}
	if env.Error.Param != nil {
		e.Param = *env.Error.Param
	}
	return e
}

// CheckError reports with t.Errorf when the answer w is not the error want
// (see ErrorOf) or not application/json, with w's body; the test goes on.
func CheckError(t testing.TB, w *httptest.ResponseRecorder, want Error) {
	t.Helper()
	if diff := cmp.Diff(want, ErrorOf(t, w.Code, w.Body.Bytes())); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s\nbody: %s", diff, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
}

// Field returns v[key] when v is a JSON object decoded into an any, else nil.
func Field(v any, key string) any {
	m, _ := v.(map[string]any)
	return m[key]
}

// Data returns the data array of a list answer decoded into an any
// ({"object":"list","data":[...]}), or nil.
func Data(list any) []any {
	d, _ := Field(list, "data").([]any)
	return d
}

// Golden compares got with the golden file testdata/name of the test's
// package and reports a difference with t.Errorf. With update (the package's
// -update flag) it first writes got there, creating testdata if need be.
func Golden(t testing.TB, name, got string, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

// Indent returns the JSON answer w recorded, indented with a final line
// break, for a golden file; it fails t when the answer is not JSON.
func Indent(t testing.TB, w *httptest.ResponseRecorder) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimSpace(w.Body.Bytes()), "", "  "); err != nil {
		t.Fatalf("answer %d %s: %v", w.Code, w.Body, err)
	}
	return out.String() + "\n"
}

// Diff reports with t.Errorf when want and got differ (by cmp.Diff with
// opts), as "what mismatch (-want +got):" and the diff; the test goes on.
func Diff(t testing.TB, what string, want, got any, opts ...cmp.Option) {
	t.Helper()
	if diff := cmp.Diff(want, got, opts...); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, diff)
	}
}

// MemStore returns a fresh in-memory store, closed when the test and its
// subtests end (as bbolt's btesting.MustCreateDB gives a database), so that a
// test does not pair memstore.New with its own t.Cleanup.
func MemStore(t testing.TB) *memstore.Store {
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	return st
}
