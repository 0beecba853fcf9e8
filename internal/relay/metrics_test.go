package relay_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/metrics"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetrics: each way a stream ends is counted as its outcome, streams in
// flight go back to 0, and the answer's usage reaches the token counters
// with the labels of the call that answered.
func TestMetrics(t *testing.T) {
	first := "data: " + chunk(`{"index":0,"delta":{"content":"Hel"}}`) + "\n\n"
	tests := []struct {
		name    string
		answer  func() io.Reader
		opts    relay.Options
		cancel  bool // the client goes away before the relay
		outcome string
	}{
		{"done", func() io.Reader { return strings.NewReader(upstreamStream) }, relay.Options{}, false, metrics.StreamDone},
		{"no DONE", func() io.Reader { return strings.NewReader(first) }, relay.Options{}, false, metrics.StreamTruncated},
		{"too large", func() io.Reader { return strings.NewReader(upstreamStream) },
			relay.Options{Capture: &relay.Capture{}, MaxBytes: 4}, false, metrics.StreamTruncated},
		{"read error", func() io.Reader { return &failingReader{strings.NewReader(first), errors.New("reset")} },
			relay.Options{}, false, metrics.StreamUpstreamErr},
		{"error event", func() io.Reader {
			return strings.NewReader(first + `data: {"error":{"message":"x"}}` + "\n\n")
		}, relay.Options{}, false, metrics.StreamUpstreamErr},
		{"commit failed", func() io.Reader { return strings.NewReader(upstreamStream) },
			relay.Options{Commit: func(context.Context) error { return errors.New("disk full") }}, false, metrics.StreamCommitFailed},
		{"client gone", func() io.Reader { return strings.NewReader(upstreamStream) }, relay.Options{}, true, metrics.StreamClientCancel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			m, err := metrics.New(metrics.Config{Registerer: reg, TenantLabel: true,
				Aliases: []string{"lm-4-scout"}, Providers: []string{"local"}})
			if err != nil {
				t.Fatal(err)
			}
			info := new(httpx.Info)
			info.Init("req-1", slog.New(slog.DiscardHandler))
			info.Metrics = m.Begin(time.Now())
			info.Metrics.SetRoute(m.Route("POST", "/v1/chat/completions", metrics.OpChat))
			info.Metrics.UpstreamCall("lm-4-scout", "/chat/completions", "local", 1, time.Millisecond)
			ctx, cancel := context.WithCancel(httpx.WithInfo(context.Background(), info))
			if tt.cancel {
				cancel()
			}
			defer cancel()
			resp, _ := sseResponse(tt.answer())
			relay.Response(newRecorder(), httptest.NewRequest("POST", "/", nil).WithContext(ctx), resp, tt.opts)
			info.Metrics.End("POST", 200, info.Err, "acme")

			want := `
# HELP chatgw_stream_endings_total Streamed answers relayed, by route and how they ended.
# TYPE chatgw_stream_endings_total counter
chatgw_stream_endings_total{http_route="/v1/chat/completions",outcome="` + tt.outcome + `"} 1
# HELP chatgw_streams_in_flight Streamed answers being relayed now.
# TYPE chatgw_streams_in_flight gauge
chatgw_streams_in_flight{http_route="/v1/chat/completions"} 0
`
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "chatgw_stream_endings_total", "chatgw_streams_in_flight"); err != nil {
				t.Error(err)
			}
			if tt.outcome != metrics.StreamDone {
				return
			}
			// The usage chunk of upstreamStream: 9 prompt, 3 completion tokens.
			want = `
# HELP chatgw_tokens_total Tokens the upstream reported for the answers relayed, by tenant, alias, provider and token type.
# TYPE chatgw_tokens_total counter
chatgw_tokens_total{gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout",gen_ai_token_type="input",tenant="acme"} 9
chatgw_tokens_total{gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout",gen_ai_token_type="output",tenant="acme"} 3
`
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "chatgw_tokens_total"); err != nil {
				t.Error(err)
			}
			for _, name := range []string{"gen_ai_server_time_to_first_token_seconds", "gen_ai_server_time_per_output_token_seconds", "chatgw_overhead_seconds"} {
				if n, err := testutil.GatherAndCount(reg, name); n != 1 || err != nil {
					t.Errorf("%s: %d series (%v), want 1", name, n, err)
				}
			}
		})
	}
}

// TestMetricsJSON: a JSON answer's usage is counted, and it is no stream.
func TestMetricsJSON(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(metrics.Config{Registerer: reg, Aliases: []string{"lm-embed"}, Providers: []string{"cloudA"}})
	if err != nil {
		t.Fatal(err)
	}
	info := new(httpx.Info)
	info.Init("req-1", slog.New(slog.DiscardHandler))
	info.Metrics = m.Begin(time.Now())
	info.Metrics.SetRoute(m.Route("POST", "/v1/embeddings", metrics.OpEmbeddings))
	info.Metrics.UpstreamCall("lm-embed", "/embeddings", "cloudA", 2, time.Millisecond)
	r := httptest.NewRequest("POST", "/", nil).WithContext(httpx.WithInfo(context.Background(), info))
	res := relay.Response(newRecorder(), r, jsonResponse(`{"object":"list","data":[],"usage":{"prompt_tokens":8,"total_tokens":8}}`), relay.Options{})
	if !res.Complete {
		t.Fatalf("Response() = %+v", res)
	}
	info.Metrics.End("POST", 200, nil, "")
	want := `
# HELP chatgw_tokens_total Tokens the upstream reported for the answers relayed, by tenant, alias, provider and token type.
# TYPE chatgw_tokens_total counter
chatgw_tokens_total{gen_ai_provider_name="cloudA",gen_ai_request_model="lm-embed",gen_ai_token_type="input"} 8
chatgw_tokens_total{gen_ai_provider_name="cloudA",gen_ai_request_model="lm-embed",gen_ai_token_type="output"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "chatgw_tokens_total", "chatgw_stream_endings_total"); err != nil {
		t.Error(err)
	}
}
