package relay_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// TestResponseReportsUsageToMeter: a metered request's answer reports its
// usage to the request's Meter, with or without the caller's Capture, once
// however the answer ends; an answer without usage is marked so.
func TestResponseReportsUsageToMeter(t *testing.T) {
	usage := `,"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}`
	done := "data: [DONE]\n\n"
	content := "data: " + chunk(`{"index":0,"delta":{"content":"hi"}}`) + "\n\n"
	stream := func(s string) func() *upstream.Response {
		return func() *upstream.Response {
			resp, _ := sseResponse(strings.NewReader(s))
			return resp
		}
	}
	embeddings := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2,3e-4]}],` +
		`"model":"lm-embed","usage":{"prompt_tokens":8,"total_tokens":8}}`
	reported := httpx.MeterTotals{Calls: 1, Alias: "m", Backend: "local", InputTokens: 3, OutputTokens: 4}
	tests := []struct {
		name    string
		resp    func() *upstream.Response
		capture *relay.Capture
		want    httpx.MeterTotals
	}{
		{"json", func() *upstream.Response { return jsonResponse(`{"id":"c","choices":[]` + usage + `}`) }, nil, reported},
		{"json, caller's capture", func() *upstream.Response { return jsonResponse(`{"id":"c","choices":[]` + usage + `}`) },
			new(relay.Capture), reported},
		{"embeddings", func() *upstream.Response { return jsonResponse(embeddings) }, nil,
			httpx.MeterTotals{Calls: 1, Alias: "m", Backend: "local", InputTokens: 8}},
		{"stream", stream(content + `data: {"id":"c","choices":[]` + usage + "}\n\n" + done), nil, reported},
		{"stream, caller's capture", stream(content + `data: {"id":"c","choices":[]` + usage + "}\n\n" + done), new(relay.Capture), reported},
		{"stream without usage", stream(content + done), nil,
			httpx.MeterTotals{Calls: 1, Alias: "m", Backend: "local", UsageMissing: true}},
		{"stream cut after its usage", stream(content + `data: {"id":"c","choices":[]` + usage + "}\n\n"), nil, reported},
		{"json that is not JSON", func() *upstream.Response { return jsonResponse(`{"id":`) }, nil,
			httpx.MeterTotals{Calls: 1, Alias: "m", Backend: "local", UsageMissing: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", nil)
			r = r.WithContext(testkit.Context(r.Context(), nil))
			httpx.InfoFrom(r.Context()).Meter.Start()
			m := httpx.MeterOf(r.Context())
			m.Call("m", "local")
			relay.Response(newRecorder(), r, tt.resp(), relay.Options{Capture: tt.capture})
			if diff := cmp.Diff(tt.want, m.Totals()); diff != "" {
				t.Errorf("Totals mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUsageOnlyCaptureOfJSON: a UsageOnly capture keeps the usage of a JSON
// answer, and nothing of its choices.
func TestUsageOnlyCaptureOfJSON(t *testing.T) {
	r := httptest.NewRequest("POST", "/", nil)
	c := &relay.Capture{UsageOnly: true}
	body := `{"id":"chatcmpl-9","object":"chat.completion","created":1700000001,"model":"scout",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	res := relay.Response(newRecorder(), r, jsonResponse(body), relay.Options{Capture: c})
	if !res.Complete {
		t.Fatalf("relay not complete: %v", res.Err)
	}
	type kept struct{ Content, FinishReason, Usage string }
	want := kept{Usage: `{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}`}
	got := kept{Content: c.Content, FinishReason: c.FinishReason, Usage: string(c.Usage)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Capture mismatch (-want +got):\n%s", diff)
	}
}
