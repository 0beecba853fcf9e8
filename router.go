package gateway

import (
	"net/http"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/julienschmidt/httprouter"
)

// buildRouter registers every route of the table, wrapped in the per-route
// middleware, and answers what no route serves: 405 method_not_allowed with
// Allow for a known path asked with another method, 404 route_not_found for
// everything else. Both are answered before authentication, since neither
// depends on who calls and the route table is public (openapi.json). The
// router is served only by serve, whose *statusWriter carries the request's
// Info.
func (g *Gateway) buildRouter(routes []route) *httprouter.Router {
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	// OPTIONS is not served (the gateway answers no CORS preflight), so it
	// is a method like any other a path does not serve: 405.
	r.HandleOPTIONS = false
	r.HandleMethodNotAllowed = true
	r.NotFound = http.HandlerFunc(g.notFound)
	r.MethodNotAllowed = g.methodNotAllowed(errorShapes(routes))
	for _, rt := range routes {
		r.Handle(rt.method, rt.path, g.wrap(rt))
	}
	return r
}

// notFound answers 404 route_not_found, after the body limit's 413, which
// comes before everything else on every request.
func (g *Gateway) notFound(w http.ResponseWriter, r *http.Request) {
	if g.bodyTooLarge(w) {
		return
	}
	writeError(w, infoOf(w), errcat.Newf(errcat.RouteNotFound, "", "No route for %s %s.", r.Method, r.URL.Path))
}

// methodNotAllowed answers 405 method_not_allowed on a path that routes
// serve with other methods, which httprouter has put in the Allow header. It
// answers in the error shape of the path's routes (shapes), as a route
// answers its own errors, and after the body limit's 413, as notFound does.
func (g *Gateway) methodNotAllowed(shapes *httprouter.Router) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		allow := servedMethods(h.Get("Allow"))
		h.Set("Allow", allow)
		for m := range strings.SplitSeq(allow, ", ") {
			if set, ps, _ := shapes.Lookup(m, r.URL.Path); set != nil {
				set(w, r, ps)
				break
			}
		}
		if g.bodyTooLarge(w) {
			return
		}
		writeError(w, infoOf(w), errcat.Newf(errcat.MethodNotAllowed, "",
			"%s is not allowed on %s; allowed: %s.", r.Method, r.URL.Path, allow))
	})
}

// servedMethods is httprouter's Allow value without OPTIONS, which
// httprouter adds to every list whether or not it answers OPTIONS; the
// gateway does not (HandleOPTIONS is off), and an Allow header must list
// only the methods the path serves ("the Allow header field lists the set
// of methods advertised as supported by the target resource", RFC 9110
// section 10.2.1).
func servedMethods(allow string) string {
	var b strings.Builder
	for m := range strings.SplitSeq(allow, ", ") {
		if m == http.MethodOptions || m == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(m)
	}
	return b.String()
}

// errorShapes is a router of the routes that have an error shape of their
// own (route.errors), each under its method and path, whose handle sets the
// shape in the request's Info: what an answer that no route's handler gives
// (405) looks up to answer in the shape the path's clients read.
func errorShapes(routes []route) *httprouter.Router {
	shapes := httprouter.New()
	for _, rt := range routes {
		if rt.errors == nil {
			continue
		}
		f := rt.errors
		shapes.Handle(rt.method, rt.path, func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
			infoOf(w).ErrorFormat = f
		})
	}
	return shapes
}

// maxLoggedPath is the most bytes of a path that a log line carries: a
// path is as long as the client makes it (up to the header limit), a log
// line must not be.
const maxLoggedPath = 256

// loggedPath is the path of r as the log line of an unknown route shows
// it. Only the path: the query may carry secrets (?api_key=...). It is
// escaped (url.URL.EscapedPath percent-encodes every byte outside
// printable ASCII, control characters included, so a path cannot forge a
// line or a field), passed through redact.String as a second defence
// against a secret in the path itself, and cut to maxLoggedPath bytes,
// never inside a %XX escape, with "..." marking the cut.
func loggedPath(r *http.Request) string {
	p := redact.String(r.URL.EscapedPath())
	if len(p) <= maxLoggedPath {
		return p
	}
	cut := maxLoggedPath
	if i := strings.LastIndexByte(p[cut-2:cut], '%'); i >= 0 {
		cut -= 2 - i
	}
	return p[:cut] + "..."
}
