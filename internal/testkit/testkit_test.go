package testkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
	"github.com/julienschmidt/httprouter"
)

// recordingT is a testing.TB whose Fatal and Fatalf only record that they
// were called, so that a test can see a helper fail.
type recordingT struct {
	testing.TB
	fatal, errors string
}

func (t *recordingT) Helper() {}

func (t *recordingT) Fatal(args ...any) { t.fatal = fmt.Sprint(args...) }

func (t *recordingT) Fatalf(format string, args ...any) { t.fatal = fmt.Sprintf(format, args...) }

func (t *recordingT) Errorf(format string, args ...any) { t.errors += fmt.Sprintf(format, args...) }

// sent is what a handler sees of a request.
type sent struct {
	Method, Path, Body    string
	ContentType, User, X  string
	Tenant, RequestID     string
	HasPrincipal, HasInfo bool
	ID                    string // the path parameter id
}

func see(r *http.Request) sent {
	b, _ := io.ReadAll(r.Body)
	s := sent{Method: r.Method, Path: r.URL.RequestURI(), Body: string(b),
		ContentType: r.Header.Get("Content-Type"), User: httpx.UserID(r), X: r.Header.Get("X-Test"),
		ID: httpx.Param(r, "id")}
	if p := auth.FromContext(r.Context()); p != nil {
		s.HasPrincipal, s.Tenant = true, p.Tenant.ID
	}
	if info := httpx.InfoFrom(r.Context()); info.RequestID != "" {
		s.HasInfo, s.RequestID = true, info.RequestID
	}
	return s
}

func TestBuild(t *testing.T) {
	acme := &auth.Principal{Tenant: &auth.Tenant{ID: "acme"}, Role: auth.RoleMember}
	tests := []struct {
		name string
		q    testkit.Request
		want sent
	}{
		{"no body", testkit.Request{Method: "GET", Target: "/v1/memory?visibility=private"},
			sent{Method: "GET", Path: "/v1/memory?visibility=private", HasInfo: true, RequestID: testkit.RequestID}},
		{"string body verbatim", testkit.Request{Method: "POST", Target: "/x", Body: `{"a":`},
			sent{Method: "POST", Path: "/x", Body: `{"a":`, ContentType: "application/json", HasInfo: true, RequestID: testkit.RequestID}},
		{"bytes body verbatim", testkit.Request{Method: "POST", Target: "/x", Body: []byte("raw")},
			sent{Method: "POST", Path: "/x", Body: "raw", ContentType: "application/json", HasInfo: true, RequestID: testkit.RequestID}},
		{"value body as JSON", testkit.Request{Method: "PUT", Target: "/x", Body: map[string]any{"k": 1}},
			sent{Method: "PUT", Path: "/x", Body: `{"k":1}`, ContentType: "application/json", HasInfo: true, RequestID: testkit.RequestID}},
		{"user, headers and principal", testkit.Request{Method: "POST", Target: "/x", User: "alice", Body: "",
			Header: http.Header{"X-Test": {"1"}, "content-type": {"text/plain"}}, Principal: acme},
			sent{Method: "POST", Path: "/x", ContentType: "text/plain", User: "alice", X: "1",
				HasPrincipal: true, Tenant: "acme", HasInfo: true, RequestID: testkit.RequestID}},
		{"header overrides user", testkit.Request{Method: "GET", Target: "/x", User: "alice",
			Header: http.Header{httpx.HeaderUserID: {"bob"}}},
			sent{Method: "GET", Path: "/x", User: "bob", HasInfo: true, RequestID: testkit.RequestID}},
		{"path parameters", testkit.Request{Method: "GET", Target: "/x/7", Params: httprouter.Params{{Key: "id", Value: "7"}}},
			sent{Method: "GET", Path: "/x/7", ID: "7", HasInfo: true, RequestID: testkit.RequestID}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got sent
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = see(r) })
			testkit.Serve(t, h, tc.q)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("request mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildBodyThatDoesNotEncode(t *testing.T) {
	q := testkit.Request{Method: "POST", Target: "/x", Body: func() {}}
	if _, err := q.Build(); err == nil {
		t.Error("Build of a func body: no error")
	}
	rt := &recordingT{TB: t}
	testkit.NewRequest(rt, q)
	if rt.fatal == "" {
		t.Error("NewRequest of a func body did not fail the test")
	}
}

func TestDecode(t *testing.T) {
	answer := func(status int, ct, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(status)
			io.WriteString(w, body)
		})
	}
	tests := []struct {
		name   string
		h      http.Handler
		status int
		want   map[string]any
		fails  bool
	}{
		{"ok", answer(200, "application/json", `{"a":1}`), 200, map[string]any{"a": 1.0}, false},
		{"other status", answer(201, "application/json", `{"a":1}`), 200, nil, true},
		{"not JSON", answer(200, "application/json", `{`), 200, nil, true},
		{"not application/json", answer(200, "text/plain", `{}`), 200, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := &recordingT{TB: t}
			var got map[string]any
			testkit.Decode(rt, testkit.Serve(t, tc.h, testkit.Request{Method: "GET", Target: "/"}), tc.status, &got)
			if failed := rt.fatal != ""; failed != tc.fails {
				t.Fatalf("failed = %v (%s), want %v", failed, rt.fatal, tc.fails)
			}
			if diff := cmp.Diff(tc.want, got); !tc.fails && diff != "" {
				t.Errorf("Decode mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeStrict(t *testing.T) {
	type pinned struct {
		A int `json:"a"`
	}
	tests := []struct {
		name, body string
		want       pinned
		fails      bool
	}{
		{"every member known", `{"a":1}`, pinned{A: 1}, false},
		{"unknown member", `{"a":1,"b":2}`, pinned{}, true},
		{"not JSON", `{`, pinned{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.body)
			})
			rt := &recordingT{TB: t}
			var got pinned
			testkit.DecodeStrict(rt, testkit.Serve(t, h, testkit.Request{Method: "GET", Target: "/"}), 200, &got)
			if failed := rt.fatal != ""; failed != tc.fails {
				t.Fatalf("failed = %v (%s), want %v", failed, rt.fatal, tc.fails)
			}
			if !tc.fails {
				testkit.Diff(t, "DecodeStrict", tc.want, got)
			}
		})
	}
}

func TestServeJSON(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, r, errcat.New(errcat.IndexNotFound, "id", "No index."))
	})
	status, body := testkit.ServeJSON(t, h, testkit.Request{Method: "GET", Target: "/"})
	testkit.Diff(t, "error", testkit.WantError(errcat.IndexNotFound, "id"), testkit.ErrorOf(t, status, body))
}

func TestErrorOf(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   any
		want   testkit.Error
		fails  bool
	}{
		{"200 is no error", 200, []byte(`{"error":{"code":"x"}}`), testkit.Error{}, false},
		{"bytes", 400, []byte(`{"error":{"code":"invalid_field","param":"body.x"}}`),
			testkit.WantError(errcat.InvalidField, "body.x"), false},
		{"string", 404, `{"error":{"code":"index_not_found","param":"id"}}`,
			testkit.WantError(errcat.IndexNotFound, "id"), false},
		{"decoded value, null param", 500, map[string]any{"error": map[string]any{"code": "storage_error", "param": nil}},
			testkit.WantError(errcat.StorageError, ""), false},
		{"no envelope", 201, []byte(`{"id":"x"}`), testkit.Error{Status: 201}, false},
		{"not JSON", 502, []byte(`Bad Gateway`), testkit.Error{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := &recordingT{TB: t}
			got := testkit.ErrorOf(rt, tc.status, tc.body)
			if failed := rt.fatal != ""; failed != tc.fails {
				t.Fatalf("failed = %v (%s), want %v", failed, rt.fatal, tc.fails)
			}
			if diff := cmp.Diff(tc.want, got); !tc.fails && diff != "" {
				t.Errorf("ErrorOf mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseSSE(t *testing.T) {
	tests := []struct {
		name, body string
		want       []testkit.Event
	}{
		{"chunks and done", "data: {\"a\":1}\n\ndata: [DONE]\n\n",
			[]testkit.Event{{Data: `{"a":1}`}, {Data: "[DONE]"}}},
		{"named event, comments, ids", ": keepalive\n\nevent: gw.notice\nid: 7\ndata: {}\n\n: bye\n\n",
			[]testkit.Event{{Type: "gw.notice", Data: "{}"}}},
		{"data lines joined, no space after the colon", "data:a\ndata: b\n\n",
			[]testkit.Event{{Data: "a\nb"}}},
		{"CRLF", "event: gw.error\r\ndata: x\r\n\r\n",
			[]testkit.Event{{Type: "gw.error", Data: "x"}}},
		{"last event without its blank line", "data: 1\n\ndata: 2\n",
			[]testkit.Event{{Data: "1"}, {Data: "2"}}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, testkit.ParseSSE(t, tc.body)); diff != "" {
				t.Errorf("ParseSSE mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseSSEFails(t *testing.T) {
	for name, body := range map[string]string{
		"cut inside a line": "data: 1\n\ndata: 2",
		"event over 16 MiB": "data: " + strings.Repeat("x", 17<<20) + "\n\n",
	} {
		rt := &recordingT{TB: t}
		testkit.ParseSSE(rt, body)
		if rt.fatal == "" {
			t.Errorf("%s: ParseSSE did not fail the test", name)
		}
	}
}

func TestContent(t *testing.T) {
	chunk := func(s string) testkit.Event {
		return testkit.Event{Data: `{"choices":[{"index":0,"delta":{"content":"` + s + `"}}]}`}
	}
	events := []testkit.Event{chunk("Bon"), {Type: "gw.notice", Data: `{"choices":[{"delta":{"content":"no"}}]}`},
		chunk("jour"), {Data: "[DONE]"}}
	if got := testkit.Content(t, events); got != "Bonjour" {
		t.Errorf("Content = %q, want Bonjour", got)
	}
	rt := &recordingT{TB: t}
	testkit.Content(rt, []testkit.Event{{Data: "not json"}})
	if rt.fatal == "" {
		t.Error("Content of a chunk that is not JSON did not fail the test")
	}
}

func TestDiff(t *testing.T) {
	rt := &recordingT{TB: t}
	testkit.Diff(rt, "same", []int{1}, []int{1})
	if rt.errors != "" {
		t.Errorf("Diff of equal values reported %q", rt.errors)
	}
	testkit.Diff(rt, "list", []int{1}, []int{2})
	if !strings.HasPrefix(rt.errors, "list mismatch (-want +got):\n") || !strings.Contains(rt.errors, "-") {
		t.Errorf("Diff of different values reported %q", rt.errors)
	}
}

func TestAnswers(t *testing.T) {
	read := func(r io.Reader) string {
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	stream := testkit.SSEAnswer(testkit.Chunk(`{"content":"hi"}`, ""), testkit.Chunk(`{}`, "stop"))
	events := testkit.ParseSSE(t, read(stream.Body))
	testkit.Diff(t, "stream", []any{200, "text/event-stream", "hi", 3, "[DONE]"},
		[]any{stream.StatusCode, stream.Header.Get("Content-Type"), testkit.Content(t, events), len(events), events[2].Data})
	if !strings.Contains(events[1].Data, `"finish_reason":"stop"`) || !strings.Contains(events[0].Data, `"finish_reason":null`) {
		t.Errorf("finish reasons of %v", events)
	}
	completion := testkit.JSONAnswer(testkit.Completion(`{"role":"assistant","content":"ok"}`, "length"))
	var c struct {
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.Unmarshal([]byte(read(completion.Body)), &c); err != nil || len(c.Choices) != 1 {
		t.Fatalf("completion: %v", err)
	}
	testkit.Diff(t, "completion", []any{200, "application/json", "ok", "length"},
		[]any{completion.StatusCode, completion.Header.Get("Content-Type"), c.Choices[0].Message.Content, c.Choices[0].FinishReason})
}

func TestClient(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, r *http.Request) { httpx.WriteJSON(w, 200, map[string]any{"a": 1}) })
	mux.HandleFunc("GET /missing", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, r, errcat.New(errcat.DocumentNotFound, "doc_id", "No such document."))
	})
	c := &testkit.Client{T: t, H: mux}
	testkit.Diff(t, "OK", map[string]any{"a": 1.0}, c.OK(testkit.Request{Method: "GET", Target: "/ok"}))
	c.Fails(testkit.Request{Method: "GET", Target: "/missing"}, testkit.WantError(errcat.DocumentNotFound, "doc_id"))

	var inner testing.TB
	c.Run(t, "sub", func(t *testing.T) {
		inner = c.T
		if c.T != t {
			t.Error("c.T is not the subtest while it runs")
		}
	})
	if inner == nil || c.T != t {
		t.Error("c.T is not the test again after Run")
	}
	rt := &recordingT{TB: t}
	c.T = rt
	c.Fails(testkit.Request{Method: "GET", Target: "/ok"}, testkit.WantError(errcat.DocumentNotFound, "doc_id"))
	if !strings.Contains(rt.errors, "GET /ok error mismatch (-want +got):") {
		t.Errorf("Fails of a success reported %q", rt.errors)
	}
}

func TestRouter(t *testing.T) {
	param := func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, 200, map[string]string{"method": r.Method, "id": httpx.Param(r, "id")})
	}
	h := testkit.Router(t, map[string]http.HandlerFunc{"GET /x/:id": param, "DELETE /x/:id": param})
	for _, method := range []string{"GET", "DELETE"} {
		var got map[string]string
		testkit.Decode(t, testkit.Serve(t, h, testkit.Request{Method: method, Target: "/x/7"}), 200, &got)
		testkit.Diff(t, method, map[string]string{"method": method, "id": "7"}, got)
	}
	if w := testkit.Serve(t, h, testkit.Request{Method: "POST", Target: "/x/7"}); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /x/7 answered %d, want 405", w.Code)
	}
	rt := &recordingT{TB: t}
	testkit.Router(rt, map[string]http.HandlerFunc{"/x": param})
	if rt.fatal == "" {
		t.Error("Router of a key without a method did not fail the test")
	}
}

func TestCallAndMember(t *testing.T) {
	var got []*auth.Principal
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, auth.FromContext(r.Context()))
		httpx.WriteJSON(w, 200, map[string]any{"data": []any{"x"}})
	})
	c := &testkit.Client{T: t, H: h}
	list := c.OK(testkit.Call{Method: "GET", Target: "/x"})
	c.Deny = []string{"memory:write"}
	c.JSON(testkit.Call{Method: "GET", Target: "/x", Tenant: "globex"})
	c.JSON(testkit.Request{Method: "GET", Target: "/x", Principal: testkit.Member(&auth.Tenant{ID: "initech"})})
	want := []*auth.Principal{
		{TokenID: testkit.TokenID, Tenant: &auth.Tenant{ID: testkit.DefaultTenant}, Role: auth.RoleMember},
		{TokenID: testkit.TokenID, Tenant: &auth.Tenant{ID: "globex"}, Role: auth.RoleMember, Deny: []string{"memory:write"}},
		{TokenID: testkit.TokenID, Tenant: &auth.Tenant{ID: "initech"}, Role: auth.RoleMember}, // a Request is sent as it is
	}
	testkit.Diff(t, "principals", want, got)
	testkit.Diff(t, "Data", []any{"x"}, testkit.Data(list))
	if testkit.Field("not an object", "data") != nil || testkit.Data(nil) != nil {
		t.Error("Field or Data of a value that is not an object is not nil")
	}
}

func TestBuildReaderBody(t *testing.T) {
	var got sent
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = see(r) })
	testkit.Serve(t, h, testkit.Request{Method: "POST", Target: "/x", Body: io.MultiReader(strings.NewReader("a"), strings.NewReader("b"))})
	if got.Body != "ab" || got.ContentType != "application/json" {
		t.Errorf("reader body sent as %q, Content-Type %q", got.Body, got.ContentType)
	}
}

func TestCheckError(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, r, errcat.New(errcat.DocumentNotFound, "doc_id", "No such document."))
	})
	w := testkit.Serve(t, h, testkit.Request{Method: "GET", Target: "/x"})
	testkit.CheckError(t, w, testkit.WantError(errcat.DocumentNotFound, "doc_id"))
	rt := &recordingT{TB: t}
	testkit.CheckError(rt, w, testkit.WantError(errcat.InvalidField, "doc_id"))
	if !strings.Contains(rt.errors, "error mismatch (-want +got):") {
		t.Errorf("CheckError of another error reported %q", rt.errors)
	}
}

func TestGolden(t *testing.T) {
	t.Chdir(t.TempDir())
	rt := &recordingT{TB: t}
	testkit.Golden(rt, "a.txt", "one", false)
	if !strings.Contains(rt.fatal, "go test -update") {
		t.Errorf("Golden without the file: fatal %q", rt.fatal)
	}
	testkit.Golden(t, "a.txt", "one", true) // writes testdata/a.txt
	testkit.Golden(t, "a.txt", "one", false)
	rt = &recordingT{TB: t}
	testkit.Golden(rt, "a.txt", "two", false)
	if !strings.Contains(rt.errors, "a.txt mismatch (-want +got):") {
		t.Errorf("Golden of other text reported %q", rt.errors)
	}
}

// TestBuffer: writers and a reader at once.
func TestBuffer(t *testing.T) {
	var b testkit.Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprint(&b, "x")
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := len(b.String()); got != 400 {
		t.Errorf("len = %d, want 400", got)
	}
}

// TestFake: a Fake answers its n-th call with its n-th answer, the last one
// when it has fewer (a "Hello!" completion without any), and records the
// bodies.
func TestFake(t *testing.T) {
	read := func(f *testkit.Fake) string {
		t.Helper()
		resp, err := f.Do(t.Context(), &upstream.Request{Body: []byte(`{"n":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := read(&testkit.Fake{}); !strings.Contains(got, "Hello!") {
		t.Errorf("without answers: %s, want the Hello! completion", got)
	}
	f := &testkit.Fake{}
	f.Add(testkit.JSON(`{"a":1}`), testkit.Stream(testkit.Transcript(`{"b":2}`)))
	var got []string
	for range 3 {
		got = append(got, read(f))
	}
	stream := "data: {\"b\":2}\n\ndata: [DONE]\n\n"
	if diff := cmp.Diff([]string{`{"a":1}`, stream, stream}, got); diff != "" {
		t.Errorf("answers mismatch (-want +got):\n%s", diff)
	}
	if f.Calls() != 3 || f.Last(t) != "{\n  \"n\": 1\n}\n" {
		t.Errorf("Calls() = %d, Last() = %q", f.Calls(), f.Last(t))
	}
}

func TestMemStore(t *testing.T) {
	var st *memstore.Store
	t.Run("sub", func(t *testing.T) {
		st = testkit.MemStore(t)
		if err := st.View(context.Background(), func(store.Tx) error { return nil }); err != nil {
			t.Fatalf("View of a fresh store: %v", err)
		}
	})
	if err := st.View(context.Background(), func(store.Tx) error { return nil }); err == nil {
		t.Error("View after the test ended: no error, want the store closed")
	}
}

func TestTenantOf(t *testing.T) {
	globex := &auth.Tenant{ID: "globex", Settings: auth.Settings{CloudDocConsent: true}}
	known := map[string]*auth.Tenant{"globex": globex}
	for _, tc := range []struct {
		name, header string
		want         *auth.Tenant
		ok           bool
	}{
		{"no header: the default", "", &auth.Tenant{ID: "t1"}, false},
		{"known", "globex", globex, true},
		{"unknown", "initech", &auth.Tenant{ID: "initech"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testkit.NewRequest(t, testkit.Request{Method: "GET", Target: "/",
				Header: http.Header{testkit.HeaderTenant: {tc.header}}})
			if tc.header == "" {
				r.Header.Del(testkit.HeaderTenant)
			}
			got, ok := testkit.TenantOf(r, "t1", known)
			testkit.Diff(t, "tenant", tc.want, got)
			if ok != tc.ok {
				t.Errorf("ok = %v, want %v", ok, tc.ok)
			}
		})
	}
}

// TestFakeReceived: a Fake records each call's context and request (its
// body a copy), and a Fail answer fails the call with its error.
func TestFakeReceived(t *testing.T) {
	f := &testkit.Fake{}
	down := errcat.New(errcat.UpstreamUnavailable, "", "down")
	f.Add(testkit.JSON(`{}`), testkit.Fail(down))
	ctx, cancel := context.WithCancel(t.Context())
	body := []byte(`{"n":1}`)
	resp, err := f.Do(ctx, &upstream.Request{Alias: "lm", Path: "/chat/completions", Stream: true, Body: body})
	if err != nil || resp.RouterAlias != "scout-local" || resp.Provider != "local" {
		t.Fatalf("first call: %+v, %v; want the JSON answer of scout-local", resp, err)
	}
	body[0] = '['
	if _, err := f.Do(t.Context(), &upstream.Request{Alias: "lm"}); err != down {
		t.Errorf("second call: %v, want the Fail answer's error", err)
	}
	calls := f.Received()
	cancel()
	if len(calls) != 2 || calls[0].Ctx.Err() == nil || calls[1].Ctx.Err() != nil {
		t.Fatalf("Received() = %+v; want 2 calls, the first with the cancelled context", calls)
	}
	want := upstream.Request{Alias: "lm", Path: "/chat/completions", Stream: true, Body: []byte(`{"n":1}`)}
	testkit.Diff(t, "first request", want, calls[0].Req)
}

// TestChatCatalog: the shared catalog's aliases, backends and floor.
func TestChatCatalog(t *testing.T) {
	cat := testkit.ChatCatalog()
	var aliases []string
	for _, m := range cat.Models {
		aliases = append(aliases, m.Alias)
	}
	testkit.Diff(t, "aliases", []string{"lm-4-scout", "lm-4-scout-local", "lm-text", "lm-reason", "lm-embed"}, aliases)
	want := []upstream.BackendInfo{{Provider: "local", RouterAlias: "scout-local", Status: upstream.StatusAvailable},
		{Provider: "cloudA", RouterAlias: "scout-clouda", Status: upstream.StatusAvailable}}
	testkit.Diff(t, "lm-4-scout backends", want, cat.Models[0].Backends)
	if m := cat.Models[3]; m.Constraints.MinMaxTokens == nil || *m.Constraints.MinMaxTokens != 200 {
		t.Errorf("lm-reason constraints %+v, want max_tokens floored to 200", m.Constraints)
	}
	if testkit.ChatCatalog() == cat {
		t.Error("ChatCatalog returned the same catalog twice")
	}
}

// TestCutStore: a cut store refuses writes without running them and
// serves reads; once restored it writes again.
func TestCutStore(t *testing.T) {
	cs := &testkit.CutStore{Store: memstore.New()}
	put := func(tx store.Tx) error { return tx.Put([]byte("b"), []byte("k"), []byte("v")) }
	cs.Cut.Store(true)
	if err := cs.Update(t.Context(), put); err != testkit.ErrCut {
		t.Errorf("cut Update: %v, want ErrCut", err)
	}
	if err := cs.Batch(t.Context(), put); err != testkit.ErrCut {
		t.Errorf("cut Batch: %v, want ErrCut", err)
	}
	if err := cs.View(t.Context(), func(store.Tx) error { return nil }); err != nil {
		t.Errorf("cut View: %v, want reads to go on", err)
	}
	cs.Cut.Store(false)
	if err := cs.Update(t.Context(), put); err != nil {
		t.Errorf("restored Update: %v", err)
	}
	if err := cs.Batch(t.Context(), put); err != nil {
		t.Errorf("restored Batch: %v", err)
	}
}

// TestIndent: a JSON answer indented, with a final line break.
func TestIndent(t *testing.T) {
	w := httptest.NewRecorder()
	w.WriteString(`{"a":[1]}` + "\n")
	if got := testkit.Indent(t, w); got != "{\n  \"a\": [\n    1\n  ]\n}\n" {
		t.Errorf("Indent() = %q", got)
	}
	rt := &recordingT{TB: t}
	w = httptest.NewRecorder()
	w.WriteString("not json")
	testkit.Indent(rt, w)
	if rt.fatal == "" {
		t.Error("Indent of a body that is not JSON did not fail")
	}
}

// TestFallback: the answer comes from cloudA's scout-cloudA, marked as a
// fallback; a failed answer stays failed.
func TestFallback(t *testing.T) {
	resp, err := testkit.Fallback(testkit.JSON(`{}`))()
	if err != nil || !resp.Fallback || resp.Provider != "cloudA" || resp.RouterAlias != "scout-cloudA" || resp.StatusCode != 200 {
		t.Errorf("Fallback(JSON) = %+v, %v; want a 200 of cloudA's scout-cloudA, marked as a fallback", resp, err)
	}
	down := errors.New("down")
	if resp, err := testkit.Fallback(testkit.Fail(down))(); resp != nil || err != down {
		t.Errorf("Fallback(Fail) = %+v, %v; want the failure", resp, err)
	}
}
