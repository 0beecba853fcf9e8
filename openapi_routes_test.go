package gateway

import (
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/store/memstore"
)

// openAPIPath maps an httprouter path to its OpenAPI form: ":name" segments
// become "{name}". catchAll is true (and path the prefix before the "*name"
// segment) for a catch-all route such as /docs/*path.
func openAPIPath(path string) (out string, catchAll bool) {
	if i := strings.Index(path, "/*"); i >= 0 {
		return path[:i+1], true
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") {
			segs[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(segs, "/"), false
}

// userIDParameters names, per GW-User-Id rule, the components/parameters entry
// an operation must reference for the header ("" means: no GW-User-Id
// parameter at all).
var userIDParameters = map[userRule][]string{
	public:          {""},
	userOptional:    {"", "GwUserIdOptional"},
	userRequired:    {"GwUserIdRequired"},
	userOrAdminRead: {"GwUserIdAdminRead"},
}

// TestOpenAPIDescribesEveryRoute keeps /openapi.json and the route table from
// drifting apart: every route is described (method and path, ":name" as
// "{name}"), with the route's scope as x-gw-scope, security [] exactly on the
// public routes, and the GW-User-Id parameter of the route's user rule; and
// every described operation is routed. A catch-all route (GET /docs/*path)
// covers the described paths under its prefix, each of which must answer 200.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	tokens := auth.MustStatic([]*auth.Tenant{{ID: "acme"}},
		map[string]auth.StaticToken{"tok": {Tenant: "acme", Role: auth.RoleMember}})
	g, err := New(WithTokenCatalog(tokens), WithStore(memstore.New()), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })

	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi.json: status %d", rec.Code)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]openAPIParameter `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("GET /openapi.json: %v", err)
	}

	type operation struct {
		Security   *[]any             `json:"security"`
		Scope      string             `json:"x-gw-scope"`
		Parameters []openAPIParameter `json:"parameters"`
	}
	methods := []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}
	ops := map[string]operation{}                 // "GET /v1/images/{id}" -> operation
	pathParams := map[string][]openAPIParameter{} // path-level parameters
	for path, item := range doc.Paths {
		for m, raw := range item {
			switch {
			case m == "parameters":
				var ps []openAPIParameter
				if err := json.Unmarshal(raw, &ps); err != nil {
					t.Fatalf("paths.%s.parameters: %v", path, err)
				}
				pathParams[path] = ps
			case slices.Contains(methods, m):
				var op operation
				if err := json.Unmarshal(raw, &op); err != nil {
					t.Fatalf("paths.%s.%s: %v", path, m, err)
				}
				ops[strings.ToUpper(m)+" "+path] = op
			}
		}
	}

	// userIDParameter returns the component name of the GW-User-Id parameter
	// of the operation at path ("" when it has none).
	userIDParameter := func(key, path string, op operation) string {
		var found []string
		for _, p := range slices.Concat(pathParams[path], op.Parameters) {
			name, in := p.Name, p.In
			comp := strings.TrimPrefix(p.Ref, "#/components/parameters/")
			if p.Ref != "" {
				c, ok := doc.Components.Parameters[comp]
				if !ok {
					t.Errorf("%s: parameter %s does not resolve", key, p.Ref)
					continue
				}
				name, in = c.Name, c.In
			}
			if in == "header" && strings.EqualFold(name, "GW-User-Id") {
				found = append(found, comp)
			}
		}
		if len(found) > 1 {
			t.Errorf("%s: GW-User-Id described %d times", key, len(found))
		}
		if len(found) == 0 {
			return ""
		}
		if found[0] == "" {
			t.Errorf("%s: GW-User-Id is described inline; reference one of the GwUserId* parameters", key)
		}
		return found[0]
	}

	routed := map[string]bool{}
	var catchAll []route // with the OpenAPI prefix as path
	for _, rt := range g.routes() {
		path, all := openAPIPath(rt.path)
		if all {
			rt.path = path
			catchAll = append(catchAll, rt)
			continue
		}
		key := rt.method + " " + path
		if routed[key] {
			t.Errorf("route %s is in the route table twice", key)
		}
		routed[key] = true
		op, ok := ops[key]
		if !ok {
			t.Errorf("route %s (%s) is not described in /openapi.json", key, rt.path)
			continue
		}
		isPublic := rt.user == public
		switch {
		case isPublic && (op.Security == nil || len(*op.Security) != 0):
			t.Errorf("%s is public: its operation must have security []", key)
		case !isPublic && op.Security != nil:
			t.Errorf("%s needs a bearer token: its operation must not override security", key)
		}
		if !isPublic && op.Scope != rt.scope {
			t.Errorf("%s: x-gw-scope = %q, the route needs %q", key, op.Scope, rt.scope)
		}
		if got, want := userIDParameter(key, path, op), userIDParameters[rt.user]; !slices.Contains(want, got) {
			t.Errorf("%s: GW-User-Id parameter = %q, want one of %q for the route's rule", key, got, want)
		}
	}

	for key, op := range ops {
		if routed[key] {
			continue
		}
		method, path, _ := strings.Cut(key, " ")
		i := slices.IndexFunc(catchAll, func(rt route) bool {
			return rt.method == method && strings.HasPrefix(path, rt.path) && len(path) > len(rt.path)
		})
		if i < 0 {
			t.Errorf("operation %s is described in /openapi.json but not routed", key)
			continue
		}
		// A path under a catch-all is routed only if its handler serves it.
		rt := catchAll[i]
		if rt.user != public || strings.Contains(path, "{") {
			t.Errorf("operation %s is under the catch-all %s*, which covers only literal public paths", key, rt.path)
			continue
		}
		if op.Security == nil || len(*op.Security) != 0 {
			t.Errorf("%s is public: its operation must have security []", key)
		}
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("operation %s is described, but %s %s answers %d", key, method, path, rec.Code)
		}
	}
	for _, rt := range catchAll {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(ops)), func(k string) bool {
			return strings.HasPrefix(k, rt.method+" "+rt.path)
		}) {
			t.Errorf("catch-all route %s %s* has no described path under it", rt.method, rt.path)
		}
	}
}

// openAPIParameter is a parameter object or a reference to one.
type openAPIParameter struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}
