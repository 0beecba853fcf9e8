package relay

import (
	"github.com/chatgw/gateway/internal/wire"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// traced reports whether span, an answer's attempt span
// (upstream.Response.Span), records: the relay then captures the answer's
// usage, model and finish reason for it.
func traced(span trace.Span) bool { return span != nil && span.IsRecording() }

// traceAnswer adds to span, the attempt span of the answer c captured, what
// the GenAI conventions record of a response: its id and model, the tokens
// it reported and its finish reason. Never its content.
func traceAnswer(span trace.Span, c *Capture) {
	if !traced(span) {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 5)
	if c.ID != "" {
		attrs = append(attrs, attribute.String("gen_ai.response.id", c.ID))
	}
	if c.Model != "" {
		attrs = append(attrs, attribute.String("gen_ai.response.model", c.Model))
	}
	if in, out, ok := wire.Tokens(c.Usage); ok {
		attrs = append(attrs, attribute.Int64("gen_ai.usage.input_tokens", in), attribute.Int64("gen_ai.usage.output_tokens", out))
	}
	if c.FinishReason != "" {
		attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", []string{c.FinishReason}))
	}
	span.SetAttributes(attrs...)
}
