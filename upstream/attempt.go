package upstream

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/chatgw/gateway/errcat"
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

// attempt sends req to one backend. Its context derives from total (the caller's
// ctx bounded by the total time-out); a timer cancels only this attempt when the
// response headers do not arrive within the first-byte time-out. On success the
// attempt's context stays alive until the response body is closed.
func (r *Router) attempt(ctx, total context.Context, req *Request, p *payload, t *target, n int) outcome {
	start := time.Now()
	body, err := p.body(t)
	if err != nil {
		return outcome{err: errcat.As(err)}
	}
	actx, cancel := context.WithCancel(total)
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, joinURL(t.baseURL, req.Path), body)
	if err != nil {
		cancel()
		return outcome{err: errcat.Internal(err)}
	}
	r.setHeaders(hreq.Header, req, t)
	span := r.startSpan(ctx, req, t, n, hreq.Header)

	timer := time.AfterFunc(r.backends.FirstByteTimeout, cancel)
	resp, err := r.client.Do(hreq)
	firstByteTimedOut := !timer.Stop()
	if err != nil || firstByteTimedOut {
		if resp != nil {
			resp.Body.Close()
		}
		cancel()
		var o outcome
		var kind string
		var bodyErr *errcat.Error
		cause := r.transportCause(t, err)
		switch {
		case ctx.Err() != nil:
			o, kind = outcome{err: callerDone(ctx)}, OutcomeCancelled
		case total.Err() != nil:
			o, kind = outcome{err: timeoutError(cause)}, OutcomeTotalTimeout
		case errors.As(err, &bodyErr): // a streamed body that is not valid (invalidMultipart)
			o, kind = outcome{err: bodyErr}, OutcomeInvalidBody
		case firstByteTimedOut:
			o, kind = outcome{err: firstByteTimeout(cause), silent: true, retry: true}, OutcomeFirstByteTimeout
		default:
			o, kind = outcome{err: unavailable("no model backend could be reached", cause), retry: true}, OutcomeConnectError
		}
		r.logAttempt(ctx, req, t, n, kind, 0, start, slog.String("error", r.transportText(err)))
		o.att, o.span = attemptOf(req, t, n, kind, 0, start), span
		return o
	}

	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		r.logAttempt(ctx, req, t, n, OutcomeOK, resp.StatusCode, start)
		body := &responseBody{rc: resp.Body, ctx: ctx, total: total, cancel: cancel}
		if r.obs != nil || span != nil {
			// The attempt goes on while the caller reads: it is reported
			// (and its span ended) when the body is closed.
			body.obs, body.span, body.att = r.obs, span, attemptOf(req, t, n, OutcomeOK, resp.StatusCode, start)
		}
		return outcome{resp: &Response{
			StatusCode:  resp.StatusCode,
			Header:      resp.Header,
			Body:        body,
			Provider:    t.provider,
			RouterAlias: t.routerAlias,
			Attempt:     n,
			Span:        span,
		}}
	}

	// An error body must come quickly too: bound its reading like the headers.
	bodyTimer := time.AfterFunc(r.backends.FirstByteTimeout, cancel)
	e, summary := r.answerError(resp, t)
	bodyTimer.Stop()
	cancel()
	kind := OutcomeStatus
	switch {
	case ctx.Err() != nil:
		e, kind = callerDone(ctx), OutcomeCancelled
	case total.Err() != nil:
		e, kind = timeoutError(total.Err()), OutcomeTotalTimeout
	}
	r.logAttempt(ctx, req, t, n, kind, resp.StatusCode, start, slog.String("body", summary))
	retry := kind == OutcomeStatus &&
		(resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500)
	return outcome{err: e, answered: kind == OutcomeStatus, retry: retry,
		att: attemptOf(req, t, n, kind, resp.StatusCode, start), span: span}
}

func (r *Router) setHeaders(h http.Header, req *Request, t *target) {
	ct := req.ContentType
	if ct == "" {
		ct = "application/json"
	}
	h.Set("Content-Type", ct)
	if req.Stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	if req.RequestID != "" {
		h.Set("X-Request-Id", req.RequestID)
	}
	if t.apiKey != "" {
		h.Set("Authorization", "Bearer "+t.apiKey)
	}
	h.Set("User-Agent", "chatgw")
}

// logAttempt logs one attempt and its outcome with the request id, and
// detail: the transport error (transportText) or the error answer's body
// (redact.Body). It never logs keys or bodies.
func (r *Router) logAttempt(ctx context.Context, req *Request, t *target, n int, kind string, status int, start time.Time, detail ...slog.Attr) {
	level := slog.LevelInfo
	if kind != OutcomeOK {
		level = slog.LevelWarn
	}
	if !r.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("request_id", req.RequestID),
		slog.String("alias", req.Alias),
		slog.Int("attempt", n),
		slog.String("provider", t.provider),
		slog.String("router_alias", t.routerAlias),
		slog.String("outcome", kind),
		slog.Int64("ms", time.Since(start).Milliseconds()),
	}
	if r.backends.RouterURL != "" {
		attrs = append(attrs, slog.String("via", "router"))
	}
	if status != 0 {
		attrs = append(attrs, slog.Int("status", status))
	}
	attrs = append(attrs, detail...)
	r.log.LogAttrs(ctx, level, "upstream attempt", attrs...)
}
