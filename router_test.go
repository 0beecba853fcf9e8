package gateway

import (
	"encoding/json"
	"strconv"
	"testing"

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
