package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/ratelimit"
	"github.com/google/go-cmp/cmp"
)

// mapCatalog is a TokenCatalog over plain tokens, for tests.
type mapCatalog map[auth.Digest]*auth.Principal

func (m mapCatalog) Lookup(d auth.Digest) (*auth.Principal, bool) {
	p, ok := m[d]
	return p, ok
}

func newMapCatalog(tokens map[string]*auth.Principal) mapCatalog {
	m := mapCatalog{}
	for tok, p := range tokens {
		p.Digest = auth.DigestOf(tok)
		m[p.Digest] = p
	}
	return m
}

type harness struct {
	g     *Gateway
	clock *clock.Fake
	logs  *bytes.Buffer
}

// newHarness builds a gateway whose surface is routes, with tokens
// admin (tenant_admin of acme), member (member of acme), other (member of beta).
// logLine decodes the one log line the harness holds.
func (h *harness) logLine(t *testing.T) map[string]any {
	t.Helper()
	var line map[string]any
	if err := json.Unmarshal(h.logs.Bytes(), &line); err != nil {
		t.Fatalf("log line: %v: %s", err, h.logs)
	}
	return line
}

func newHarness(t *testing.T, routes []route) *harness {
	t.Helper()
	acme, beta := &auth.Tenant{ID: "acme"}, &auth.Tenant{ID: "beta"}
	cat := newMapCatalog(map[string]*auth.Principal{
		"admin":  {Tenant: acme, Role: auth.RoleTenantAdmin, TokenID: "admin"},
		"member": {Tenant: acme, Role: auth.RoleMember, TokenID: "member"},
		"other":  {Tenant: beta, Role: auth.RoleMember, TokenID: "other"},
		"fast":   {Tenant: acme, Role: auth.RoleMember, Rate: &auth.Rate{PerSecond: 1000, Burst: 1000}},
	})
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	logs := &bytes.Buffer{}
	cfg := defaultConfig()
	cfg.tokens, cfg.clock = cat, fc
	cfg.rate = auth.Rate{PerSecond: 1, Burst: 3}
	cfg.bodyLimit = 64
	g := &Gateway{cfg: cfg, log: slog.New(slog.NewJSONHandler(logs, nil))}
	g.limiter = ratelimit.NewLocal(fc)
	g.router = g.buildRouter(routes)
	return &harness{g: g, clock: fc, logs: logs}
}

func echo(w http.ResponseWriter, r *http.Request) {
	b, err := httpx.ReadBody(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	p := auth.FromContext(r.Context())
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"tenant": p.Tenant.ID, "user": httpx.UserID(r), "body": len(b)})
}

var testRoutes = []route{
	{"GET", "/t/open", "", userOptional, echo, nil},
	{"POST", "/t/open", "", userOptional, echo, nil},
	{"GET", "/t/user", "", userRequired, echo, nil},
	{"GET", "/t/admin-view", "", userOrAdminRead, echo, nil},
	{"POST", "/t/admin-view", "", userOrAdminRead, echo, nil},
	{"GET", "/t/scoped", "tenant_config:write", userOptional, echo, nil},
	{"PUT", "/t/prompts/:level", "system_prompts:write:{level}", userOptional, echo, nil},
	{"GET", "/t/panic", "", userOptional, func(http.ResponseWriter, *http.Request) { panic("boom") }, nil},
	{"GET", "/t/public", "", public, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }, nil},
}

type req struct {
	method, path, token, body string
	header                    map[string]string
}

type errBody struct {
	Error struct {
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	} `json:"error"`
	GWCode string `json:"gw_code"`
}

func (h *harness) do(t *testing.T, q req) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(q.method, q.path, strings.NewReader(q.body))
	if q.body == "" {
		r.Body = http.NoBody
	}
	if q.token != "" {
		r.Header.Set("Authorization", "Bearer "+q.token)
	}
	for k, v := range q.header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.g.ServeHTTP(w, r)
	return w
}

// codeParam returns "status code param" of an answer, "" param as "null".
func codeParam(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	if w.Code < 400 {
		return http.StatusText(w.Code)
	}
	var e errBody
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %q: %v", w.Body, err)
	}
	if e.GWCode != e.Error.Code {
		t.Errorf("gw_code %q != code %q", e.GWCode, e.Error.Code)
	}
	p := "null"
	if e.Error.Param != nil {
		p = *e.Error.Param
	}
	return strings.Join([]string{http.StatusText(w.Code), e.Error.Code, p}, " ")
}

func TestMiddlewareRules(t *testing.T) {
	tests := []struct {
		name string
		req  req
		want string
	}{
		{"no authorization", req{method: "GET", path: "/t/open"}, "Unauthorized missing_authorization headers.authorization"},
		{"not bearer", req{method: "GET", path: "/t/open", header: map[string]string{"Authorization": "Basic YTpi"}}, "Unauthorized invalid_authorization headers.authorization"},
		{"empty bearer", req{method: "GET", path: "/t/open", header: map[string]string{"Authorization": "Bearer "}}, "Unauthorized invalid_authorization headers.authorization"},
		{"unknown token", req{method: "GET", path: "/t/open", token: "nope"}, "Unauthorized invalid_authorization headers.authorization"},
		{"valid token", req{method: "GET", path: "/t/open", token: "member"}, "OK"},
		{"x-api-key alone", req{method: "GET", path: "/t/open", header: map[string]string{"X-Api-Key": "member"}}, "OK"},
		{"x-api-key unknown", req{method: "GET", path: "/t/open", header: map[string]string{"X-Api-Key": "nope"}}, "Unauthorized invalid_authorization headers.authorization"},
		{"x-api-key and the same bearer", req{method: "GET", path: "/t/open", token: "member", header: map[string]string{"X-Api-Key": "member"}}, "OK"},
		{"x-api-key and another bearer", req{method: "GET", path: "/t/open", token: "member", header: map[string]string{"X-Api-Key": "admin"}}, "Unauthorized invalid_authorization headers.authorization"},
		{"x-api-key and a bad Authorization", req{method: "GET", path: "/t/open", header: map[string]string{"Authorization": "Basic YTpi", "X-Api-Key": "member"}}, "Unauthorized invalid_authorization headers.authorization"},
		{"x-api-key of the other tenant", req{method: "GET", path: "/t/open", header: map[string]string{"X-Api-Key": "member", "GW-Tenant-Id": "beta"}}, "Unauthorized invalid_authorization headers.authorization"},
		{"tenant header bound", req{method: "GET", path: "/t/open", token: "member", header: map[string]string{"GW-Tenant-Id": "acme"}}, "OK"},
		{"tenant header other tenant", req{method: "GET", path: "/t/open", token: "member", header: map[string]string{"GW-Tenant-Id": "beta"}}, "Unauthorized invalid_authorization headers.authorization"},
		{"scope missing for member", req{method: "GET", path: "/t/scoped", token: "member"}, "Forbidden forbidden null"},
		{"scope held by admin", req{method: "GET", path: "/t/scoped", token: "admin"}, "OK"},
		{"level scope user for member", req{method: "PUT", path: "/t/prompts/user", token: "member"}, "OK"},
		{"level scope tenant for member", req{method: "PUT", path: "/t/prompts/tenant", token: "member"}, "Forbidden forbidden null"},
		{"query user_id", req{method: "GET", path: "/t/open?user_id=u1", token: "member"}, "Bad Request invalid_field query.user_id"},
		{"query user_id lookalike", req{method: "GET", path: "/t/open?xuser_id=u1", token: "member"}, "OK"},
		{"body user_id", req{method: "POST", path: "/t/open", token: "member", body: `{"a":1,"user_id":"u1"}`}, "Bad Request invalid_field body.user_id"},
		{"body user_id null", req{method: "POST", path: "/t/open", token: "member", body: `{"user_id":null}`}, "Bad Request invalid_field body.user_id"},
		{"nested user_id allowed", req{method: "POST", path: "/t/open", token: "member", body: `{"meta":{"user_id":"u1"}}`}, "OK"},
		{"user header required", req{method: "GET", path: "/t/user", token: "admin"}, "Bad Request missing_field headers.gw-user-id"},
		{"user header given", req{method: "GET", path: "/t/user", token: "member", header: map[string]string{"GW-User-Id": "u1"}}, "OK"},
		{"user header bad", req{method: "GET", path: "/t/user", token: "member", header: map[string]string{"GW-User-Id": "a\x01b"}}, "Bad Request invalid_field headers.gw-user-id"},
		{"user header not UTF-8", req{method: "GET", path: "/t/user", token: "member", header: map[string]string{"GW-User-Id": "a\xffb"}}, "Bad Request invalid_field headers.gw-user-id"},
		{"user header U+FFFD", req{method: "GET", path: "/t/user", token: "member", header: map[string]string{"GW-User-Id": "a\ufffdb"}}, "OK"},
		{"user header non-ASCII", req{method: "GET", path: "/t/user", token: "member", header: map[string]string{"GW-User-Id": "zoë"}}, "OK"},
		{"admin tenant-wide read", req{method: "GET", path: "/t/admin-view", token: "admin"}, "OK"},
		{"member needs user on read", req{method: "GET", path: "/t/admin-view", token: "member"}, "Bad Request missing_field headers.gw-user-id"},
		{"admin needs user on write", req{method: "POST", path: "/t/admin-view", token: "admin", body: `{}`}, "Bad Request missing_field headers.gw-user-id"},
		{"unknown path", req{method: "GET", path: "/nope", token: "member"}, "Not Found route_not_found null"},
		{"unknown method", req{method: "DELETE", path: "/t/open", token: "member"}, "Method Not Allowed method_not_allowed null"},
		{"unknown method before authentication", req{method: "DELETE", path: "/t/open", token: "nope"}, "Method Not Allowed method_not_allowed null"},
		{"unknown method on a public path", req{method: "POST", path: "/t/public"}, "Method Not Allowed method_not_allowed null"},
		{"unknown method over the body limit", req{method: "PUT", path: "/t/open", body: `{"a":"` + strings.Repeat("x", 100) + `"}`}, "Request Entity Too Large body_too_large null"},
		{"trailing slash is another path", req{method: "GET", path: "/t/open/", token: "member"}, "Not Found route_not_found null"},
		{"public needs no bearer", req{method: "GET", path: "/t/public"}, "No Content"},
		{"body over limit by length", req{method: "POST", path: "/t/open", token: "member", body: `{"a":"` + strings.Repeat("x", 100) + `"}`}, "Request Entity Too Large body_too_large null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, testRoutes)
			w := h.do(t, tt.req)
			if got := codeParam(t, w); got != tt.want {
				t.Errorf("answer = %q, want %q (body %s)", got, tt.want, w.Body)
			}
			if w.Header().Get("X-Request-Id") == "" {
				t.Error("no x-request-id")
			}
			if ct := w.Header().Get("Content-Type"); w.Code >= 400 && ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
}

func TestChunkedBodyOverLimit(t *testing.T) {
	h := newHarness(t, testRoutes)
	r := httptest.NewRequest("POST", "/t/open", io.MultiReader(strings.NewReader(`{"a":"`), strings.NewReader(strings.Repeat("x", 100)+`"}`)))
	r.ContentLength = -1
	r.Header.Set("Authorization", "Bearer member")
	w := httptest.NewRecorder()
	h.g.ServeHTTP(w, r)
	if got, want := codeParam(t, w), "Request Entity Too Large body_too_large null"; got != want {
		t.Errorf("answer = %q, want %q", got, want)
	}
}

func TestRateLimit(t *testing.T) {
	h := newHarness(t, testRoutes)
	for i := range 3 {
		if w := h.do(t, req{method: "GET", path: "/t/open", token: "member"}); w.Code != 200 {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	w := h.do(t, req{method: "GET", path: "/t/open", token: "member"})
	if got, want := codeParam(t, w), "Too Many Requests rate_limit_exceeded null"; got != want {
		t.Fatalf("4th request = %q, want %q", got, want)
	}
	var e errBody
	_ = json.Unmarshal(w.Body.Bytes(), &e)
	if diff := cmp.Diff([]string{"rate_limit_error", "Rate limit exceeded", "1"}, []string{e.Error.Type, e.Error.Message, w.Header().Get("Retry-After")}); diff != "" {
		t.Errorf("429 mismatch (-want +got):\n%s", diff)
	}
	// The admin token of the same tenant has its own bucket.
	if w := h.do(t, req{method: "GET", path: "/t/open", token: "admin"}); w.Code != 200 {
		t.Errorf("other token limited: %d", w.Code)
	}
	// A token's own rate wins over the default.
	for i := range 10 {
		if w := h.do(t, req{method: "GET", path: "/t/open", token: "fast"}); w.Code != 200 {
			t.Fatalf("fast token request %d: %d", i, w.Code)
		}
	}
	h.clock.Advance(time.Second)
	if w := h.do(t, req{method: "GET", path: "/t/open", token: "member"}); w.Code != 200 {
		t.Errorf("after refill: %d", w.Code)
	}
}

// failingLimiter is a limiter whose database cannot be reached.
type failingLimiter struct{}

func (failingLimiter) Allow(context.Context, auth.Digest, auth.Rate) (bool, time.Duration, error) {
	return false, 0, errors.New("dial tcp 10.0.0.9:5432: connect: connection refused")
}

// TestRateLimiterFailure checks the failure policy: a limiter that cannot
// decide fails the request closed (500 storage_error) unless the operator
// chose fail-open, which lets it through and logs once a second.
func TestRateLimiterFailure(t *testing.T) {
	for _, open := range []bool{false, true} {
		t.Run(fmt.Sprint("fail-open=", open), func(t *testing.T) {
			h := newHarness(t, testRoutes)
			h.g.limiter, h.g.cfg.rateFail = failingLimiter{}, open
			var got []string
			for range 3 {
				w := h.do(t, req{method: "GET", path: "/t/open", token: "member"})
				got = append(got, codeParam(t, w))
			}
			want := "Internal Server Error storage_error null"
			if open {
				want = "OK"
			}
			if diff := cmp.Diff([]string{want, want, want}, got); diff != "" {
				t.Errorf("answers mismatch (-want +got):\n%s", diff)
			}
			if n := strings.Count(h.logs.String(), "fail-open"); open && n != 1 {
				t.Errorf("%d fail-open log lines in one second, want 1:\n%s", n, h.logs)
			}
			h.clock.Advance(time.Second)
			h.do(t, req{method: "GET", path: "/t/open", token: "member"})
			if n := strings.Count(h.logs.String(), "fail-open"); open && n != 2 {
				t.Errorf("%d fail-open log lines after a second, want 2", n)
			}
		})
	}
}

func TestRequestID(t *testing.T) {
	h := newHarness(t, testRoutes)
	w := h.do(t, req{method: "GET", path: "/t/open", token: "member", header: map[string]string{"X-Request-Id": "abc-123"}})
	if got := w.Header().Get("X-Request-Id"); got != "abc-123" {
		t.Errorf("echoed id = %q", got)
	}
	w = h.do(t, req{method: "GET", path: "/t/open", header: map[string]string{"X-Request-Id": strings.Repeat("x", 129)}})
	if got := w.Header().Get("X-Request-Id"); !strings.HasPrefix(got, "req_") {
		t.Errorf("over-long id not replaced: %q", got)
	}
	if !strings.Contains(h.logs.String(), `"request_id":"`+w.Header().Get("X-Request-Id")+`"`) {
		t.Errorf("log lacks the request id: %s", h.logs)
	}
}

func TestPanicAnswersInternalError(t *testing.T) {
	h := newHarness(t, testRoutes)
	w := h.do(t, req{method: "GET", path: "/t/panic", token: "member"})
	if got, want := codeParam(t, w), "Internal Server Error internal_error null"; got != want {
		t.Errorf("answer = %q, want %q", got, want)
	}
	if strings.Contains(w.Body.String(), "boom") {
		t.Errorf("panic value leaked: %s", w.Body)
	}
	if !strings.Contains(h.logs.String(), "boom") {
		t.Errorf("panic not logged: %s", h.logs)
	}
}

// TestLogLine: the request line of a routed request and of one no route
// matched carry the same fields, the route's method and pattern written
// once per route for the first (RouteLog) and from the request for the
// second.
func TestLogLine(t *testing.T) {
	tests := []struct {
		name string
		req  req
		want map[string]any
	}{
		{"routed", req{method: "POST", path: "/t/open", token: "member", body: `{"secret":"hello"}`},
			map[string]any{"tenant": "acme", "method": "POST", "route": "/t/open", "status": 200.0}},
		{"no route", req{method: "PATCH", path: "/t/nowhere", token: "member", body: `{"secret":"hello"}`},
			map[string]any{"tenant": "", "method": "PATCH", "route": "", "status": 404.0, "code": "route_not_found", "path": "/t/nowhere"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, testRoutes)
			h.do(t, tt.req)
			line := h.logLine(t)
			for _, k := range []string{"request_id", "duration_ms", "bytes"} {
				if _, ok := line[k]; !ok {
					t.Errorf("log line lacks %s: %v", k, line)
				}
			}
			for k, want := range tt.want {
				if line[k] != want {
					t.Errorf("log line %s = %v, want %v", k, line[k], want)
				}
			}
			for _, secret := range []string{"member", "hello"} {
				if strings.Contains(h.logs.String(), `"`+secret+`"`) {
					t.Errorf("log leaks %q: %s", secret, h.logs)
				}
			}
		})
	}
}

// TestRouteErrorFormat: a route's error Format shapes every error the route
// answers, the middleware's (401, 403, 413, 429, 400 user rules) as its
// handler's and a panic's, with the catalog's status; other routes keep the
// envelope.
func TestRouteErrorFormat(t *testing.T) {
	format := func(p errcat.Public) []byte {
		return fmt.Appendf(nil, `{"shape":"other","status":%d,"code":%q}`, p.Status, p.Code)
	}
	fail := func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, r, errcat.New(errcat.InvalidField, "x", "bad x"))
	}
	routes := []route{
		{"POST", "/t/other", "chat:write", userOptional, fail, format},
		{"GET", "/t/other/user", "", userRequired, echo, format},
		{"GET", "/t/other/panic", "", userOptional, func(http.ResponseWriter, *http.Request) { panic("boom") }, format},
		{"GET", "/t/plain", "", userOptional, echo, nil},
	}
	tests := []struct {
		name string
		req  req
		want string
	}{
		{"missing authorization", req{method: "POST", path: "/t/other", body: "{}"}, `401 {"shape":"other","status":401,"code":"missing_authorization"}`},
		{"bad x-api-key", req{method: "POST", path: "/t/other", body: "{}", header: map[string]string{"X-Api-Key": "nope"}}, `401 {"shape":"other","status":401,"code":"invalid_authorization"}`},
		{"body user_id", req{method: "POST", path: "/t/other", token: "member", body: `{"user_id":"u"}`}, `400 {"shape":"other","status":400,"code":"invalid_field"}`},
		{"body over limit by length", req{method: "POST", path: "/t/other", token: "member", body: `{"a":"` + strings.Repeat("x", 100) + `"}`}, `413 {"shape":"other","status":413,"code":"body_too_large"}`},
		{"handler error", req{method: "POST", path: "/t/other", token: "member", body: "{}"}, `400 {"shape":"other","status":400,"code":"invalid_field"}`},
		{"user rule", req{method: "GET", path: "/t/other/user", token: "member"}, `400 {"shape":"other","status":400,"code":"missing_field"}`},
		{"panic", req{method: "GET", path: "/t/other/panic", token: "member"}, `500 {"shape":"other","status":500,"code":"internal_error"}`},
		{"other routes keep the envelope", req{method: "GET", path: "/t/plain"}, `401 {"error":{"type":"authentication_error","code":"missing_authorization","message":"The Authorization header (or x-api-key) is missing.","param":"headers.authorization","doc_url":"/docs/errors#missing_authorization"},"gw_code":"missing_authorization"}`},
		{"unknown routes keep the envelope", req{method: "POST", path: "/t/nope", body: `{"a":"` + strings.Repeat("x", 100) + `"}`}, `413 {"error":{"type":"request_too_large","code":"body_too_large","message":"Request body is larger than 64 bytes.","param":null,"doc_url":"/docs/errors#body_too_large"},"gw_code":"body_too_large"}`},
		{"wrong method", req{method: "GET", path: "/t/other"}, `405 {"shape":"other","status":405,"code":"method_not_allowed"}`},
		{"wrong method over the body limit", req{method: "PUT", path: "/t/other", body: `{"a":"` + strings.Repeat("x", 100) + `"}`}, `413 {"shape":"other","status":413,"code":"body_too_large"}`},
		{"wrong method of a path in the envelope", req{method: "DELETE", path: "/t/plain"}, `405 {"error":{"type":"invalid_request_error","code":"method_not_allowed","message":"DELETE is not allowed on /t/plain; allowed: GET.","param":null,"doc_url":"/docs/errors#method_not_allowed"},"gw_code":"method_not_allowed"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, routes)
			w := h.do(t, tt.req)
			got := strconv.Itoa(w.Code)
			if w.Code != 200 {
				got += " " + strings.TrimSpace(w.Body.String())
			}
			if got != tt.want {
				t.Errorf("answer = %s, want %s", got, tt.want)
			}
		})
	}
	// The rate limit (burst 3): 429 in the route's shape, with Retry-After.
	h := newHarness(t, routes)
	var w *httptest.ResponseRecorder
	for range 4 {
		w = h.do(t, req{method: "GET", path: "/t/other/user", token: "member"})
	}
	if got, want := strings.TrimSpace(w.Body.String()), `{"shape":"other","status":429,"code":"rate_limit_exceeded"}`; w.Code != 429 || got != want || w.Header().Get("Retry-After") == "" {
		t.Errorf("rate limit: %d %s (Retry-After %q), want 429 %s", w.Code, got, w.Header().Get("Retry-After"), want)
	}
	// A token without the route's scope: 403 in the route's shape.
	h = newHarness(t, routes)
	h.g.cfg.tokens = newMapCatalog(map[string]*auth.Principal{
		"nochat": {Tenant: &auth.Tenant{ID: "acme"}, Role: auth.RoleMember, Deny: []string{"chat:write"}},
	})
	w = h.do(t, req{method: "POST", path: "/t/other", token: "nochat", body: "{}"})
	if got, want := strings.TrimSpace(w.Body.String()), `{"shape":"other","status":403,"code":"forbidden"}`; w.Code != 403 || got != want {
		t.Errorf("no scope: %d %s, want 403 %s", w.Code, got, want)
	}
}
