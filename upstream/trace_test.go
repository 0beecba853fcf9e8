package upstream_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// TestAttemptSpans: a traced Router starts one client span per attempt,
// child of the caller's span, sends each attempt's own traceparent, and
// records the outcome of each; the x-request-id goes upstream too.
func TestAttemptSpans(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		local     upstreamtest.Reply
		wantSpans []spanSummary
	}{
		{"first answers", upstreamtest.Reply{}, []spanSummary{
			{Name: "chat lm-4-scout", Provider: "local", Model: "lm-4-scout", Conversation: "conv-1", Attempt: 1, Status: 200},
		}},
		{"fallback after 503", upstreamtest.Reply{Status: 503}, []spanSummary{
			{Name: "chat lm-4-scout", Provider: "local", Model: "lm-4-scout", Conversation: "conv-1", Attempt: 1, Status: 503, ErrorType: "503", FallbackTo: "cloudA", Error: true},
			{Name: "chat lm-4-scout", Provider: "cloudA", Model: "lm-4-scout", Conversation: "conv-1", Attempt: 2, Status: 200},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			local := upstreamtest.New(t, upstreamtest.WithReply(tt.local))
			cloudA := upstreamtest.New(t)
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL}, upstream.WithTracerProvider(tp))

			ctx, parent := tp.Tracer("test").Start(t.Context(), "parent")
			resp, err := r.Do(ctx, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions",
				Body: chatBody("lm-4-scout"), RequestID: "req-1", ConversationID: "conv-1"})
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if resp.Span == nil || !resp.Span.IsRecording() {
				t.Error("Response.Span is not the recording attempt span")
			}
			if len(rec.Ended()) != len(tt.wantSpans)-1 {
				t.Errorf("%d spans ended before Body.Close, want %d", len(rec.Ended()), len(tt.wantSpans)-1)
			}
			resp.Body.Close()
			parent.End()

			var got []spanSummary
			var calls []upstreamtest.Call
			calls = append(calls, local.Calls()...)
			calls = append(calls, cloudA.Calls()...)
			for i, s := range rec.Ended() {
				if s.Name() == "parent" {
					continue
				}
				if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanKind() != trace.SpanKindClient {
					t.Errorf("span %s: parent %v kind %v, want child of the caller's span, client", s.Name(), s.Parent().SpanID(), s.SpanKind())
				}
				want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
				if i < len(calls) {
					if tp := calls[i].Header.Get("Traceparent"); tp != want {
						t.Errorf("attempt %d traceparent = %q, want %q", i+1, tp, want)
					}
					if id := calls[i].Header.Get("X-Request-Id"); id != "req-1" {
						t.Errorf("attempt %d x-request-id = %q, want req-1", i+1, id)
					}
				}
				got = append(got, summarize(s))
			}
			if diff := cmp.Diff(tt.wantSpans, got); diff != "" {
				t.Errorf("spans mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUntracedRouter: without WithTracerProvider nothing is propagated.
func TestUntracedRouter(t *testing.T) {
	t.Parallel()
	s := upstreamtest.New(t)
	r, _ := newRouter(t, upstream.Backends{LocalURL: s.URL})
	resp, _, err := doRead(t, r, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: chatBody("lm-4-scout")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Span != nil {
		t.Error("Response.Span is set without a tracer provider")
	}
	if tp := s.Calls()[0].Header.Get("Traceparent"); tp != "" {
		t.Errorf("traceparent %q sent without tracing", tp)
	}
}

// spanSummary is what the tests compare of an attempt span.
type spanSummary struct {
	Name, Provider, Model, Conversation string
	Attempt, Status                     int
	ErrorType, FallbackTo               string
	Error                               bool
}

func summarize(s sdktrace.ReadOnlySpan) spanSummary {
	a := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		a[kv.Key] = kv.Value
	}
	return spanSummary{Name: s.Name(), Provider: a["gen_ai.provider.name"].AsString(),
		Model: a["gen_ai.request.model"].AsString(), Conversation: a["gen_ai.conversation.id"].AsString(),
		Attempt: int(a["chatgw.upstream.attempt"].AsInt64()), Status: int(a["http.response.status_code"].AsInt64()),
		ErrorType: a["error.type"].AsString(), FallbackTo: a["chatgw.upstream.fallback_to"].AsString(),
		Error: s.Status().Code == codes.Error}
}
