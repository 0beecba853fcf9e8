package gateway

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/chatgw/gateway/store/memstore"
	"github.com/google/go-cmp/cmp"
)

// TestMethodNotAllowed: a known path asked with a method none of its routes
// serves answers 405 method_not_allowed before authentication, with an Allow
// header that lists the path's methods and nothing else (not OPTIONS, which
// the gateway does not serve; HEAD is not served either).
func TestMethodNotAllowed(t *testing.T) {
	routes := append([]route{
		{"DELETE", "/t/open", "", userOptional, echo, nil},
		{"GET", "/t/items/:id", "", userOptional, echo, nil},
		{"PUT", "/t/items/:id/current/:n", "", userOptional, echo, nil},
	}, testRoutes...)
	tests := []struct {
		name       string
		req        req
		want       string
		wantAllow  string
		wantVaryID bool
	}{
		{"three methods", req{method: "PUT", path: "/t/open"}, "405 method_not_allowed", "DELETE, GET, POST", false},
		{"with a token", req{method: "PATCH", path: "/t/open", token: "member"}, "405 method_not_allowed", "DELETE, GET, POST", false},
		{"path parameter", req{method: "POST", path: "/t/items/7"}, "405 method_not_allowed", "GET", false},
		{"two path parameters", req{method: "GET", path: "/t/items/7/current/2"}, "405 method_not_allowed", "PUT", false},
		{"public path", req{method: "DELETE", path: "/t/public"}, "405 method_not_allowed", "GET", false},
		{"HEAD is not served", req{method: "HEAD", path: "/t/public"}, "405 method_not_allowed", "GET", false},
		{"OPTIONS is not served", req{method: "OPTIONS", path: "/t/open"}, "405 method_not_allowed", "DELETE, GET, POST", false},
		{"an unknown method", req{method: "BREW", path: "/t/open"}, "405 method_not_allowed", "DELETE, GET, POST", false},
		{"unknown path", req{method: "PUT", path: "/t/nope"}, "404 route_not_found", "", false},
		{"OPTIONS of an unknown path", req{method: "OPTIONS", path: "/t/nope"}, "404 route_not_found", "", false},
		{"served method", req{method: "GET", path: "/t/items/7", token: "member"}, "200", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, routes)
			w := h.do(t, tt.req)
			got := []any{summary(t, w.Code, w.Body.Bytes()), w.Header().Get("Allow"), w.Header().Get("Vary") != ""}
			want := []any{tt.want, tt.wantAllow, tt.wantVaryID}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answer, Allow, Vary mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// summary is "status code" of an answer, or "status" alone when it has no
// body.
func summary(t *testing.T, status int, body []byte) string {
	t.Helper()
	s := strconv.Itoa(status)
	if status < 400 || len(body) == 0 {
		return s
	}
	var e errBody
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return s + " " + e.Error.Code
}

// TestUnknownRouteLogLine: the log line of a 404 route_not_found and of a
// 405 carries the path asked (no route template names it), escaped, without
// the query; a routed request's line has no path.
func TestUnknownRouteLogLine(t *testing.T) {
	tests := []struct {
		name     string
		req      req
		wantPath any // nil: no path member
	}{
		{"unknown path", req{method: "GET", path: "/v1/nope?api_key=s3cret"}, "/v1/nope"},
		{"wrong method", req{method: "DELETE", path: "/t/open?token=s3cret", token: "member"}, "/t/open"},
		{"control characters", req{method: "GET", path: "/a%0A%7B%22level%22:%22ERROR%22%7D%0D%00"}, "/a%0A%7B%22level%22:%22ERROR%22%7D%0D%00"},
		{"routed", req{method: "GET", path: "/t/open?x=1", token: "member"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, testRoutes)
			h.do(t, tt.req)
			line := h.logLine(t)
			if diff := cmp.Diff(tt.wantPath, line["path"]); diff != "" {
				t.Errorf("path mismatch (-want +got):\n%s\nline %s", diff, h.logs)
			}
			if strings.Contains(h.logs.String(), "s3cret") {
				t.Errorf("the query reached the log: %s", h.logs)
			}
		})
	}
}

func TestLoggedPath(t *testing.T) {
	long := "/" + strings.Repeat("a", 300)
	tests := []struct {
		name, target, want string
	}{
		{"plain", "/v1/nope", "/v1/nope"},
		{"query dropped", "/v1/nope?key=v&x", "/v1/nope"},
		{"non-ASCII escaped", "/v1/zo%C3%AB", "/v1/zo%C3%AB"},
		{"controls escaped", "/a%0Ab%7F%1B", "/a%0Ab%7F%1B"},
		{"secret in the path redacted", "/v1/api_key=sk-abcdefghijklmnop", "/v1/api_key=[redacted]"},
		{"bounded", long, long[:maxLoggedPath] + "..."},
		{"not cut inside an escape", "/" + strings.Repeat("a", maxLoggedPath-3) + "%0A" + "bbb", "/" + strings.Repeat("a", maxLoggedPath-3) + "..."},
		{"an escape that fits stays", "/" + strings.Repeat("a", maxLoggedPath-4) + "%0A" + "bbb", "/" + strings.Repeat("a", maxLoggedPath-4) + "%0A..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.target, nil)
			if diff := cmp.Diff(tt.want, loggedPath(r)); diff != "" {
				t.Errorf("loggedPath(%q) mismatch (-want +got):\n%s", tt.target, diff)
			}
		})
	}
}

// TestREADMEListsEveryPublicPage: the README's Quick start names every
// public route of the table, so that a new public page is findable by a
// new user (issue 16 item 8); /docs/*path is its two pages.
func TestREADMEListsEveryPublicPage(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(readme, []byte("## Quick start"))
	end := bytes.Index(readme, []byte("## Running the tests"))
	if start < 0 || end < start {
		t.Fatal("README has no Quick start section followed by Running the tests")
	}
	quick := string(readme[start:end])
	g, err := New(WithTokenCatalog(newMapCatalog(nil)), WithStore(memstore.New()), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	for _, rt := range g.routes() {
		if rt.user != public {
			continue
		}
		pages := []string{rt.path}
		if rt.path == "/docs/*path" {
			pages = []string{"/docs/errors", "/docs/api/"}
		}
		for _, p := range pages {
			if !strings.Contains(quick, "`"+p+"`") {
				t.Errorf("README's Quick start does not list the public page `%s`", p)
			}
		}
	}
}
