package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/julienschmidt/httprouter"
)

// buildRouter registers every route of the table, wrapped in the per-route
// middleware, and answers route_not_found for everything else.
func (g *Gateway) buildRouter(routes []route) *httprouter.Router {
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = false
	r.HandleOPTIONS = false
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, r, errcat.Newf(errcat.RouteNotFound, "", "No route for %s %s.", r.Method, r.URL.Path))
	})
	for _, rt := range routes {
		r.Handler(rt.method, rt.path, g.wrap(rt))
	}
	return r
}

// serve is the outermost middleware: request id, panic recovery, body limit and
// the request log line.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	info := &httpx.Info{RequestID: requestID(r.Header.Get(httpx.HeaderRequestID))}
	info.Logger = g.log.With("request_id", info.RequestID)
	w.Header().Set(httpx.HeaderRequestID, info.RequestID)
	sw := &statusWriter{ResponseWriter: w}
	r = r.WithContext(httpx.WithInfo(r.Context(), info))
	defer func() {
		if p := recover(); p != nil {
			info.Err = errcat.Internal(fmt.Errorf("panic: %v", p))
			if !sw.wrote {
				errcat.Write(sw, info.Err)
			}
		}
		g.logRequest(r, sw, info, time.Since(start))
	}()
	if r.ContentLength > g.cfg.bodyLimit {
		httpx.WriteError(sw, r, errcat.Newf(errcat.BodyTooLarge, "", "Request body is larger than %d bytes.", g.cfg.bodyLimit))
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(sw, r.Body, g.cfg.bodyLimit)
	}
	g.router.ServeHTTP(sw, r)
}

func (g *Gateway) logRequest(r *http.Request, sw *statusWriter, info *httpx.Info, d time.Duration) {
	attrs := []slog.Attr{
		slog.String("request_id", info.RequestID),
		slog.String("tenant", info.Tenant),
		slog.String("method", r.Method),
		slog.String("route", info.Route),
		slog.Int("status", sw.status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		slog.Int64("bytes", sw.bytes),
	}
	level := slog.LevelInfo
	if e := info.Err; e != nil {
		attrs = append(attrs, slog.String("code", string(e.Code)))
		if e.Cause != nil {
			attrs = append(attrs, slog.String("cause", e.Cause.Error()))
		}
		if sw.status >= 500 {
			level = slog.LevelError
		}
	}
	g.log.LogAttrs(r.Context(), level, "request", attrs...)
}

// wrap applies the per-route rules: bearer auth, tenant binding, rate limit,
// scope, user_id bans and the GW-User-Id rule.
func (g *Gateway) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := httpx.InfoFrom(r.Context())
		info.Route = rt.path
		if rt.user == public {
			rt.h(w, r)
			return
		}
		p, err := g.authorize(r, rt, info)
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		rt.h(w, r.WithContext(auth.NewContext(r.Context(), p)))
	})
}

func (g *Gateway) authorize(r *http.Request, rt route, info *httpx.Info) (*auth.Principal, error) {
	p, err := g.authenticate(r)
	if err != nil {
		return nil, err
	}
	info.Tenant = p.Tenant.ID
	if ok, wait := g.limiter.Allow(p.Digest, p.Rate); !ok {
		return nil, &errcat.Error{Code: errcat.RateLimitExceeded, Message: "Rate limit exceeded", RetryAfter: retrySeconds(wait)}
	}
	if rt.scope != "" && !p.Allows(routeScope(r, rt.scope)) {
		return nil, errcat.Newf(errcat.Forbidden, "", "This token lacks the scope %s.", routeScope(r, rt.scope))
	}
	if strings.Contains(r.URL.RawQuery, "user_id") {
		if err := httpx.RejectUserIDQuery(r); err != nil {
			return nil, err
		}
	}
	if err := g.rejectUserIDBody(r, info); err != nil {
		return nil, err
	}
	return p, checkUser(r, rt, p)
}

// authenticate matches the bearer token and the optional GW-Tenant-Id binding.
func (g *Gateway) authenticate(r *http.Request) (*auth.Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, errcat.New(errcat.MissingAuthorization, "headers.authorization", "The Authorization header is missing.")
	}
	token, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		token, ok = strings.CutPrefix(h, "bearer ")
	}
	token = strings.TrimSpace(token)
	if !ok || token == "" {
		return nil, errcat.New(errcat.InvalidAuthorization, "headers.authorization", "The Authorization header must be 'Bearer <token>'.")
	}
	p, ok := g.cfg.tokens.Lookup(auth.DigestOf(token))
	if !ok {
		return nil, errcat.New(errcat.InvalidAuthorization, "headers.authorization", "The bearer token is not valid.")
	}
	if t := r.Header.Get(httpx.HeaderTenantID); t != "" && t != p.Tenant.ID {
		return nil, errcat.New(errcat.InvalidAuthorization, "headers.authorization", "The token is not bound to the tenant named by GW-Tenant-Id.")
	}
	return p, nil
}

// routeScope fills a "{level}" placeholder of scope from the path.
func routeScope(r *http.Request, scope string) string {
	if i := strings.Index(scope, "{level}"); i >= 0 {
		return scope[:i] + httpx.Param(r, "level") + scope[i+len("{level}"):]
	}
	return scope
}

// rejectUserIDBody reads a JSON body once (handlers get it from the Info) and
// answers invalid_field body.user_id when it has a top-level user_id.
func (g *Gateway) rejectUserIDBody(r *http.Request, info *httpx.Info) error {
	if r.Body == nil || r.Body == http.NoBody || strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		return nil
	}
	b, err := httpx.ReadBody(r)
	if err != nil {
		return err
	}
	info.Body, info.BodyRead = b, true
	if !bytes.Contains(b, []byte(`"user_id"`)) {
		return nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return nil // not a JSON object: the handler answers invalid_json
	}
	if _, ok := top["user_id"]; ok {
		return errcat.New(errcat.InvalidField, "body.user_id",
			"user_id is not accepted in a body; the end user is named by the GW-User-Id header.")
	}
	return nil
}

// checkUser applies the route's GW-User-Id rule.
func checkUser(r *http.Request, rt route, p *auth.Principal) error {
	u := r.Header.Get(httpx.HeaderUserID)
	if u != "" {
		if len(u) > 256 || strings.ContainsFunc(u, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			return errcat.New(errcat.InvalidField, "headers.gw-user-id", "GW-User-Id must be at most 256 printable characters.")
		}
		return nil
	}
	switch rt.user {
	case userRequired:
	case userOrAdminRead:
		if r.Method == http.MethodGet && p.Role == auth.RoleTenantAdmin {
			return nil
		}
	default:
		return nil
	}
	return errcat.New(errcat.MissingField, "headers.gw-user-id", "The GW-User-Id header is required on this endpoint.")
}

// retrySeconds rounds d up to whole seconds, at least 1.
func retrySeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// requestID echoes a client's id when it is at most 128 printable ASCII
// characters, and generates one otherwise.
func requestID(given string) string {
	if given != "" && len(given) <= 128 && !strings.ContainsFunc(given, func(c rune) bool { return c < 0x20 || c > 0x7e }) {
		return given
	}
	return "req_" + strconv.FormatUint(rand.Uint64(), 36)
}

// statusWriter records the status and size of an answer for the log line. It
// unwraps for http.ResponseController, so flushing SSE works through it.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if !s.wrote {
		s.status, s.wrote = http.StatusOK, true
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// Flush lets handlers that assert http.Flusher stream through the wrapper.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
