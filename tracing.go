package gateway

import (
	"context"
	"net/http"

	"github.com/chatgw/gateway/internal/httpx"
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
