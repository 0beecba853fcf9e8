package responses_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/testkit"
)

// TestRequestTranslation: each Responses API request becomes the
// chat-completions request of its golden file testdata/request_<name>.golden,
// as the upstream receives it (after the pre-flight checks), and its JSON
// answer validates against OpenAI's Response schema.
func TestRequestTranslation(t *testing.T) {
	tests := []struct{ name, body string }{
		{"string", `{"model":"lm-4-scout","input":"Hello","instructions":"Be brief.","max_output_tokens":256,"temperature":0.2,"top_p":0.9,
			"metadata":{"trace":"t-1"},"store":false,"user":"opaque","safety_identifier":"x","prompt_cache_key":"k","service_tier":"auto",
			"truncation":"disabled","background":false,"include":[],"reasoning":{"effort":null,"summary":null},"text":{"format":{"type":"text"}}}`},
		{"roles", `{"model":"lm-4-scout","input":[
			{"role":"system","content":"You are terse."},
			{"type":"message","role":"developer","content":[{"type":"input_text","text":"Answer in French."}]},
			{"role":"user","content":[{"type":"input_text","text":"One."},{"type":"input_text","text":"Two."}]},
			{"role":"assistant","content":"Un. Deux."},
			{"type":"message","role":"assistant","id":"msg_x","status":"completed","content":[{"type":"output_text","text":"Trois.","annotations":[]}]},
			{"role":"user","content":"Four?"}]}`},
		{"image", `{"model":"lm-4-scout","input":[{"role":"user","content":[
			{"type":"input_image","image_url":"data:image/png;base64,` + testkit.OnePixelPNG + `","detail":"low"},
			{"type":"input_text","text":"What is this?"}]}]}`},
		{"tools", `{"model":"lm-4-scout","input":"Weather in Paris?","parallel_tool_calls":false,
			"tools":[{"type":"function","name":"get_weather","description":"Current weather","strict":true,
				"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}},
				{"type":"function","name":"now"}],
			"tool_choice":{"type":"function","name":"get_weather"}}`},
		{"tool_choice_required", `{"model":"lm-4-scout","input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":"required"}`},
		{"tool_round_trip", `{"model":"lm-4-scout","input":[
			{"role":"user","content":"Weather in Paris and Rome?"},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]},
			{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
			{"type":"function_call","id":"fc_2","call_id":"call_2","name":"get_weather","arguments":"{\"city\":\"Rome\"}","status":"completed"},
			{"type":"function_call_output","call_id":"call_1","output":"sunny, 24°C"},
			{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"rain, "},{"type":"input_text","text":"12°C"}]}],
			"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`},
		{"json_object", `{"model":"lm-4-scout","input":"A colour as JSON?","text":{"format":{"type":"json_object"}}}`},
		{"json_schema", `{"model":"lm-4-scout","input":"A colour?","text":{"format":{"type":"json_schema","name":"colour","strict":true,
			"description":"One colour","schema":{"type":"object","properties":{"colour":{"type":"string"}},"required":["colour"],"additionalProperties":false}}}}`},
		{"stream", `{"model":"lm-4-scout","input":"Hi","stream":true,"stream_options":{"include_obfuscation":false}}`},
		{"floored", `{"model":"lm-reason","input":"think","max_output_tokens":5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			w := e.serve(t, call{body: tt.body})
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			testkit.Golden(t, "request_"+tt.name+".golden", e.up.Last(t), *update)
			if !strings.Contains(tt.body, `"stream":true`) {
				validate(t, "Response", w.Body.String())
			}
		})
	}
}

// TestAnswerTranslation: each upstream chat completion becomes the response
// of its golden file testdata/answer_<name>.golden, valid against OpenAI's
// Response schema.
func TestAnswerTranslation(t *testing.T) {
	const req = `{"model":"lm-4-scout","input":"hi","instructions":"Be brief.","metadata":{"k":"v"},
		"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"},"strict":false}]}`
	completion := func(choice, usage string) string {
		return `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"scout-17b-backend","choices":[` + choice + `],"usage":` + usage + `}`
	}
	usage := `{"prompt_tokens":20,"completion_tokens":7,"total_tokens":27}`
	tests := []struct{ name, upstream string }{
		{"text", completion(`{"index":0,"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}`,
			`{"prompt_tokens":20,"completion_tokens":7,"total_tokens":27,"prompt_tokens_details":{"cached_tokens":16},"completion_tokens_details":{"reasoning_tokens":3}}`)},
		{"tool_calls", completion(`{"index":0,"message":{"role":"assistant","content":"Checking.","tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},
			{"id":"","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},"finish_reason":"tool_calls"}`, usage)},
		{"length", completion(`{"index":0,"message":{"role":"assistant","content":"Once upon a"},"finish_reason":"length"}`, usage)},
		{"content_filter", completion(`{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"content_filter"}`, usage)},
		{"no_usage", `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":"stop"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.up.Add(testkit.JSON(tt.upstream))
			w := e.serve(t, call{body: req})
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, Content-Type %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
			}
			testkit.Golden(t, "answer_"+tt.name+".golden", testkit.Indent(t, w), *update)
			validate(t, "Response", w.Body.String())
		})
	}
}

// TestStreamTranslation: each upstream stream becomes the Responses API
// event sequence of its golden file testdata/stream_<name>.golden; every
// event has its type as event: line and the next sequence_number, and
// validates against OpenAI's ResponseStreamEvent schema.
func TestStreamTranslation(t *testing.T) {
	const req = `{"model":"lm-4-scout","input":"hi","stream":true,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`
	chunk := func(choices string) string {
		return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"scout-17b-backend","choices":[` + choices + `]}`
	}
	delta := func(d, finish string) string {
		return chunk(`{"index":0,"delta":` + d + `,"finish_reason":` + finish + `}`)
	}
	usage := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"scout-17b-backend","choices":[],` +
		`"usage":{"prompt_tokens":20,"completion_tokens":7,"total_tokens":27,"prompt_tokens_details":{"cached_tokens":4}}}`
	tests := []struct {
		name, upstream string
		fallback       bool
		end            string // the type of the last event
	}{
		{"text", testkit.Transcript(delta(`{"role":"assistant","content":""}`, "null"), delta(`{"content":"Hello"}`, "null"), "not a chunk",
			delta(`{"content":", world."}`, "null"), delta(`{}`, `"stop"`), usage), false, "response.completed"},
		{"tools", "event: vendor\ndata: {}\n\n: comment\n\n" + testkit.Transcript(delta(`{"role":"assistant","content":"Let me check."}`, "null"),
			delta(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "null"),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, "null"),
			delta(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":"}}]}`, "null"),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "null"),
			delta(`{"tool_calls":[{"index":1,"function":{"arguments":"\"Rome\"}"}}]}`, "null"),
			delta(`{}`, `"tool_calls"`), usage), false, "response.completed"},
		{"length_no_usage", testkit.Transcript(delta(`{"content":"Once upon a"}`, "null"), delta(`{}`, `"length"`)), false, "response.incomplete"},
		{"empty", testkit.Transcript(), false, "response.completed"},
		{"fallback_notice", testkit.Transcript(delta(`{"content":"Hi"}`, `"stop"`), usage), true, "response.completed"},
		{"cut", "data: " + delta(`{"role":"assistant","content":"Hel"}`, "null") + "\n\n", false, "error"},
		{"upstream_error_event", testkit.Transcript(delta(`{"content":"Hel"}`, "null"), `{"error":{"message":"backend exploded"}}`), false, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
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
			evs := validateStream(t, body)
			if got := evs[len(evs)-1].Type; got != tt.end {
				t.Errorf("last event %q, want %q", got, tt.end)
			}
			if want := tt.fallback; (w.Header().Get("Gw-Notice") == "backend_fallback") != want {
				t.Errorf("GW-Notice = %q, want backend_fallback: %v", w.Header().Get("Gw-Notice"), want)
			}
		})
	}
}
