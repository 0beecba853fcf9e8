package gateway

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/logwrite"
	"github.com/chatgw/gateway/internal/metrics"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/julienschmidt/httprouter"
	"go.opentelemetry.io/otel/trace"
)

// serve is the outermost middleware: request id, panic recovery, body limit and
// the request log line.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	st := new(requestState) // the request's Info and writer in one allocation
	info, sw := &st.info, &st.sw
	info.Init(requestID(r.Header.Get(httpx.HeaderRequestID)), g.log)
	info.Shutdown = &g.ending
	info.Metrics = g.metrics.Begin(start)
	info.SetRequestIDHeader(w.Header())
	*sw = statusWriter{ResponseWriter: w, info: info}
	if g.tracer != nil {
		r, st.span = g.startServerSpan(r, info)
	}
	defer func() {
		if p := recover(); p != nil {
			info.Err = errcat.Internal(fmt.Errorf("panic: %v", p))
			if !sw.wrote {
				errcat.WriteFormat(sw, info.Err, info.ErrorFormat)
			}
		}
		g.logRequest(r, sw, info, start)
		info.Metrics.End(r.Method, sw.status, info.Err, info.Tenant)
		if st.span != nil {
			endServerSpan(st.span, sw.status, info)
		}
	}()
	if r.ContentLength > g.cfg.bodyLimit {
		// Answered before anything else, by the route (wrap: in the route's
		// error shape) or the router's NotFound; the body is never read.
		sw.tooLarge = true
	} else if r.Body != nil && r.Body != http.NoBody {
		st.body = requestBody{rc: r.Body, dl: deadlineOf(w), start: start, grace: g.cfg.bodyTimeout, minRate: g.cfg.bodyMinRate}
		sw.body = &st.body
		// w, not sw: net/http's own writer learns that the limit was hit, and
		// then lingers before closing, so the client reads the 413 instead of
		// a reset connection.
		r.Body = http.MaxBytesReader(w, &st.body, g.cfg.bodyLimit)
	}
	g.router.ServeHTTP(sw, r)
}

// requestState is what serve allocates for a request.
type requestState struct {
	info httpx.Info
	sw   statusWriter
	body requestBody
	span trace.Span // the server span; nil when the gateway does not trace
}

// logRequest writes the request log line, unless the logger drops it.
func (g *Gateway) logRequest(r *http.Request, sw *statusWriter, info *httpx.Info, start time.Time) {
	level := slog.LevelInfo
	if e := info.Err; e != nil && sw.status >= 500 {
		level = slog.LevelError
	}
	ctx := r.Context()
	if !g.log.Enabled(ctx, level) {
		return
	}
	d := time.Since(start)
	attrs := [...]slog.Attr{
		slog.String("request_id", info.RequestID),
		slog.String("tenant", info.Tenant),
		slog.Int("status", sw.status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		slog.Int64("bytes", sw.bytes),
		{}, {}, {}, {}, {}, // method and route when no route matched, code, path and cause
	}
	n := 5
	l := info.RouteLog // holds method and route
	if l == nil {
		l = g.log
		attrs[n], attrs[n+1] = slog.String("method", r.Method), slog.String("route", info.Route)
		n += 2
	}
	if e := info.Err; e != nil {
		attrs[n] = slog.String("code", string(e.Code))
		n++
		if e.Code == errcat.RouteNotFound || e.Code == errcat.MethodNotAllowed {
			// No route template names what was asked: the path does.
			attrs[n] = slog.String("path", loggedPath(r))
			n++
		}
		if e.Cause != nil {
			// Causes are the gateway's own words by construction; one may
			// still wrap outside text (a decoder's error, a panic's value),
			// so it goes through redact, which a successful request never
			// reaches.
			attrs[n] = slog.String("cause", redact.Error(e.Cause))
			n++
		}
	}
	logwrite.Log(ctx, l, level, "request", attrs[:n]...)
}

// wrap applies the per-route rules: bearer auth, tenant binding, rate limit,
// scope, user_id bans and the GW-User-Id rule. The handler gets a request
// whose context carries the Info, the path parameters and the principal
// (one Request copy).
func (g *Gateway) wrap(rt route) httprouter.Handle {
	mr := g.metrics.Route(rt.method, rt.path, operationOf(rt.path)) // resolved once, not per request
	spanName := rt.method + " " + rt.path
	// httprouter calls a route's handler for the route's own method only.
	routeLog := g.log.With(slog.String("method", rt.method), slog.String("route", rt.path))
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		info := infoOf(w)
		info.Route = rt.path
		info.RouteLog = routeLog
		info.Metrics.SetRoute(mr)
		info.ErrorFormat = rt.errors
		if g.tracer != nil {
			nameServerSpan(r.Context(), spanName, rt.path)
		}
		if g.bodyTooLarge(w) {
			return
		}
		ctx := httpx.NewContext(r.Context(), info, ps)
		if rt.user == public {
			rt.h(w, r.WithContext(ctx))
			return
		}
		// Who calls decides the answer (a tenant's models, a user's
		// conversations), so that no browser or proxy cache may serve one
		// token's answer to another.
		w.Header()["Vary"] = varyIdentity
		p, err := g.authorize(r, ps, rt, info)
		if err != nil {
			writeError(w, info, err)
			return
		}
		rt.h(w, r.WithContext(auth.NewContext(ctx, p)))
	}
}

// varyIdentity is the Vary header of every authenticated answer: the
// headers that say who calls, x-api-key among them (it carries a token as
// Authorization does, callerToken). It is shared by all answers, so that
// setting it allocates nothing; its capacity is its length, so that a
// handler's Header().Add("Vary", ...) appends to a copy.
var varyIdentity = []string{"Authorization, X-Api-Key, GW-Tenant-Id, GW-User-Id"}

// infoOf returns the Info of the request that w answers: w is serve's
// *statusWriter.
func infoOf(w http.ResponseWriter) *httpx.Info {
	if sw, ok := w.(*statusWriter); ok {
		return sw.info
	}
	return httpx.InfoFrom(context.Background()) // not through serve: a fresh Info
}

// writeError is httpx.WriteError for the middleware, which holds the Info
// before the request's context carries it: in the route's error shape.
func writeError(w http.ResponseWriter, info *httpx.Info, err error) {
	info.Err = errcat.WriteFormat(w, err, info.ErrorFormat)
}

// bodyTooLarge answers 413 body_too_large, and reports true, when serve
// found the request's Content-Length over the body limit.
func (g *Gateway) bodyTooLarge(w http.ResponseWriter) bool {
	sw, ok := w.(*statusWriter)
	if !ok || !sw.tooLarge {
		return false
	}
	writeError(w, sw.info, errcat.Newf(errcat.BodyTooLarge, "", "Request body is larger than %d bytes.", g.cfg.bodyLimit))
	return true
}

func (g *Gateway) authorize(r *http.Request, ps httprouter.Params, rt route, info *httpx.Info) (*auth.Principal, error) {
	p, err := g.authenticate(r)
	if err != nil {
		return nil, err
	}
	info.Tenant = p.Tenant.ID
	if err := g.limit(r.Context(), p); err != nil {
		return nil, err
	}
	if rt.scope != "" {
		if scope := routeScope(ps, rt.scope); !p.Allows(scope) {
			return nil, errcat.Newf(errcat.Forbidden, "", "This token lacks the scope %s.", scope)
		}
	}
	if q := r.URL.RawQuery; strings.Contains(q, "user_id") || strings.Contains(q, "%") {
		// % may encode user_id (user%5Fid): the parsed query decides.
		if err := httpx.RejectUserIDQuery(r); err != nil {
			return nil, err
		}
	}
	if err := g.rejectUserIDBody(r, info); err != nil {
		return nil, err
	}
	return p, checkUser(r, rt, p)
}

// limit takes one request from p's bucket: 429 rate_limit_exceeded when it
// is empty. When the limiter cannot decide (its database is unreachable) the
// request fails closed with 500 storage_error, or passes unlimited when the
// operator chose WithRateLimitFailOpen.
func (g *Gateway) limit(ctx context.Context, p *auth.Principal) error {
	rate := g.cfg.rate
	if p.Rate != nil {
		rate = *p.Rate
	}
	ok, wait, err := g.limiter.Allow(ctx, p.Digest, rate)
	switch {
	case err != nil && g.cfg.rateFail:
		g.logLimiterFailure(err)
		g.metrics.RateLimitBypassed(p.Tenant.ID)
		return nil
	case err != nil:
		g.metrics.RateLimited(p.Tenant.ID, metrics.RateLimiterUnavailable)
		return errcat.Storage(fmt.Errorf("rate limit: %w", err))
	case !ok:
		g.metrics.RateLimited(p.Tenant.ID, metrics.RateExceeded)
		return &errcat.Error{Code: errcat.RateLimitExceeded, Message: "Rate limit exceeded", RetryAfter: retrySeconds(wait)}
	}
	return nil
}

// logLimiterFailure logs a limiter failure that fail-open let pass, at most
// once a second: an outage at thousands of requests a second must not
// become as many log lines.
func (g *Gateway) logLimiterFailure(err error) {
	now := g.cfg.clock.Now().Unix()
	last := g.limitFailLogged.Load()
	if now == last || !g.limitFailLogged.CompareAndSwap(last, now) {
		return
	}
	g.log.Warn("rate limiter failed; request let through (fail-open)", "error", redact.String(err.Error()))
}

// authenticate matches the caller's token (callerToken) and the optional
// GW-Tenant-Id binding.
func (g *Gateway) authenticate(r *http.Request) (*auth.Principal, error) {
	token, err := callerToken(r)
	if err != nil {
		return nil, err
	}
	p, ok := g.cfg.tokens.Lookup(auth.DigestOf(token))
	if !ok {
		return nil, errcat.New(errcat.InvalidAuthorization, "headers.authorization", "The bearer token is not valid.")
	}
	if t := httpx.TenantIDHeader(r); t != "" && t != p.Tenant.ID {
		return nil, errcat.New(errcat.InvalidAuthorization, "headers.authorization", "The token is not bound to the tenant named by GW-Tenant-Id.")
	}
	return p, nil
}

// callerToken returns the token r authenticates with: Authorization: Bearer
// <token>, or x-api-key: <token>, which Anthropic clients send ("Anthropic
// clients may authenticate with x-api-key: <token> instead of Authorization:
// Bearer; the same token catalog and rules apply", docs/contract.md 9.4). It is
// accepted on every route, as the bearer is, so that a token works the same
// whichever header carries it. Both headers may be sent only with the same
// token: two tokens would leave it to the gateway to pick a principal.
func callerToken(r *http.Request) (string, error) {
	h, key := r.Header.Get("Authorization"), r.Header.Get(headerAPIKey)
	if h == "" && key == "" {
		return "", errcat.New(errcat.MissingAuthorization, "headers.authorization", "The Authorization header (or x-api-key) is missing.")
	}
	if h == "" {
		return key, nil
	}
	// RFC 7235: the auth-scheme is case-insensitive.
	ok := len(h) > len("Bearer ") && strings.EqualFold(h[:len("Bearer")], "Bearer") && h[len("Bearer")] == ' '
	token := ""
	if ok {
		token = strings.TrimSpace(h[len("Bearer "):])
	}
	switch {
	case !ok || token == "":
		return "", errcat.New(errcat.InvalidAuthorization, "headers.authorization", "The Authorization header must be 'Bearer <token>'.")
	case key != "" && subtle.ConstantTimeCompare([]byte(key), []byte(token)) != 1:
		return "", errcat.New(errcat.InvalidAuthorization, "headers.authorization", "Authorization and x-api-key carry different tokens; send one of them.")
	}
	return token, nil
}

// headerAPIKey is the header Anthropic clients send their API key in, in
// its canonical form.
const headerAPIKey = "X-Api-Key"

// routeScope fills a "{level}" placeholder of scope from the path.
func routeScope(ps httprouter.Params, scope string) string {
	if i := strings.Index(scope, "{level}"); i >= 0 {
		return scope[:i] + ps.ByName("level") + scope[i+len("{level}"):]
	}
	return scope
}

// rejectUserIDBody reads a JSON body once (handlers get it from the Info) and
// answers invalid_field body.user_id when it has a top-level user_id.
func (g *Gateway) rejectUserIDBody(r *http.Request, info *httpx.Info) error {
	if r.Body == nil || r.Body == http.NoBody || strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		return nil
	}
	b, err := info.ReadBody(r)
	if err != nil {
		return err
	}
	if !bytes.Contains(b, []byte(`"user_id"`)) && !bytes.Contains(b, []byte(`\u`)) {
		return nil // neither user_id nor an escape that could spell it (user\u005fid)
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
	u := httpx.UserID(r)
	if u != "" {
		// Invalid UTF-8 is refused too: stored as JSON it would read back as
		// U+FFFD, another user's id, and lock its owner out of its own data.
		if len(u) > 256 || !utf8.ValidString(u) || strings.ContainsFunc(u, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
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
	var buf [len("req_") + 13]byte // 13 base-36 digits hold a uint64
	return string(strconv.AppendUint(append(buf[:0], "req_"...), rand.Uint64(), 36))
}

// statusWriter records the status and size of an answer for the log line. It
// unwraps for http.ResponseController, so flushing SSE works through it.
type statusWriter struct {
	http.ResponseWriter
	info   *httpx.Info
	body   *requestBody // nil: the request has no body
	status int
	bytes  int64
	wrote  bool
	// tooLarge: the request's Content-Length is over the body limit, which
	// its route answers (bodyTooLarge).
	tooLarge bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.begin(code)
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if !s.wrote {
		s.begin(http.StatusOK)
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// WriteString is Write without copying s when the wrapped writer takes
// strings too (net/http's does): the relay writes each SSE event in string
// pieces, which io.WriteString would otherwise copy one by one.
func (s *statusWriter) WriteString(str string) (int, error) {
	if !s.wrote {
		s.begin(http.StatusOK)
	}
	n, err := io.WriteString(s.ResponseWriter, str)
	s.bytes += int64(n)
	return n, err
}

// begin records the status of the answer, which is about to start; a body
// not read to its end is abandoned (see requestBody.abandon).
func (s *statusWriter) begin(code int) {
	s.status, s.wrote = code, true
	if s.body != nil {
		s.body.abandon(s.Header())
	}
}

// Flush lets handlers that assert http.Flusher stream through the wrapper.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
