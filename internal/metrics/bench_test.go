package metrics_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/metrics"
)

// BenchmarkRequest measures what the metrics cost one request, cached
// children given:
//
//   - off: a gateway without metrics (nil *Metrics): nil checks;
//   - route: a request of a route that calls no model (Begin, SetRoute, End);
//   - chat: a streamed chat (an upstream call, its wait, the stream's marks,
//     its usage, the server, overhead and token metrics).
func BenchmarkRequest(b *testing.B) {
	m, _ := newMetrics(b, true)
	models := m.Route("GET", "/v1/models", "")
	chat := m.Route("POST", "/v1/chat/completions", metrics.OpChat)
	usage := json.RawMessage(`{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}`)
	b.Run("off", func(b *testing.B) {
		var off *metrics.Metrics
		rt := off.Route("GET", "/v1/models", "")
		b.ReportAllocs()
		for b.Loop() {
			r := off.Begin(time.Now())
			r.SetRoute(rt)
			r.End("GET", 200, nil, "acme")
		}
	})
	b.Run("route", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := m.Begin(time.Now())
			r.SetRoute(models)
			r.End("GET", 200, nil, "acme")
		}
	})
	b.Run("chat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := m.Begin(time.Now())
			r.SetRoute(chat)
			r.UpstreamCall("lm-4-scout", "/chat/completions", "local", 1, time.Millisecond)
			r.StreamStarts()
			r.AddWait(time.Millisecond)
			r.FirstChunk()
			r.Usage(usage)
			r.StreamEnds(metrics.StreamDone)
			r.End("POST", 200, nil, "acme")
		}
	})
}
