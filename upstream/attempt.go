package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/logwrite"
	"go.opentelemetry.io/otel/trace"
)

// outcome is the result of one attempt.
type outcome struct {
	resp     *Response     // set on success (2xx)
	err      *errcat.Error // set on failure
	answered bool          // the backend answered with a non-2xx status
	silent   bool          // the backend took the request but sent no first byte in time
	retry    bool          // the next backend of the chain may be tried
	att      Attempt       // what the Observer is told of a failed attempt; zero when nothing was sent
	span     trace.Span    // the failed attempt's span, to end; nil when not traced
}

// attempt sends req to one backend. Its context is the caller's ctx, ended by
// one timer (call.expire): at the first-byte time-out while no response
// headers came (cause errFirstByteTimeout), and from the headers on at the
// call's total deadline (cause errTotalTimeout), or at that deadline first
// when it comes before the first-byte time-out. One timer, reset when the
// headers arrive, where a deadline context and a first-byte timer were two:
// a timer's start and stop are runtime work on every request. On success
// the attempt's context stays alive until the response body is closed.
//
// It calls the transport itself, not an http.Client (whose redirects the
// Router turns off anyway: a model backend that redirects is misconfigured,
// and its 3xx is reported), and leaves building the request and reading the
// outcome to functions that return before or run after the round trip. The
// round trip is the deepest point of a chat request, and its depth decides
// the stack every streaming request keeps for as long as it streams: with
// the client's frames and these locals it passed 8 KiB, and each open stream
// kept a 16 KiB stack where a bare proxy keeps 8.
func (r *Router) attempt(ctx context.Context, deadline time.Time, req *Request, p *payload, t *target, n int) outcome {
	c := &call{ctx: ctx, deadline: deadline, req: req, t: t, n: n, start: time.Now()}
	hreq, err := r.newAttemptRequest(c, p)
	if err != nil {
		return outcome{err: errcat.As(err)}
	}
	c.timer = time.AfterFunc(c.within(r.backends.FirstByteTimeout), c.expire)
	resp, err := r.rt.RoundTrip(hreq)
	// Reset reports false when the timer had fired: too late, even if the
	// headers came. Otherwise only the total deadline bounds the body now.
	if firstByteTimedOut := !c.timer.Reset(time.Until(c.deadline)); err != nil || firstByteTimedOut {
		return r.notAnswered(c, resp, err, firstByteTimedOut)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return r.answered(c, resp)
	}
	return r.errorAnswer(c, resp)
}

// call is one attempt under way: what it was given, when it started, and
// what newAttemptRequest made of it.
type call struct {
	ctx      context.Context // the caller's
	deadline time.Time       // the total time-out's, for every attempt of the call
	actx     context.Context // the attempt's: ctx, ended by timer or end
	req      *Request
	t        *target
	n        int
	start    time.Time
	cancel   context.CancelCauseFunc // ends actx with a cause
	timer    *time.Timer             // runs expire; set once the request is built
	span     trace.Span              // the attempt's client span, or nil
}

// within is d, or the time left to the total deadline if that is shorter: a
// first-byte wait never outlasts the call.
func (c *call) within(d time.Duration) time.Duration {
	return min(d, time.Until(c.deadline))
}

// expire is the timer's function: it ends the attempt with the cause of the
// time-out that passed. A context keeps its first cause, so a later end
// (the body's Close) does not hide it.
func (c *call) expire() {
	if time.Now().Before(c.deadline) {
		c.cancel(errFirstByteTimeout)
	} else {
		c.cancel(errTotalTimeout)
	}
}

// end releases the attempt's timer and context: the answer is read, or the
// attempt failed.
func (c *call) end() {
	c.timer.Stop()
	c.cancel(nil)
}

// newAttemptRequest builds c's HTTP request with the attempt's own context
// (c.cancel ends it) and starts its span. Its error is the payload's, or
// internal.
func (r *Router) newAttemptRequest(c *call, p *payload) (*http.Request, error) {
	body, err := p.body(c.t)
	if err != nil {
		return nil, err
	}
	u, err := c.t.url(c.req.Path)
	if err != nil {
		return nil, errcat.Internal(err)
	}
	actx, cancel := context.WithCancelCause(c.ctx)
	// The URL is set after: one parsed per backend and path serves every
	// request to it (see targetURLs).
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, "", body)
	if err != nil {
		cancel(nil)
		return nil, errcat.Internal(err)
	}
	hreq.URL, hreq.Host = u.u, u.host
	c.actx, c.cancel = actx, cancel
	r.setHeaders(hreq.Header, c.req, c.t)
	c.span = r.startSpan(c.ctx, c.req, c.t, c.n, hreq.Header)
	return hreq, nil
}

// targetURLs keeps the URL of a target's last path, parsed: a backend's
// requests nearly all go to one path (an alias serves chat completions, or
// embeddings), so joining and parsing it for each request would redo the
// same work. The URL is shared by the requests of that path and must not be
// modified: http.Client and Transport only read a request's URL, and a
// RoundTripper must not modify its request.
type targetURLs struct {
	last atomic.Pointer[pathURL]
}

// pathURL is the parsed URL of a path, and the request Host it gives (the
// URL's host without an empty port, as http.NewRequest sets it).
type pathURL struct {
	path string
	u    *url.URL
	host string
}

// url is the URL of path on t's base URL.
func (t *target) url(path string) (*pathURL, error) {
	if p := t.urls.last.Load(); p != nil && p.path == path {
		return p, nil
	}
	u, err := url.Parse(joinURL(t.baseURL, path))
	if err != nil {
		return nil, fmt.Errorf("upstream URL: %w", err)
	}
	p := &pathURL{path: path, u: u, host: strings.TrimSuffix(u.Host, ":")}
	t.urls.last.Store(p)
	return p, nil
}

// notAnswered is the outcome of an attempt that got no response headers: a
// transport error, or the first-byte time-out.
func (r *Router) notAnswered(c *call, resp *http.Response, err error, firstByteTimedOut bool) outcome {
	if resp != nil {
		resp.Body.Close()
	}
	c.end()
	var o outcome
	var kind string
	var bodyErr *errcat.Error
	cause := r.transportCause(c.t, err)
	switch {
	case c.ctx.Err() != nil:
		o, kind = outcome{err: callerDone(c.ctx)}, OutcomeCancelled
	case totalPassed(c.actx):
		o, kind = outcome{err: timeoutError(cause)}, OutcomeTotalTimeout
	case errors.As(err, &bodyErr): // a streamed body that is not valid (invalidMultipart)
		o, kind = outcome{err: bodyErr}, OutcomeInvalidBody
	case firstByteTimedOut:
		o, kind = outcome{err: firstByteTimeout(cause), silent: true, retry: true}, OutcomeFirstByteTimeout
	default:
		o, kind = outcome{err: unavailable("no model backend could be reached", cause), retry: true}, OutcomeConnectError
	}
	r.logAttempt(c.ctx, c.req, c.t, c.n, kind, 0, c.start, slog.String("error", r.transportText(err)))
	o.att, o.span = attemptOf(c.req, c.t, c.n, kind, 0, c.start), c.span
	return o
}

// answered is the outcome of a 2xx answer: the Response, whose body keeps
// the attempt's context alive until it is closed.
func (r *Router) answered(c *call, resp *http.Response) outcome {
	r.logAttempt(c.ctx, c.req, c.t, c.n, OutcomeOK, resp.StatusCode, c.start)
	// The Response and its body in one allocation: they live as long.
	a := &struct {
		resp Response
		body responseBody
	}{body: responseBody{rc: resp.Body, ctx: c.ctx, actx: c.actx, call: c}}
	if r.obs != nil || c.span != nil {
		// The attempt goes on while the caller reads: it is reported
		// (and its span ended) when the body is closed.
		a.body.obs, a.body.span, a.body.att = r.obs, c.span, attemptOf(c.req, c.t, c.n, OutcomeOK, resp.StatusCode, c.start)
	}
	a.resp = Response{
		StatusCode:  resp.StatusCode,
		Header:      resp.Header,
		Body:        &a.body,
		Provider:    c.t.provider,
		RouterAlias: c.t.routerAlias,
		Attempt:     c.n,
		Span:        c.span,
	}
	return outcome{resp: &a.resp}
}

// errorAnswer is the outcome of an answer with another status: its error,
// read from the body within the first-byte time-out.
func (r *Router) errorAnswer(c *call, resp *http.Response) outcome {
	// An error body must come quickly too: bound its reading like the
	// headers (expire names the first-byte time-out as its cause; what
	// matters below is only whether the total deadline passed).
	c.timer.Reset(c.within(r.backends.FirstByteTimeout))
	e, summary := r.answerError(resp, c.t)
	c.end()
	kind := OutcomeStatus
	switch {
	case c.ctx.Err() != nil:
		e, kind = callerDone(c.ctx), OutcomeCancelled
	case totalPassed(c.actx):
		e, kind = timeoutError(context.Cause(c.actx)), OutcomeTotalTimeout
	}
	r.logAttempt(c.ctx, c.req, c.t, c.n, kind, resp.StatusCode, c.start, slog.String("body", summary))
	retry := kind == OutcomeStatus &&
		(resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500)
	return outcome{err: e, answered: kind == OutcomeStatus, retry: retry,
		att: attemptOf(c.req, c.t, c.n, kind, resp.StatusCode, c.start), span: c.span}
}

func (r *Router) setHeaders(h http.Header, req *Request, t *target) {
	ct := req.ContentType
	if ct == "" {
		ct = "application/json"
	}
	accept := "application/json"
	if req.Stream {
		accept = "text/event-stream"
	}
	// The values share one array, where a Set each would allocate a slice
	// apiece; each slice's capacity ends at its value, so that an Add to
	// one (by a RoundTripper) copies instead of overwriting the next.
	var n int
	vals := make([]string, 5)
	set := func(key, v string) { // key in canonical form
		vals[n] = v
		h[key] = vals[n : n+1 : n+1]
		n++
	}
	set("Content-Type", ct)
	set("Accept", accept)
	if req.RequestID != "" {
		set("X-Request-Id", req.RequestID)
	}
	if t.authorization != "" {
		set("Authorization", t.authorization)
	}
	set("User-Agent", "chatgw")
}

// logAttempt logs one attempt and its outcome with the request id, and
// detail: the transport error (transportText) or the error answer's body
// (redact.Body). It never logs keys or bodies.
func (r *Router) logAttempt(ctx context.Context, req *Request, t *target, n int, kind string, status int, start time.Time, detail ...slog.Attr) {
	level := slog.LevelInfo
	if kind != OutcomeOK {
		level = slog.LevelWarn
	}
	if !t.log.Enabled(ctx, level) {
		return
	}
	// t.log holds provider, router_alias and via already.
	attrs := make([]slog.Attr, 5, 7)
	attrs[0] = slog.String("request_id", req.RequestID)
	attrs[1] = slog.String("alias", req.Alias)
	attrs[2] = slog.Int("attempt", n)
	attrs[3] = slog.String("outcome", kind)
	attrs[4] = slog.Int64("ms", time.Since(start).Milliseconds())
	if status != 0 {
		attrs = append(attrs, slog.Int("status", status))
	}
	attrs = append(attrs, detail...)
	logwrite.Log(ctx, t.log, level, "upstream attempt", attrs...)
}
