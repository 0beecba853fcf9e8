package anthropic_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/anthropic"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
)

// TestCreateMessageErrors: every refusal answers in Anthropic's error shape
// with the catalog's status, code and a param naming the Messages API's
// field, and nothing reaches the upstream.
func TestCreateMessageErrors(t *testing.T) {
	msg := func(extra string) string {
		return `{"model":"lm-4-scout","max_tokens":10,"messages":[{"role":"user","content":"hi"}]` + extra + `}`
	}
	blocks := func(content string) string {
		return `{"model":"lm-4-scout","max_tokens":10,"messages":[{"role":"user","content":[` + content + `]}]}`
	}
	image := func(source string) string { return blocks(`{"type":"image","source":` + source + `}`) }
	tests := []struct {
		name, body string
		tenant     *auth.Tenant
		want       testkit.Error
	}{
		{"not JSON", `{"model":`, nil, testkit.WantError(errcat.InvalidJSON, "")},
		{"not an object", `[]`, nil, testkit.WantError(errcat.InvalidJSON, "")},
		{"missing messages", `{"model":"lm-4-scout","max_tokens":1}`, nil, testkit.WantError(errcat.MissingField, "messages")},
		{"missing model", `{"max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, nil, testkit.WantError(errcat.MissingField, "model")},
		{"missing max_tokens", `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}]}`, nil, testkit.WantError(errcat.MissingField, "max_tokens")},
		{"max_tokens not an integer", `{"model":"lm-4-scout","max_tokens":1.5,"messages":[{"role":"user","content":"hi"}]}`, nil, testkit.WantError(errcat.InvalidField, "max_tokens")},
		{"max_tokens zero", `{"model":"lm-4-scout","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, nil, testkit.WantError(errcat.MaxTokensBelowMinimum, "max_tokens")},
		{"model not a string", `{"model":7,"max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, nil, testkit.WantError(errcat.InvalidField, "model")},
		{"model not allowed", msg(``), &auth.Tenant{ID: "acme", Models: []string{"lm-text"}}, testkit.WantError(errcat.ModelNotInAllowlist, "model")},
		{"unknown model", strings.Replace(msg(``), "lm-4-scout", "claude-sonnet-4-5", 1), nil, testkit.WantError(errcat.ModelNotInAllowlist, "model")},
		{"thinking enabled", msg(`,"thinking":{"type":"enabled","budget_tokens":1024}`), nil, testkit.WantError(errcat.InvalidField, "thinking")},
		{"top_k", msg(`,"top_k":5`), nil, testkit.WantError(errcat.InvalidField, "top_k")},
		{"mcp_servers", msg(`,"mcp_servers":[]`), nil, testkit.WantError(errcat.InvalidField, "mcp_servers")},
		{"unknown member", msg(`,"frobnicate":true`), nil, testkit.WantError(errcat.InvalidField, "frobnicate")},
		{"user_id in metadata is data", msg(`,"metadata":"u1"`), nil, testkit.WantError(errcat.InvalidField, "metadata")},
		{"temperature", msg(`,"temperature":2.5`), nil, testkit.WantError(errcat.InvalidField, "temperature")},
		{"temperature type", msg(`,"temperature":"hot"`), nil, testkit.WantError(errcat.InvalidField, "temperature")},
		{"stream type", msg(`,"stream":"yes"`), nil, testkit.WantError(errcat.InvalidField, "stream")},
		{"stop_sequences type", msg(`,"stop_sequences":"END"`), nil, testkit.WantError(errcat.InvalidField, "stop_sequences")},
		{"system type", msg(`,"system":[{"type":"image"}]`), nil, testkit.WantError(errcat.InvalidField, "system[0]")},
		{"messages empty", `{"model":"lm-4-scout","max_tokens":1,"messages":[]}`, nil, testkit.WantError(errcat.InvalidField, "messages")},
		{"role", `{"model":"lm-4-scout","max_tokens":1,"messages":[{"role":"system","content":"x"}]}`, nil, testkit.WantError(errcat.InvalidField, "messages[0].role")},
		{"content empty", `{"model":"lm-4-scout","max_tokens":1,"messages":[{"role":"user","content":[]}]}`, nil, testkit.WantError(errcat.InvalidField, "messages[0].content")},
		{"text without text", blocks(`{"type":"text"}`), nil, testkit.WantError(errcat.MissingField, "messages[0].content[0].text")},
		{"document block", blocks(`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}`), nil, testkit.WantError(errcat.InvalidField, "messages[0].content[0].type")},
		{"thinking block", `{"model":"lm-4-scout","max_tokens":1,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"}]}]}`,
			nil, testkit.WantError(errcat.InvalidField, "messages[1].content[0].type")},
		{"tool_use from the user", blocks(`{"type":"tool_use","id":"t","name":"f","input":{}}`), nil, testkit.WantError(errcat.InvalidField, "messages[0].content[0].type")},
		{"tool_use input", `{"model":"lm-4-scout","max_tokens":1,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":"{}"}]}]}`,
			nil, testkit.WantError(errcat.InvalidField, "messages[1].content[0].input")},
		{"tool_result without id", blocks(`{"type":"tool_result","content":"x"}`), nil, testkit.WantError(errcat.MissingField, "messages[0].content[0].tool_use_id")},
		{"tool_result document", blocks(`{"type":"tool_result","tool_use_id":"t","content":[{"type":"document"}]}`), nil, testkit.WantError(errcat.InvalidField, "messages[0].content[0].content[0].type")},
		{"file image", image(`{"type":"file","file_id":"f1"}`), nil, testkit.WantError(errcat.InvalidField, "messages[0].content[0].source.type")},
		{"bad base64", image(`{"type":"base64","media_type":"image/png","data":"%%%%"}`), nil, testkit.WantError(errcat.ImageBase64Invalid, "messages[].content[].source")},
		{"not an image", image(`{"type":"base64","media_type":"image/png","data":"aGVsbG8gd29ybGQ="}`), nil, testkit.WantError(errcat.ImageDecodeError, "messages[].content[].source")},
		{"http image", image(`{"type":"url","url":"https://example.com/cat.png"}`), nil, testkit.WantError(errcat.ImageURLNotSupported, "messages[].content[].source")},
		{"image to a text model", strings.Replace(image(`{"type":"base64","media_type":"image/png","data":"`+testkit.OnePixelPNG+`"}`), "lm-4-scout", "lm-text", 1),
			nil, testkit.WantError(errcat.ModelNotVisionCapable, "messages[].content[].source")},
		{"server tool", msg(`,"tools":[{"type":"web_search_20250305","name":"web_search"}]`), nil, testkit.WantError(errcat.InvalidField, "tools[0].type")},
		{"tool without schema", msg(`,"tools":[{"name":"f"}]`), nil, testkit.WantError(errcat.MissingField, "tools[0].input_schema")},
		{"strict tool", msg(`,"tools":[{"name":"f","input_schema":{"type":"object"},"strict":true}]`), nil, testkit.WantError(errcat.InvalidField, "tools[0].strict")},
		{"tool_choice any without tools", msg(`,"tool_choice":{"type":"any"}`), nil, testkit.WantError(errcat.InvalidField, "tool_choice")},
		{"tool_choice type", msg(`,"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"some"}`), nil, testkit.WantError(errcat.InvalidField, "tool_choice.type")},
		{"tool_choice without name", msg(`,"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"tool"}`), nil, testkit.WantError(errcat.MissingField, "tool_choice.name")},
		{"effort", msg(`,"output_config":{"effort":"high"}`), nil, testkit.WantError(errcat.InvalidField, "output_config.effort")},
		{"format type", msg(`,"output_config":{"format":{"type":"xml"}}`), nil, testkit.WantError(errcat.InvalidField, "output_config.format.type")},
		{"context window", `{"model":"lm-text","max_tokens":10,"messages":[{"role":"user","content":"` + strings.Repeat("word ", 100) + `"}]}`,
			nil, testkit.WantError(errcat.ContextWindowExceeded, "messages")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv()
			w := e.serve(t, call{body: tt.body, tenant: tt.tenant})
			testkit.CheckError(t, w, tt.want)
			checkShape(t, w.Body.Bytes())
			if n := e.up.Calls(); n != 0 {
				t.Errorf("%d upstream calls, want none", n)
			}
		})
	}
}

// checkShape checks that body is Anthropic's error shape:
// {"type":"error","error":{"type","message","code","param"}}, error.type the
// catalog's type of error.code.
func checkShape(t *testing.T, body []byte) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	var e struct {
		Type  string         `json:"type"`
		Error map[string]any `json:"error"`
	}
	json.Unmarshal(body, &e)
	if _, gw := top["gw_code"]; e.Type != "error" || gw || len(e.Error) != 5 || e.Error["message"] == "" {
		t.Errorf("error body %s: want {\"type\":\"error\",\"error\":{type,message,code,param,doc_url}}", body)
	}
	code, _ := e.Error["code"].(string)
	if u := e.Error["doc_url"]; u != errcat.DocURL(errcat.Code(code)) {
		t.Errorf("error.doc_url %v, want %s", u, errcat.DocURL(errcat.Code(code)))
	}
	if typ, _ := e.Error["type"].(string); typ != string(errcat.Lookup(errcat.Code(code)).Type) {
		t.Errorf("error.type %q, want the catalog's %q of %s", typ, errcat.Lookup(errcat.Code(code)).Type, code)
	}
}

// TestToolRoundTrip: a tool call over two turns. The first answer streams a
// tool_use block; the client, as the Anthropic SDK does, accumulates it into
// the assistant message it sends back with its tool_result; the upstream
// then gets the assistant's tool call and the tool's answer as chat
// completions has them, and the second answer is the final text.
func TestToolRoundTrip(t *testing.T) {
	e := newEnv()
	chunk := func(d, finish string) string {
		return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + d + `,"finish_reason":` + finish + `}]}`
	}
	e.up.Add(
		testkit.Stream(testkit.Transcript(chunk(`{"role":"assistant","content":"Looking it up."}`, "null"),
			chunk(`{"tool_calls":[{"index":0,"id":"call_w1","type":"function","function":{"name":"get_weather","arguments":"{\"ci"}}]}`, "null"),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]}`, "null"),
			chunk(`{}`, `"tool_calls"`))),
		testkit.JSON(testkit.Completion(`{"role":"assistant","content":"It is sunny in Paris."}`, "stop")))
	tools := `"tools":[{"name":"get_weather","description":"Weather of a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	question := `{"role":"user","content":"Weather in Paris?"}`

	w := e.serve(t, call{body: `{"model":"lm-4-scout","max_tokens":200,"stream":true,"messages":[` + question + `],` + tools + `}`})
	assistant, stop := accumulate(t, w.Body.String())
	if stop != "tool_use" {
		t.Fatalf("first turn stop_reason %q, want tool_use:\n%s", stop, w.Body)
	}
	want := `[{"type":"text","text":"Looking it up."},{"type":"tool_use","id":"call_w1","name":"get_weather","input":{"city":"Paris"}}]`
	if assistant != want {
		t.Fatalf("first turn content %s, want %s", assistant, want)
	}

	second := `{"model":"lm-4-scout","max_tokens":200,"messages":[` + question + `,{"role":"assistant","content":` + assistant + `},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_w1","content":"sunny, 24°C"}]}],` + tools + `}`
	w = e.serve(t, call{body: second})
	if w.Code != http.StatusOK {
		t.Fatalf("second turn: %d %s", w.Code, w.Body)
	}
	testkit.Golden(t, "roundtrip_upstream.golden", e.up.Last(t), *update)
	testkit.Golden(t, "roundtrip_answer.golden", testkit.Indent(t, w), *update)
}

// accumulate builds the content of the message a stream carries as the
// Anthropic SDK's MessageStream does (text deltas joined, input_json_delta
// parsed at content_block_stop), and returns it as JSON with the
// stop_reason of message_delta.
func accumulate(t *testing.T, stream string) (string, string) {
	t.Helper()
	type blk struct {
		Type  string          `json:"type"`
		Text  string          `json:"text,omitempty"`
		ID    string          `json:"id,omitempty"`
		Name  string          `json:"name,omitempty"`
		Input json.RawMessage `json:"input,omitempty"`
		json  string
	}
	var (
		content []*blk
		stop    string
	)
	for _, ev := range testkit.ParseSSE(t, stream) {
		var d struct {
			Index        int             `json:"index"`
			ContentBlock json.RawMessage `json:"content_block"`
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(ev.Data), &raw); err != nil {
			t.Fatalf("event %s %q: %v", ev.Type, ev.Data, err)
		}
		json.Unmarshal([]byte(ev.Data), &d)
		var delta map[string]string
		json.Unmarshal(raw["delta"], &delta)
		switch ev.Type {
		case "content_block_start":
			b := &blk{}
			json.Unmarshal(d.ContentBlock, b)
			b.Input = nil
			content = append(content, b)
		case "content_block_delta":
			switch delta["type"] {
			case "text_delta":
				content[d.Index].Text += delta["text"]
			case "input_json_delta":
				content[d.Index].json += delta["partial_json"]
			}
		case "content_block_stop":
			if b := content[d.Index]; b.Type == "tool_use" {
				if !json.Valid([]byte(b.json)) {
					t.Fatalf("tool input %q is not JSON", b.json)
				}
				b.Input = json.RawMessage(b.json)
			}
		case "message_delta":
			stop = delta["stop_reason"]
		case "error":
			t.Fatalf("stream ended by an error: %s", ev.Data)
		}
	}
	b, err := json.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), stop
}

// TestCountTokens: count_tokens answers the pre-flight estimate of the
// translated request (the injected system message included), needs no
// max_tokens, checks the model, and calls no upstream.
func TestCountTokens(t *testing.T) {
	e := newEnv(func(c *anthropic.Config) {
		c.Inject = func(context.Context, string, string) (string, error) { return "Memory: likes tea.", nil }
	})
	// messages: system "Be brief." (4 + 3), user "Hello there" (4 + 4); the
	// tools as translated, [{"type":"function","function":{...}}] (94 bytes: 32).
	body := `{"model":"lm-4-scout","system":"Be brief.","messages":[{"role":"user","content":"Hello there"}],` +
		`"tools":[{"name":"f","description":"d","input_schema":{"type":"object"}}]}`
	w := e.serve(t, call{path: "/v1/messages/count_tokens", body: body})
	var got struct {
		InputTokens int `json:"input_tokens"`
	}
	testkit.Decode(t, w, http.StatusOK, &got)
	if got.InputTokens != 4+3+4+4+32 {
		t.Errorf("input_tokens = %d, want %d", got.InputTokens, 4+3+4+4+32)
	}
	// With GW-User-Id, the injected memory counts too: (4 + 6).
	w = e.serve(t, call{path: "/v1/messages/count_tokens", body: body, header: http.Header{"Gw-User-Id": {"u1"}}})
	testkit.Decode(t, w, http.StatusOK, &got)
	if got.InputTokens != 4+3+4+4+32+10 {
		t.Errorf("input_tokens with injection = %d, want %d", got.InputTokens, 4+3+4+4+32+10)
	}
	w = e.serve(t, call{path: "/v1/messages/count_tokens", body: strings.Replace(body, "lm-4-scout", "lm-embed", 1)})
	testkit.CheckError(t, w, testkit.WantError(errcat.ModelNotInAllowlist, "model"))
	checkShape(t, w.Body.Bytes())
	if n := e.up.Calls(); n != 0 {
		t.Errorf("%d upstream calls, want none", n)
	}
}

// TestInjection: with GW-User-Id the memory and prompts come first, then
// the client's system; without it nothing is injected.
func TestInjection(t *testing.T) {
	var users []string
	e := newEnv(func(c *anthropic.Config) {
		c.Inject = func(_ context.Context, tenant, user string) (string, error) {
			users = append(users, tenant+"/"+user)
			return "Memory: likes tea.", nil
		}
	})
	body := `{"model":"lm-4-scout","max_tokens":10,"system":"Be brief.","messages":[{"role":"user","content":"hi"}]}`
	e.serve(t, call{body: body, header: http.Header{"Gw-User-Id": {"u1"}}})
	var sent struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	json.Unmarshal([]byte(e.up.Last(t)), &sent)
	if len(sent.Messages) != 3 || sent.Messages[0].Content != "Memory: likes tea." || sent.Messages[1].Content != "Be brief." {
		t.Errorf("messages sent %+v, want the injected system message, then the client's", sent.Messages)
	}
	e.serve(t, call{body: body})
	json.Unmarshal([]byte(e.up.Last(t)), &sent)
	if len(sent.Messages) != 2 || len(users) != 1 || users[0] != "acme/u1" {
		t.Errorf("without GW-User-Id: messages %+v, injections %q; want none", sent.Messages, users)
	}
}

// flagAll flags every input.
type flagAll struct{}

func (flagAll) Classify(context.Context, guard.Input) (guard.Verdict, error) {
	return guard.Verdict{Categories: []guard.Category{{Name: "violence", Score: 1}}}, nil
}

// TestContentGuardAndQuota: a block tenant's flagged request answers 422
// content_blocked, a tenant over its quota 429, both in Anthropic's shape
// and before any upstream call.
func TestContentGuardAndQuota(t *testing.T) {
	st := memstore.New()
	cat := testkit.ChatCatalog()
	fc := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	acct := quota.New(quota.Config{Store: st, Clock: fc, Catalog: cat})
	e := newEnv(func(c *anthropic.Config) { c.Classifier, c.Quota, c.Clock = flagAll{}, acct, fc })
	body := `{"model":"lm-4-scout","max_tokens":10,"messages":[{"role":"user","content":"something violent"}]}`

	blocked := &auth.Tenant{ID: "acme", Settings: auth.Settings{ContentGuard: "block"}}
	w := e.serve(t, call{body: body, tenant: blocked})
	testkit.CheckError(t, w, testkit.WantError(errcat.ContentBlocked, "violence"))
	checkShape(t, w.Body.Bytes())

	limited := &auth.Tenant{ID: "tiny", Quotas: map[string]auth.Quota{"lm-4-scout": {RequestsPerDay: 1}}}
	if w := e.serve(t, call{body: body, tenant: limited}); w.Code != http.StatusOK {
		t.Fatalf("first request within the quota: %d %s", w.Code, w.Body)
	}
	w = e.serve(t, call{body: body, tenant: limited})
	testkit.CheckError(t, w, testkit.WantError(errcat.ModelQuotaExhausted, ""))
	checkShape(t, w.Body.Bytes())
	if w.Header().Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if n := e.up.Calls(); n != 1 {
		t.Errorf("%d upstream calls, want only the one within the quota", n)
	}
}

// TestUpstreamErrors: an upstream failure before the first byte answers in
// Anthropic's shape with the gateway's code; a tool call whose arguments are
// not an object answers 502 upstream_error.
func TestUpstreamErrors(t *testing.T) {
	body := `{"model":"lm-4-scout","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name   string
		answer func() (*upstream.Response, error)
		want   testkit.Error
	}{
		{"unavailable", func() (*upstream.Response, error) {
			return nil, errcat.New(errcat.UpstreamUnavailable, "", "No backend could be reached.")
		}, testkit.WantError(errcat.UpstreamUnavailable, "")},
		{"bad request", func() (*upstream.Response, error) {
			return nil, &errcat.Error{Code: errcat.UpstreamBadRequest, Status: 422, Message: "unsupported"}
		}, testkit.Error{Status: 422, Code: string(errcat.UpstreamBadRequest)}},
		{"arguments not an object", testkit.JSON(testkit.Completion(
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}`, "tool_calls")),
			testkit.WantError(errcat.UpstreamError, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv()
			e.up.Add(tc.answer)
			w := e.serve(t, call{body: body})
			testkit.CheckError(t, w, tc.want)
			checkShape(t, w.Body.Bytes())
		})
	}
}

// TestJSONNoticeAndApplied: a JSON answer carries its notices in GW-Notice
// and a floored max_tokens in gw-applied.
func TestJSONNoticeAndApplied(t *testing.T) {
	e := newEnv()
	e.up.Add(testkit.Fallback(testkit.JSON(testkit.Completion(`{"role":"assistant","content":"hi"}`, "stop"))))
	w := e.serve(t, call{body: `{"model":"lm-reason","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`})
	if w.Code != http.StatusOK || w.Header().Get("Gw-Notice") != "backend_fallback" || w.Header().Get("Gw-Applied") != "max_tokens_floored=200" {
		t.Errorf("answer %d, headers %v; want 200 with GW-Notice backend_fallback and gw-applied", w.Code, w.Header())
	}
}
