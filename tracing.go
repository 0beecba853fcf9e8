package gateway

import (
	"context"
	"net/http"

	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the gateway's own spans (the
// upstream Router's attempt spans have theirs).
const tracerName = "github.com/chatgw/gateway"

// Attribute keys of the server and store spans beside semconv's HTTP and
// error keys: the GenAI conventions' names (semconv has none yet) and
// chatgw.*.
const (
	attrRequestID      = attribute.Key("chatgw.request_id")
	attrTenant         = attribute.Key("chatgw.tenant.id")
	attrConversationID = attribute.Key("gen_ai.conversation.id")
)

// WithTracerProvider traces the gateway's requests with tp (an
// OpenTelemetry SDK TracerProvider, or any other): a server span per request
// named "{method} {route}" (the route's template, never the raw path),
// continuing the client's W3C traceparent; a client span per upstream
// attempt of the default router, whose traceparent is sent to the backend;
// store transactions inside a traced request as store.view, store.update and
// store.batch spans. Spans carry ids, names, statuses and token counts, never
// message content (there is no opt-in to record it). The gateway never ends
// or flushes tp: its owner shuts it down after Close. An Upstream passed with
// WithUpstream gets the server span in its context and traces itself.
// Default nil: no tracing, and nothing is spent on it per request.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error { c.tracerProvider = tp; return nil }
}

// wireTracing takes the gateway's tracer when WithTracerProvider gave a
// provider.
func (g *Gateway) wireTracing() {
	if tp := g.cfg.tracerProvider; tp != nil {
		g.tracer = tp.Tracer(tracerName, trace.WithInstrumentationVersion(Version))
	}
}

// traceIO puts the tracing decorators around the store and the upstream
// when the gateway traces. Like instrument, it runs after the store's
// optional capabilities were taken.
func (g *Gateway) traceIO() {
	if g.tracer == nil {
		return
	}
	c := &g.cfg
	c.store = tracedStore{Store: c.store, tracer: g.tracer}
	tu := tracedUpstream{up: c.upstream}
	if p, ok := c.upstream.(upstream.Prober); ok {
		c.upstream = tracedProber{tracedUpstream: tu, p: p}
	} else {
		c.upstream = tu
	}
}

// startServerSpan starts the server span of r, child of the client's
// traceparent when it sent one, and returns r with the span in its context.
// Its name is the method alone until the route is known (nameServerSpan).
func (g *Gateway) startServerSpan(r *http.Request, info *httpx.Info) (*http.Request, trace.Span) {
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	method := spanMethod(r.Method)
	ctx, span := g.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(method), attrRequestID.String(info.RequestID)))
	return r.WithContext(ctx), span
}

// nameServerSpan names the server span of ctx for the route that matched:
// name is "{method} {route}", computed once per route.
func nameServerSpan(ctx context.Context, name, route string) {
	span := trace.SpanFromContext(ctx)
	span.SetName(name)
	span.SetAttributes(semconv.HTTPRouteKey.String(route))
}

// endServerSpan ends span, the server span of a request answered with
// status: error.type is the error catalog code of an error answer, and a
// 5xx marks the span an error (a 4xx is the client's, as the HTTP
// conventions say for server spans).
func endServerSpan(span trace.Span, status int, info *httpx.Info) {
	if status == 0 {
		status = http.StatusOK // nothing written: net/http answers 200
	}
	span.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(status))
	if info.Tenant != "" {
		span.SetAttributes(attrTenant.String(info.Tenant))
	}
	if e := info.Err; e != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(string(e.Code)))
	}
	if status >= 500 {
		desc := ""
		if e := info.Err; e != nil {
			desc = string(e.Code)
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End()
}

// spanMethod is the method as the HTTP conventions name it in a span: one
// of the nine known methods, else _OTHER, so that a hostile method cannot
// become a span name.
func spanMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// tracedUpstream puts the /c1 conversation id of a call on the request's
// server span; the attempt spans are the Router's (upstream.WithTracerProvider).
type tracedUpstream struct{ up upstream.Upstream }

func (u tracedUpstream) Do(ctx context.Context, req *upstream.Request) (*upstream.Response, error) {
	if req.ConversationID != "" {
		trace.SpanFromContext(ctx).SetAttributes(attrConversationID.String(req.ConversationID))
	}
	return u.up.Do(ctx, req)
}

// tracedProber is tracedUpstream over an Upstream that probes, for /readyz.
type tracedProber struct {
	tracedUpstream
	p upstream.Prober
}

func (u tracedProber) Probe(ctx context.Context) upstream.Readiness { return u.p.Probe(ctx) }

// tracedStore starts a span for each transaction made inside a traced
// request (a recording span in its context); background work (purgers,
// the usage writer) makes no root spans of its own.
type tracedStore struct {
	store.Store
	tracer trace.Tracer
}

func (s tracedStore) View(ctx context.Context, fn func(store.Tx) error) error {
	return s.traced(ctx, "store.view", s.Store.View, fn)
}

func (s tracedStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	return s.traced(ctx, "store.update", s.Store.Update, fn)
}

func (s tracedStore) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return s.traced(ctx, "store.batch", s.Store.Batch, fn)
}

func (s tracedStore) traced(ctx context.Context, name string, tx func(context.Context, func(store.Tx) error) error, fn func(store.Tx) error) error {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return tx(ctx, fn)
	}
	ctx, span := s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal))
	err := tx(ctx, fn)
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String("store_error"))
		span.SetStatus(codes.Error, "store_error")
	}
	span.End()
	return err
}
