package metrics

import (
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// Route is the metrics of one route of the gateway, resolved once when the
// router is built; its children are cached by the label values requests
// bring (status, code, tenant, alias, provider). A nil *Route belongs to a
// nil *Metrics.
type Route struct {
	m             *Metrics
	route, method string
	op            string // gen_ai_operation_name; "" when the route calls no model

	requests  cache[requestKey, requestChildren]
	durations cache[durationKey, prometheus.Observer]
	server    cache[serverKey, prometheus.Observer]
	tokenTime cache[serverKey, tokenTimes]     // errType ""
	overhead  cache[bool, prometheus.Observer] // by stream
	endings   cache[string, prometheus.Counter]
	streams   cache[struct{}, prometheus.Gauge]
}

type requestKey struct {
	method string // "" for the route's own
	status int
	code   string
	tenant string
}

// requestChildren are a request's children of chatgw_requests_total and
// http_server_request_duration_seconds, found with one look-up.
type requestChildren struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

type durationKey struct {
	method string
	status int
}

type serverKey struct {
	alias, provider, errType string
}

// tokenTimes are the time-to-first-token and time-per-output-token children
// of one alias and provider, made when a stream of theirs first succeeds.
type tokenTimes struct {
	ttft, tpot prometheus.Observer
}

// Route returns the metrics of the route method path (its template, as
// registered), whose requests are the GenAI operation op ("" for a route
// that calls no model). It returns nil for a nil m.
func (m *Metrics) Route(method, path, op string) *Route {
	if m == nil {
		return nil
	}
	if path == "" {
		path = Other
	}
	// Children are made on first use: a route that is never asked for
	// exports no series.
	return &Route{m: m, route: path, method: method, op: op}
}

// Request is the metrics of one request, found through its httpx.Info. A
// nil *Request (a gateway without metrics) records nothing. Its methods run
// on the request's goroutine, except AddWait and GuardDecision, which are
// safe from any.
type Request struct {
	m     *Metrics
	route *Route
	start time.Time

	// wait is the time, in nanoseconds, spent blocked on the upstream: in
	// Upstream.Do and reading answers.
	wait atomic.Int64

	calls    int
	call     callLabels // of the last call that answered, else the last call
	answered bool       // a call answered

	// Marks, as durations since start (0: not reached).
	answerAt     time.Duration // the answer started (see AnswerStarts)
	waitAtAnswer int64         // wait when it did
	firstChunk   time.Duration
	streamEnd    time.Duration // a complete stream's [DONE]
	stream       bool

	in, out   int64
	haveUsage bool
}

// callLabels are the labels of an upstream call, already in their
// vocabularies.
type callLabels struct {
	op, alias, provider string
	attempt             int
}

// Begin returns the metrics of a request that arrived at start: nil for a
// nil m, so that a gateway without metrics allocates nothing for them.
func (m *Metrics) Begin(start time.Time) *Request {
	if m == nil {
		return nil
	}
	return &Request{m: m, start: start}
}

// SetRoute sets the route that matched the request.
func (r *Request) SetRoute(rt *Route) {
	if r != nil {
		r.route = rt
	}
}

// On reports whether r records anything.
func (r *Request) On() bool { return r != nil }

// UpstreamCall notes a call to the Upstream for alias on the API path path
// that took d (Do's return) and was answered by provider at attempt, or
// failed (provider "").
func (r *Request) UpstreamCall(alias, path, provider string, attempt int, d time.Duration) {
	if r == nil {
		return
	}
	r.wait.Add(int64(d))
	r.calls++
	if provider == "" && r.answered {
		return // keep the labels of the call that answered
	}
	r.answered = provider != ""
	r.call = callLabels{op: operation(path), alias: r.m.alias(alias), provider: r.m.provider(provider), attempt: attempt}
}

// AddWait adds d to the time spent blocked on the upstream (reading an
// answer). It is safe for concurrent use.
func (r *Request) AddWait(d time.Duration) {
	if r != nil {
		r.wait.Add(int64(d))
	}
}

// AnswerStarts marks the moment the answer starts to be written: the end of
// the interval chatgw_overhead_seconds measures. Only the first mark counts.
func (r *Request) AnswerStarts() {
	if r == nil || r.answerAt != 0 {
		return
	}
	r.answerStartsAt(time.Since(r.start))
}

// answerStartsAt is AnswerStarts at d after the request's start.
func (r *Request) answerStartsAt(d time.Duration) {
	if r.answerAt == 0 {
		r.answerAt, r.waitAtAnswer = max(d, 1), r.wait.Load()
	}
}

// StreamStarts notes that the answer is relayed as a stream.
func (r *Request) StreamStarts() {
	if r == nil {
		return
	}
	r.stream = true
	r.routeOrUnmatched().streamGauge().Inc()
}

// FirstChunk marks the first chunk of a stream, about to be sent: the time
// to first token, and the start of the answer.
func (r *Request) FirstChunk() {
	if r == nil || r.firstChunk != 0 {
		return
	}
	r.firstChunk = max(time.Since(r.start), 1)
	r.answerStartsAt(r.firstChunk)
}

// StreamEnds notes how the stream ended, outcome one of the Stream
// constants.
func (r *Request) StreamEnds(outcome string) {
	if r == nil {
		return
	}
	switch outcome {
	case StreamDone, StreamClientCancel, StreamUpstreamErr, StreamTruncated, StreamShutdown, StreamCommitFailed:
	default:
		outcome = Other
	}
	rt := r.routeOrUnmatched()
	rt.streamGauge().Dec()
	if outcome == StreamDone {
		r.streamEnd = max(time.Since(r.start), 1)
	}
	rt.endings.get(outcome, func() prometheus.Counter {
		return r.m.streamEndings.WithLabelValues(rt.route, outcome)
	}).Inc()
}

// streamGauge is the route's child of chatgw_streams_in_flight.
func (rt *Route) streamGauge() prometheus.Gauge {
	return rt.streams.get(struct{}{}, func() prometheus.Gauge { return rt.m.streams.WithLabelValues(rt.route) })
}

// Usage notes the usage object of the answer relayed (nil when it had
// none): its input and output tokens as the upstream counted them.
func (r *Request) Usage(raw json.RawMessage) {
	if r == nil {
		return
	}
	r.in, r.out, r.haveUsage = wire.Tokens(raw)
}

func (r *Request) routeOrUnmatched() *Route {
	if r.route != nil {
		return r.route
	}
	return r.m.unmatched
}

// End records the request, answered with status (0 when nothing was
// written) and err (nil for a success), for the tenant ("" before
// authentication). reqMethod is the request's, counted only when no route
// matched (a route's requests are of its own method).
func (r *Request) End(reqMethod string, status int, err *errcat.Error, tenant string) {
	if r == nil {
		return
	}
	m := r.m
	d := time.Since(r.start)
	rt := r.routeOrUnmatched()
	meth := ""
	if rt == m.unmatched {
		meth = method(reqMethod)
	}
	code := errorType(err, status)
	if !m.tenant {
		tenant = ""
	}
	ch := rt.requests.get(requestKey{meth, status, code, tenant}, func() requestChildren {
		return requestChildren{
			count: m.requests.With(rt.labels(meth, status, code, tenant)),
			duration: rt.durations.get(durationKey{meth, status}, func() prometheus.Observer {
				return m.httpDuration.WithLabelValues(rt.route, orDefault(meth, rt.method), statusLabel(status))
			}),
		}
	})
	ch.count.Inc()
	ch.duration.Observe(d.Seconds())
	if r.calls > 0 {
		r.observeOverhead(rt, d)
	}
	if rt.op != "" {
		r.observeServer(rt, d, code)
	}
	if r.haveUsage && r.answered {
		m.observeUsage(r.call, tenant, r.in, r.out)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// labels are the labels of chatgw_requests_total.
func (rt *Route) labels(method string, status int, code, tenant string) prometheus.Labels {
	l := prometheus.Labels{labelRoute: rt.route, labelMethod: orDefault(method, rt.method),
		labelStatus: statusLabel(status), labelErrorType: code}
	if rt.m.tenant {
		l[labelTenant] = tenant
	}
	return l
}

// observeOverhead records chatgw_overhead_seconds: the time from the
// request's arrival to the start of its answer (or, for an answer the relay
// did not write, to the handler's return), less the time spent blocked on
// the upstream meanwhile.
func (r *Request) observeOverhead(rt *Route, d time.Duration) {
	end, wait := d, r.wait.Load()
	if r.answerAt != 0 {
		end, wait = r.answerAt, r.waitAtAnswer
	}
	stream := r.stream
	rt.overhead.get(stream, func() prometheus.Observer {
		return r.m.overhead.WithLabelValues(rt.route, strconv.FormatBool(stream))
	}).Observe(max(end-time.Duration(wait), 0).Seconds())
}

// observeServer records the gen_ai_server_* histograms of a request of a
// route that calls a model.
func (r *Request) observeServer(rt *Route, d time.Duration, code string) {
	m := r.m
	alias, provider := r.call.alias, ""
	if r.answered {
		provider = r.call.provider
	}
	rt.server.get(serverKey{alias, provider, code}, func() prometheus.Observer {
		return m.serverDur.WithLabelValues(rt.op, alias, provider, code)
	}).Observe(d.Seconds())
	if r.streamEnd == 0 || r.firstChunk == 0 {
		return // the conventions record these for successful responses
	}
	ch := rt.tokenTime.get(serverKey{alias, provider, code}, func() tokenTimes {
		return tokenTimes{ttft: m.ttft.WithLabelValues(rt.op, alias, provider, code), tpot: m.tpot.WithLabelValues(rt.op, alias, provider, code)}
	})
	ch.ttft.Observe(r.firstChunk.Seconds())
	if r.haveUsage && r.out > 1 {
		ch.tpot.Observe((r.streamEnd - r.firstChunk).Seconds() / float64(r.out-1))
	}
}

// usageKey and usageChildren are the token children of one call's labels
// and tenant.
type usageKey struct {
	call   callLabels
	tenant string
}

type usageChildren struct {
	usageIn, usageOut   prometheus.Observer
	tokensIn, tokensOut prometheus.Counter
}

// observeUsage records the tokens of an answer of call for tenant.
func (m *Metrics) observeUsage(call callLabels, tenant string, in, out int64) {
	ch := m.usage.get(usageKey{call, tenant}, func() usageChildren {
		attempt := attemptLabel(call.attempt)
		tl := func(l ...string) []string {
			if m.tenant {
				return append(l, tenant)
			}
			return l
		}
		return usageChildren{
			usageIn:   m.tokenUsage.WithLabelValues(call.op, call.alias, call.provider, "input", attempt),
			usageOut:  m.tokenUsage.WithLabelValues(call.op, call.alias, call.provider, "output", attempt),
			tokensIn:  m.tokens.WithLabelValues(tl(call.alias, call.provider, "input")...),
			tokensOut: m.tokens.WithLabelValues(tl(call.alias, call.provider, "output")...),
		}
	})
	ch.usageIn.Observe(float64(in))
	ch.usageOut.Observe(float64(out))
	ch.tokensIn.Add(float64(in))
	ch.tokensOut.Add(float64(out))
}

// attemptLabel is the attempt label of a position: 1 to 16, else Other
// (0: an Upstream that does not say).
func attemptLabel(n int) string {
	if n < 1 || n > 16 {
		return Other
	}
	return strconv.Itoa(n)
}
