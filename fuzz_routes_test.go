package gateway_test

import (
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/store/memstore"
)

// TestFuzzRoutesCoverTheRouteTable fails when a route of the gateway's table
// has no seed in FuzzRoutes' corpus (fuzzRoutes), so that a new route is
// fuzzed from the day it is routed, and when a row of fuzzRoutes reaches no
// route, so that a renamed route does not leave its seeds testing a 404.
func TestFuzzRoutesCoverTheRouteTable(t *testing.T) {
	tokens := auth.MustStatic([]*auth.Tenant{{ID: "acme"}},
		map[string]auth.StaticToken{"tok": {Tenant: "acme", Role: auth.RoleMember}})
	g, err := gateway.New(gateway.WithTokenCatalog(tokens), gateway.WithStore(memstore.New()),
		gateway.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	patterns := gateway.RoutePatterns(g)

	seeded := map[string]bool{}
	for _, rt := range fuzzRoutes {
		reached := false
		for _, target := range seedTargets(rt) {
			for _, p := range patterns {
				if routeMatches(p, rt.method, target) {
					seeded[p], reached = true, true
				}
			}
		}
		if !reached {
			t.Errorf("fuzzRoutes row %s %s%s reaches no route of the table", rt.method, rt.path, rt.suffix)
		}
	}
	for _, p := range patterns {
		if !seeded[p] {
			t.Errorf("route %s has no seed in FuzzRoutes' corpus: add a row to fuzzRoutes (fuzz_test.go)", p)
		}
	}
}

// seedTargets returns the paths FuzzRoutes sends the seeds of rt to (before
// a1Segment replaces the placeholders, which stay one path segment).
func seedTargets(rt fuzzRoute) []string {
	if !rt.pathParam {
		return []string{rt.path}
	}
	segs := rt.segs
	if len(segs) == 0 {
		segs = rt.seeds
	}
	var out []string
	for _, seg := range segs {
		out = append(out, rt.path+url.PathEscape(seg)+rt.suffix)
	}
	return out
}

// routeMatches reports whether a request of method to target reaches the
// route pattern ("METHOD /path" with httprouter's :name and *name), as
// httprouter matches the request's decoded path.
func routeMatches(pattern, method, target string) bool {
	pm, ppath, _ := strings.Cut(pattern, " ")
	u, err := url.Parse(target)
	if pm != method || err != nil {
		return false
	}
	want, got := strings.Split(ppath, "/"), strings.Split(u.Path, "/")
	for i, w := range want {
		switch {
		case strings.HasPrefix(w, "*"):
			return i <= len(got)
		case i >= len(got):
			return false
		case strings.HasPrefix(w, ":"):
			if got[i] == "" {
				return false
			}
		case w != got[i]:
			return false
		}
	}
	return len(got) == len(want)
}

func TestRouteMatches(t *testing.T) {
	tests := []struct {
		pattern, method, target string
		want                    bool
	}{
		{"GET /v1/models", "GET", "/v1/models", true},
		{"GET /v1/models", "POST", "/v1/models", false},
		{"GET /v1/models", "GET", "/v1/models/x", false},
		{"GET /v1/images/:id", "GET", "/v1/images/img_1", true},
		{"GET /v1/images/:id", "GET", "/v1/images/", false},
		{"GET /v1/images/:id", "GET", "/v1/images/a%2Fb", false}, // decoded: two segments
		{"GET /v1/images/:id/content", "GET", "/v1/images/img_1/content", true},
		{"GET /docs/*path", "GET", "/docs/errors", true},
		{"GET /docs/*path", "GET", "/docs/", true},
		{"GET /", "GET", "/", true},
		{"GET /", "GET", "/healthz", false},
	}
	for _, tc := range tests {
		if got := routeMatches(tc.pattern, tc.method, tc.target); got != tc.want {
			t.Errorf("routeMatches(%q, %s %s) = %v, want %v", tc.pattern, tc.method, tc.target, got, tc.want)
		}
	}
}
