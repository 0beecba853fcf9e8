package upstream

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of the attempt spans beside semconv's HTTP and error
// keys: the GenAI conventions' names (semconv has none yet) and chatgw.*.
const (
	attrOperation      = attribute.Key("gen_ai.operation.name")
	attrProvider       = attribute.Key("gen_ai.provider.name")
	attrRequestModel   = attribute.Key("gen_ai.request.model")
	attrConversationID = attribute.Key("gen_ai.conversation.id")
	attrRouterAlias    = attribute.Key("chatgw.upstream.router_alias")
	attrAttempt        = attribute.Key("chatgw.upstream.attempt")
	attrRequestID      = attribute.Key("chatgw.request_id")
	attrFallbackTo     = attribute.Key("chatgw.upstream.fallback_to")
)

// tracerName is the instrumentation scope of the Router's spans.
const tracerName = "github.com/chatgw/gateway/upstream"

// WithTracerProvider makes the Router start an OpenTelemetry client span for
// every attempt, child of the span in the caller's context, and send its W3C
// traceparent (and tracestate) to the backend with the attempt. The span is
// named "{operation} {alias}" ("chat lm-4-scout") and carries the GenAI
// attributes the Router knows (operation, provider, requested alias, the
// backend's router_alias, the attempt's position, error.type on failure); it
// ends when the attempt fails or, for the attempt that answered, when its
// Body is closed: Response.Span lets the reader of the answer add what it
// holds (response model, usage, finish reasons) before that. No request or
// answer content is ever recorded. Default nil: no spans, and no
// traceparent sent.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *routerOptions) { o.tracerProvider = tp }
}

// operationName is the gen_ai.operation.name of a call to the API path.
func operationName(path string) string {
	switch path {
	case "/chat/completions":
		return "chat"
	case "/embeddings":
		return "embeddings"
	case "/images/generations", "/audio/transcriptions", "/audio/translations":
		return "generate_content"
	}
	return "_OTHER"
}

// startSpan starts the client span of the n-th attempt of req, on t, and
// puts its traceparent in h. It returns nil when the Router does not trace.
func (r *Router) startSpan(ctx context.Context, req *Request, t *target, n int, h http.Header) trace.Span {
	if r.tracer == nil {
		return nil
	}
	op := operationName(req.Path)
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs,
		attrOperation.String(op),
		attrProvider.String(t.provider),
		attrRequestModel.String(req.Alias),
		attrRouterAlias.String(t.routerAlias),
		attrAttempt.Int(n))
	if req.RequestID != "" {
		attrs = append(attrs, attrRequestID.String(req.RequestID))
	}
	if req.ConversationID != "" {
		attrs = append(attrs, attrConversationID.String(req.ConversationID))
	}
	ctx, span := r.tracer.Start(ctx, op+" "+req.Alias, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	return span
}

// endSpan ends span, an attempt's (nil: not traced), with what a says of
// the attempt's end.
func endSpan(span trace.Span, a *Attempt) {
	if span == nil {
		return
	}
	if a.Status != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(a.Status))
	}
	if a.Outcome != OutcomeOK {
		et := a.Outcome
		if a.Outcome == OutcomeStatus || a.Outcome == "" {
			et = strconv.Itoa(a.Status)
			if a.Status == 0 {
				et = "_OTHER"
			}
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(et))
		span.SetStatus(codes.Error, et)
	}
	if a.Next != "" {
		span.SetAttributes(attrFallbackTo.String(a.Next))
	}
	span.End()
}
