package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// span is what TestTracing compares of a span: its name, kind, the name of
// its parent ("" for a root) and its attributes as strings.
type span struct {
	Name, Kind, Parent string
	Attrs              map[string]string
}

// secretPrompt is the content of the tests' messages: it must appear in no
// span.
const secretPrompt = "the secret prompt"

// TestTracing drives traced requests through a gateway whose local backend
// fails (503) before its first byte, so that lm-4-scout falls back to
// cloudA, and compares the span tree and attributes each request leaves,
// the traceparent and x-request-id each backend received, and that no
// message content is in any span.
func TestTracing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, body string
		user             string
		want             []span // in the order they end
	}{
		{
			name: "v1 stream with a fallback",
			path: "/v1/chat/completions",
			body: `{"model":"lm-4-scout","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"` + secretPrompt + `"}]}`,
			want: []span{
				{Name: "chat lm-4-scout", Kind: "client", Parent: "POST /v1/chat/completions", Attrs: map[string]string{
					"gen_ai.operation.name": "chat", "gen_ai.provider.name": "local", "gen_ai.request.model": "lm-4-scout",
					"chatgw.upstream.router_alias": "lm-4-scout:17b-16e-instruct-q4_K_M", "chatgw.upstream.attempt": "1",
					"chatgw.request_id": "req-trace", "http.response.status_code": "503", "error.type": "503",
					"chatgw.upstream.fallback_to": "cloudA"}},
				{Name: "chat lm-4-scout", Kind: "client", Parent: "POST /v1/chat/completions", Attrs: map[string]string{
					"gen_ai.operation.name": "chat", "gen_ai.provider.name": "cloudA", "gen_ai.request.model": "lm-4-scout",
					"chatgw.upstream.router_alias": "lm-4-scout-17b-16e-instruct", "chatgw.upstream.attempt": "2",
					"chatgw.request_id": "req-trace", "http.response.status_code": "200",
					"gen_ai.response.model": "lm-4-scout-17b-16e-instruct", "gen_ai.usage.input_tokens": "12",
					"gen_ai.usage.output_tokens": "3", "gen_ai.response.finish_reasons": `["stop"]`}},
				{Name: "POST /v1/chat/completions", Kind: "server", Attrs: map[string]string{
					"http.request.method": "POST", "http.route": "/v1/chat/completions", "http.response.status_code": "200",
					"chatgw.request_id": "req-trace", "chatgw.tenant.id": "acme"}},
			},
		},
		{
			name: "c1 turn",
			path: "/c1/chat",
			user: "u1",
			body: `{"model":"lm-4-scout","stream":true,"conversation_id":"conv-trace","message":"` + secretPrompt + `"}`,
			want: []span{
				{Name: "store.view", Kind: "internal", Parent: "POST /c1/chat", Attrs: map[string]string{}},
				{Name: "chat lm-4-scout", Kind: "client", Parent: "POST /c1/chat", Attrs: map[string]string{
					"gen_ai.operation.name": "chat", "gen_ai.provider.name": "local", "gen_ai.request.model": "lm-4-scout",
					"chatgw.upstream.router_alias": "lm-4-scout:17b-16e-instruct-q4_K_M", "chatgw.upstream.attempt": "1",
					"chatgw.request_id": "req-trace", "http.response.status_code": "503", "error.type": "503",
					"chatgw.upstream.fallback_to": "cloudA", "gen_ai.conversation.id": "conv-trace"}},
				// The turn is stored before the stream's data: [DONE], so
				// before the answer's body is closed.
				{Name: "store.batch", Kind: "internal", Parent: "POST /c1/chat", Attrs: map[string]string{}},
				{Name: "chat lm-4-scout", Kind: "client", Parent: "POST /c1/chat", Attrs: map[string]string{
					"gen_ai.operation.name": "chat", "gen_ai.provider.name": "cloudA", "gen_ai.request.model": "lm-4-scout",
					"chatgw.upstream.router_alias": "lm-4-scout-17b-16e-instruct", "chatgw.upstream.attempt": "2",
					"chatgw.request_id": "req-trace", "http.response.status_code": "200", "gen_ai.conversation.id": "conv-trace",
					"gen_ai.response.model": "lm-4-scout-17b-16e-instruct", "gen_ai.usage.input_tokens": "12",
					"gen_ai.usage.output_tokens": "3", "gen_ai.response.finish_reasons": `["stop"]`}},
				{Name: "POST /c1/chat", Kind: "server", Attrs: map[string]string{
					"http.request.method": "POST", "http.route": "/c1/chat", "http.response.status_code": "200",
					"chatgw.request_id": "req-trace", "chatgw.tenant.id": "acme", "gen_ai.conversation.id": "conv-trace"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Status: 503}))
			cloudA := upstreamtest.New(t)
			e := newEnvOn(t, local, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL}, gateway.WithTracerProvider(tp))
			resp, b := e.do(t, call{method: "POST", path: tt.path, token: "admin", user: tt.user, body: tt.body,
				header: map[string][]string{"X-Request-Id": {"req-trace"}}})
			if resp.StatusCode != 200 {
				t.Fatalf("%s = %d %s", tt.path, resp.StatusCode, b)
			}
			ended := awaitServerSpan(t, rec)

			names := map[trace.SpanID]string{}
			for _, s := range ended {
				names[s.SpanContext().SpanID()] = s.Name()
			}
			var got []span
			for _, s := range ended {
				attrs := map[string]string{}
				for _, kv := range s.Attributes() {
					if strings.Contains(kv.Value.String(), secretPrompt) || strings.Contains(kv.Value.String(), upstreamtest.DefaultContent) {
						t.Errorf("span %s attribute %s holds message content: %q", s.Name(), kv.Key, kv.Value.String())
					}
					if kv.Key != "gen_ai.response.id" {
						attrs[string(kv.Key)] = kv.Value.String()
					}
				}
				got = append(got, span{Name: s.Name(), Kind: s.SpanKind().String(), Parent: names[s.Parent().SpanID()], Attrs: attrs})
				if s.SpanContext().TraceID() != ended[len(ended)-1].SpanContext().TraceID() {
					t.Errorf("span %s is in another trace", s.Name())
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("spans mismatch (-want +got):\n%s", diff)
			}

			// Each backend got its attempt's traceparent and the request id.
			var attempts []trace.SpanContext
			for _, s := range ended {
				if s.SpanKind() == trace.SpanKindClient {
					attempts = append(attempts, s.SpanContext())
				}
			}
			calls := append(local.Calls(), cloudA.Calls()...)
			if len(calls) != len(attempts) {
				t.Fatalf("%d upstream calls, %d attempt spans", len(calls), len(attempts))
			}
			for i, c := range calls {
				want := "00-" + attempts[i].TraceID().String() + "-" + attempts[i].SpanID().String() + "-01"
				if got := c.Header.Get("Traceparent"); got != want {
					t.Errorf("call %d traceparent = %q, want %q", i+1, got, want)
				}
				if got := c.Header.Get("X-Request-Id"); got != "req-trace" {
					t.Errorf("call %d x-request-id = %q, want req-trace", i+1, got)
				}
			}
		})
	}
}

// awaitServerSpan waits for the server span to end (after the handler
// returned, so perhaps after the client read the answer) and returns the
// spans ended.
func awaitServerSpan(t *testing.T, rec *tracetest.SpanRecorder) []sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ended := rec.Ended()
		for _, s := range ended {
			if s.SpanKind() == trace.SpanKindServer {
				return ended
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no server span ended; %d spans", len(ended))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
