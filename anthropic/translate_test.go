package anthropic_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/testkit"
)

// TestRequestTranslation: each Messages API request becomes the
// chat-completions request of its golden file testdata/request_<name>.golden,
// as the upstream receives it (after the pre-flight checks: model first).
func TestRequestTranslation(t *testing.T) {
	tests := []struct{ name, body string }{
		{"text", `{"model":"lm-4-scout","max_tokens":256,"system":"Be brief.","messages":[{"role":"user","content":"Hello"}],
			"temperature":0.2,"top_p":0.9,"stop_sequences":["END","STOP"],"metadata":{"user_id":"opaque-123"},
			"service_tier":"auto","cache_control":{"type":"ephemeral"},"thinking":{"type":"disabled"}}`},
		{"blocks", `{"model":"lm-4-scout","max_tokens":64,"stream":true,
			"system":[{"type":"text","text":"You are terse."},{"type":"text","text":"Answer in French.","cache_control":{"type":"ephemeral"}}],
			"messages":[{"role":"user","content":[{"type":"text","text":"One."},{"type":"text","text":"Two.","cache_control":{"type":"ephemeral"}}]},
				{"role":"assistant","content":[{"type":"text","text":"Un. "},{"type":"text","text":"Deux."}]},
				{"role":"user","content":[{"type":"text","text":"Three?"}]}]}`},
		{"image", `{"model":"lm-4-scout","max_tokens":64,"messages":[{"role":"user","content":[
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + testkit.OnePixelPNG + `"}},
			{"type":"text","text":"What is this?"}]}]}`},
		{"tools", `{"model":"lm-4-scout","max_tokens":512,"messages":[{"role":"user","content":"Weather in Paris?"}],
			"tools":[{"name":"get_weather","description":"Current weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
				{"type":"custom","name":"get_time","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
			"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}}`},
		{"tool_choice_any", `{"model":"lm-4-scout","max_tokens":512,"messages":[{"role":"user","content":"x"}],
			"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}}`},
		{"tool_choice_none_without_tools", `{"model":"lm-4-scout","max_tokens":512,"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"none"}}`},
		{"tool_results", `{"model":"lm-4-scout","max_tokens":512,"messages":[
			{"role":"user","content":"Weather in Paris and Rome, and a picture?"},
			{"role":"assistant","content":[{"type":"text","text":"Let me look."},
				{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city": "Paris"}},
				{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Rome"}},
				{"type":"tool_use","id":"toolu_3","name":"snapshot","input":{}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny, 24°C"},
				{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"station offline"},{"type":"text","text":"retry later"}],"is_error":true},
				{"type":"tool_result","tool_use_id":"toolu_3","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + testkit.OnePixelPNG + `"}}]},
				{"type":"text","text":"Thanks, summarise."}]}],
			"tools":[{"name":"get_weather","input_schema":{"type":"object"}},{"name":"snapshot","input_schema":{"type":"object"}}]}`},
		{"tool_use_only", `{"model":"lm-4-scout","max_tokens":512,"messages":[
			{"role":"user","content":"Now?"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_9","name":"now","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9"}]}],
			"tools":[{"name":"now","input_schema":{"type":"object"}}]}`},
		{"output_config", `{"model":"lm-4-scout","max_tokens":100,"messages":[{"role":"user","content":"A colour?"}],
			"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"colour":{"type":"string"}}}}}}`},
		{"floored", `{"model":"lm-reason","max_tokens":5,"messages":[{"role":"user","content":"think"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv()
			w := e.serve(t, call{body: tt.body})
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			testkit.Golden(t, "request_"+tt.name+".golden", e.up.Last(t), *update)
		})
	}
}

// TestAnswerTranslation: each upstream chat completion becomes the message
// of its golden file testdata/answer_<name>.golden.
func TestAnswerTranslation(t *testing.T) {
	const req = `{"model":"lm-4-scout","max_tokens":100,"stop_sequences":["END"],"messages":[{"role":"user","content":"hi"}]}`
	completion := func(choice, usage string) string {
		return `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"scout-17b","choices":[` + choice + `],"usage":` + usage + `}`
	}
	usage := `{"prompt_tokens":20,"completion_tokens":7,"total_tokens":27}`
	tests := []struct{ name, upstream string }{
		{"end_turn", completion(`{"index":0,"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}`,
			`{"prompt_tokens":20,"completion_tokens":7,"total_tokens":27,"prompt_tokens_details":{"cached_tokens":16}}`)},
		{"tool_use", completion(`{"index":0,"message":{"role":"assistant","content":"Checking.","tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},
			{"id":"call_b","type":"function","function":{"name":"now","arguments":""}}]},"finish_reason":"tool_calls"}`, usage)},
		{"tool_use_said_stop", completion(`{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"now","arguments":"{}"}}]},"finish_reason":"stop"}`, usage)},
		{"max_tokens", completion(`{"index":0,"message":{"role":"assistant","content":"Once upon a"},"finish_reason":"length"}`, usage)},
		{"stop_sequence", completion(`{"index":0,"message":{"role":"assistant","content":"Done "},"finish_reason":"stop","stop_reason":"END"}`, usage)},
		{"refusal", completion(`{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"content_filter"}`, usage)},
		{"no_usage", `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":"stop"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv()
			e.up.Add(testkit.JSON(tt.upstream))
			w := e.serve(t, call{body: req})
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, Content-Type %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
			}
			testkit.Golden(t, "answer_"+tt.name+".golden", testkit.Indent(t, w), *update)
		})
	}
}

// TestStreamTranslation: each upstream stream becomes the Messages API event
// sequence of its golden file testdata/stream_<name>.golden; every event
// has an event: line.
func TestStreamTranslation(t *testing.T) {
	const req = `{"model":"lm-4-scout","max_tokens":100,"stream":true,"stop_sequences":["END"],"messages":[{"role":"user","content":"hi"}]}`
	chunk := func(choices string) string {
		return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"scout-17b","choices":[` + choices + `]}`
	}
	delta := func(d, finish string) string {
		return chunk(`{"index":0,"delta":` + d + `,"finish_reason":` + finish + `}`)
	}
	usage := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"scout-17b","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":7,"total_tokens":27}}`
	tests := []struct {
		name, upstream string
		fallback       bool
	}{
		{"text", testkit.Transcript(delta(`{"role":"assistant","content":""}`, "null"), delta(`{"content":"Hello"}`, "null"), "not a chunk",
			delta(`{"content":", world."}`, "null"), delta(`{}`, `"stop"`), usage), false},
		{"tools", "event: vendor\ndata: {}\n\n: comment\n\n" + testkit.Transcript(delta(`{"role":"assistant","content":"Let me check."}`, "null"),
			delta(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "null"),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, "null"),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "null"),
			delta(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"now","arguments":"{}"}}]}`, "null"),
			delta(`{}`, `"tool_calls"`), usage), false},
		{"stop_sequence", testkit.Transcript(delta(`{"role":"assistant","content":"Done "}`, "null"),
			chunk(`{"index":0,"delta":{},"finish_reason":"stop","stop_reason":"END"}`), usage), false},
		{"max_tokens_no_usage", testkit.Transcript(delta(`{"content":"Once upon a"}`, "null"), delta(`{}`, `"length"`)), false},
		{"empty", testkit.Transcript(), false},
		{"fallback_notice", testkit.Transcript(delta(`{"content":"Hi"}`, `"stop"`), usage), true},
		{"cut", "data: " + delta(`{"role":"assistant","content":"Hel"}`, "null") + "\n\n", false},
		{"upstream_error_event", testkit.Transcript(delta(`{"content":"Hel"}`, "null"), `{"error":{"message":"backend exploded"}}`), false},
		{"interleaved_tool_calls", testkit.Transcript(
			delta(`{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"a","arguments":"{"}}]}`, "null"),
			delta(`{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"b","arguments":"{}"}}]}`, "null"),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}`, "null")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv()
			answer := testkit.Stream(tt.upstream)
			if tt.fallback {
				answer = testkit.Fallback(answer)
			}
			e.up.Add(answer)
			w := e.serve(t, call{body: req})
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, Content-Type %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
			}
			body := w.Body.String()
			testkit.Golden(t, "stream_"+tt.name+".golden", body, *update)
			for _, ev := range testkit.ParseSSE(t, body) {
				if ev.Type == "" {
					t.Errorf("event without an event: line: %q", ev.Data)
				}
			}
			if want := tt.fallback; (w.Header().Get("Gw-Notice") == "backend_fallback") != want {
				t.Errorf("GW-Notice = %q, want backend_fallback: %v", w.Header().Get("Gw-Notice"), want)
			}
			complete := strings.HasSuffix(body, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
			cut := strings.Contains(body, "event: error\n")
			if complete == cut {
				t.Errorf("stream ends with message_stop %v, with an error event %v: want exactly one", complete, cut)
			}
		})
	}
}
