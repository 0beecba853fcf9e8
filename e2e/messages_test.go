package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
)

// The Messages API (issue 17 item 3; DECISIONS 9.4): Anthropic's wire format
// at the gateway's edge, the backends still chat-completions backends, and
// every rule of /v1/chat/completions applied.

// apiKey is the header Anthropic clients authenticate with.
func apiKey(tok string) H { return H{"x-api-key": tok, "anthropic-version": "2023-06-01"} }

// message is a Messages API body of one user message to model.
func message(model, text string, extra map[string]any) map[string]any {
	b := map[string]any{"model": model, "max_tokens": 256, "messages": []any{map[string]any{"role": "user", "content": text}}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// wantAnthropicErr checks an error answer of the Messages API's routes:
// status, Anthropic's shape {"type":"error","error":{...}} with the
// catalog's type, the gateway's code and param, no gw_code, JSON and
// x-request-id.
func wantAnthropicErr(t *testing.T, r *resp, status int, typ, code, param, ref string) {
	t.Helper()
	var body struct {
		Type  string         `json:"type"`
		Error map[string]any `json:"error"`
	}
	var problems []string
	if r.Status != status {
		problems = append(problems, fmt.Sprintf("status %d, want %d", r.Status, status))
	}
	top := r.JSON()
	if err := json.Unmarshal(r.Body, &body); err != nil || body.Type != "error" || body.Error == nil {
		problems = append(problems, `body is not {"type":"error","error":{...}}`)
	} else {
		e := body.Error
		if e["type"] != typ || e["code"] != code {
			problems = append(problems, fmt.Sprintf("error.type %v, error.code %v; want %s, %s", e["type"], e["code"], typ, code))
		}
		if msg, _ := e["message"].(string); msg == "" {
			problems = append(problems, "error.message empty")
		}
		if u := e["doc_url"]; u != "/docs/errors#"+code {
			problems = append(problems, fmt.Sprintf("error.doc_url %v, want /docs/errors#%s (issue 16 item 8)", u, code))
		}
		if p, ok := e["param"]; !ok || (param == noParam && p != nil) || (param != noParam && param != anyParam && p != param) {
			problems = append(problems, fmt.Sprintf("error.param %#v, want %q", p, printable(param)))
		}
	}
	if _, ok := top["gw_code"]; ok {
		problems = append(problems, "gw_code in Anthropic's shape")
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		problems = append(problems, fmt.Sprintf("Content-Type %q", ct))
	}
	if r.Header.Get("X-Request-Id") == "" {
		problems = append(problems, "no x-request-id")
	}
	if len(problems) > 0 {
		t.Errorf("%s\n  want %d %s/%s [%s]\n  problems: %s", r, status, typ, code, ref, strings.Join(problems, "; "))
	}
}

// anthropicEvents checks that every event of a Messages API stream has its
// event: line and JSON data, and returns them.
func anthropicEvents(t *testing.T, r *resp) []testkit.Event {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("%s: Content-Type %q, want text/event-stream", r, ct)
	}
	evs := testkit.ParseSSE(t, string(r.Body))
	for _, ev := range evs {
		if ev.Type == "" || !json.Valid([]byte(ev.Data)) {
			t.Errorf("event %q %q: every event needs an event: line and JSON data (issue 17: clients drop events without one)", ev.Type, ev.Data)
		}
	}
	return evs
}

// names returns the event names of evs, joined.
func names(evs []testkit.Event) string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return strings.Join(out, " ")
}

// streamedText joins the text_delta texts of evs.
func streamedText(evs []testkit.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		var d struct {
			Delta struct{ Type, Text string } `json:"delta"`
		}
		if ev.Type == "content_block_delta" && json.Unmarshal([]byte(ev.Data), &d) == nil && d.Delta.Type == "text_delta" {
			b.WriteString(d.Delta.Text)
		}
	}
	return b.String()
}

func TestMessagesJSONAndStream(t *testing.T) {
	t.Parallel()
	g := start(t, nil)

	// JSON: the message, and the chat-completions request the backend got.
	r := g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout-local", "Hello", map[string]any{
		"system": "Be brief.", "stop_sequences": []string{"END"}, "temperature": 0.3, "metadata": map[string]any{"user_id": "opaque"},
	}), apiKey(tokMember))
	if !wantStatus(t, r, 200, "issue 17 item 3") {
		return
	}
	m := r.JSON()
	content, _ := m["content"].([]any)
	if m["type"] != "message" || m["role"] != "assistant" || m["model"] != "lm-4-scout-local" || m["stop_reason"] != "end_turn" ||
		len(content) != 1 || str(content[0].(map[string]any)["text"]) != upstreamtest.DefaultContent || !strings.HasPrefix(str(m["id"]), "msg_") {
		t.Errorf("message %s: want type message, role assistant, the alias, end_turn and the backend's text", r.Body)
	}
	usage, _ := m["usage"].(map[string]any)
	if usage["input_tokens"] != 12.0 || usage["output_tokens"] != 3.0 {
		t.Errorf("usage %v, want the backend's 12 prompt and 3 completion tokens", usage)
	}
	sent := lastBody(t, g.Local, "/chat/completions")
	msgs := messagesOf(sent)
	if len(msgs) != 2 || msgs[0]["role"] != "system" || textOf(msgs[0]) != "Be brief." || msgs[1]["role"] != "user" || textOf(msgs[1]) != "Hello" ||
		sent["max_tokens"] != 256.0 || fmt.Sprint(sent["stop"]) != "[END]" || sent["temperature"] != 0.3 || sent["metadata"] != nil {
		t.Errorf("the backend got %s: want the system message, the user message, max_tokens, stop and temperature (and no metadata)", mustJSON(sent))
	}

	// Stream: Anthropic's event sequence, the usage in message_delta.
	r = g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout-local", "Hello", map[string]any{"stream": true}), apiKey(tokMember))
	if !wantStatus(t, r, 200, "issue 17 item 3") {
		return
	}
	evs := anthropicEvents(t, r)
	want := "message_start content_block_start content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := names(evs); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if got := streamedText(evs); got != upstreamtest.DefaultContent {
		t.Errorf("streamed text %q, want %q", got, upstreamtest.DefaultContent)
	}
	if d := evs[len(evs)-2].Data; !strings.Contains(d, `"stop_reason":"end_turn"`) || !strings.Contains(d, `"input_tokens":12`) || !strings.Contains(d, `"output_tokens":3`) {
		t.Errorf("message_delta %s: want end_turn and the backend's usage (the gateway asks for it with stream_options)", d)
	}
	if so, _ := lastBody(t, g.Local, "/chat/completions")["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Error("a streamed message did not ask the backend for usage (stream_options.include_usage)")
	}

	// count_tokens: the estimate, no upstream call.
	before := chatCalls(g.Local)
	r = g.do(t, "POST", "/v1/messages/count_tokens", "", "", map[string]any{"model": "lm-4-scout-local",
		"messages": []any{map[string]any{"role": "user", "content": "Hello"}}}, apiKey(tokMember))
	if wantStatus(t, r, 200, "issue 17 item 3") && r.JSON()["input_tokens"] != 6.0 {
		t.Errorf("count_tokens %s, want 6 (4 per message + 5 bytes / 3)", r.Body)
	}
	if chatCalls(g.Local) != before {
		t.Error("count_tokens called the backend")
	}

	// The model retrieval of the OpenAI clients (issue 17 item 4).
	r = g.get(t, "/v1/models/lm-4-scout", tokMember, "")
	if wantStatus(t, r, 200, "issue 17 item 4") {
		if m := r.JSON(); m["id"] != "lm-4-scout" || m["object"] != "model" {
			t.Errorf("GET /v1/models/lm-4-scout = %s", r.Body)
		}
	}
	wantErr(t, g.get(t, "/v1/models/lm-transcribe", tokMember, ""), 404, "not_found_error", "route_not_found", noParam, "issue 17 item 4: outside the allowlist")
	wantErr(t, g.get(t, "/v1/models/claude-opus-4", tokMember, ""), 404, "not_found_error", "route_not_found", noParam, "issue 17 item 4: unknown")
	wantErr(t, g.get(t, "/v1/models/lm-4-scout", tokRestrict, ""), 403, "permission_error", "forbidden", noParam, "DECISIONS 9.4: models:read")
}

// TestMessagesToolUseTwoTurns: a tool call streamed in the first turn and
// its result sent back in the second reach the backend as chat completions
// has them.
func TestMessagesToolUseTwoTurns(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	chunk := func(d, finish string) string {
		return `{"id":"chatcmpl-tools","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + d + `,"finish_reason":` + finish + `}]}`
	}
	g.Local.Enqueue(upstreamtest.Reply{Events: []string{
		chunk(`{"role":"assistant","content":"Checking."}`, "null"),
		chunk(`{"tool_calls":[{"index":0,"id":"call_w","type":"function","function":{"name":"get_weather","arguments":"{\"city\":"}}]}`, "null"),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "null"),
		chunk(`{}`, `"tool_calls"`),
	}})
	tools := []any{map[string]any{"name": "get_weather", "description": "Weather", "input_schema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}
	question := map[string]any{"role": "user", "content": "Weather in Paris?"}
	r := g.do(t, "POST", "/v1/messages", "", "", map[string]any{"model": "lm-4-scout-local", "max_tokens": 200, "stream": true,
		"messages": []any{question}, "tools": tools}, apiKey(tokMember))
	evs := anthropicEvents(t, r)
	body := string(r.Body)
	for _, want := range []string{`"content_block":{"type":"tool_use","id":"call_w","name":"get_weather","input":{}}`,
		`"partial_json":"{\"city\":"`, `"partial_json":"\"Paris\"}"`, `"stop_reason":"tool_use"`} {
		if !strings.Contains(body, want) {
			t.Errorf("first turn lacks %s:\n%s", want, body)
		}
	}
	if names(evs) == "" || evs[len(evs)-1].Type != "message_stop" {
		t.Fatalf("first turn did not complete: %s", body)
	}
	sent := lastBody(t, g.Local, "/chat/completions")
	if tl, _ := sent["tools"].([]any); len(tl) != 1 || !strings.Contains(mustJSON(tl[0]), `"type":"function"`) || !strings.Contains(mustJSON(tl[0]), `"parameters":{`) {
		t.Errorf("the backend got tools %s, want function tools with parameters", mustJSON(sent["tools"]))
	}

	// Second turn: the assistant's tool_use and the user's tool_result.
	assistant := map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "text", "text": "Checking."},
		map[string]any{"type": "tool_use", "id": "call_w", "name": "get_weather", "input": map[string]any{"city": "Paris"}}}}
	result := map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "call_w", "content": "sunny"}}}
	r = g.do(t, "POST", "/v1/messages", "", "", map[string]any{"model": "lm-4-scout-local", "max_tokens": 200,
		"messages": []any{question, assistant, result}, "tools": tools}, apiKey(tokMember))
	if !wantStatus(t, r, 200, "issue 17 item 3: tool_result") {
		return
	}
	msgs := messagesOf(lastBody(t, g.Local, "/chat/completions"))
	if len(msgs) != 3 || msgs[1]["role"] != "assistant" || !strings.Contains(mustJSON(msgs[1]["tool_calls"]), `"id":"call_w"`) ||
		!strings.Contains(mustJSON(msgs[1]["tool_calls"]), `{\"city\":\"Paris\"}`) ||
		msgs[2]["role"] != "tool" || msgs[2]["tool_call_id"] != "call_w" || textOf(msgs[2]) != "sunny" {
		t.Errorf("second turn reached the backend as %s: want the assistant's tool call and a tool message", mustJSON(msgs))
	}
}

// TestMessagesFallbackAndCut: a fallback before the first byte is a
// gw.notice event (and GW-Notice); a stream the backend cuts after the
// first byte ends with an error event, without message_stop.
func TestMessagesFallbackAndCut(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) {
		s.LocalURL = refused(t)
		s.CloudB.Reply = upstreamtest.Reply{Chunks: 4, Drop: true, DropAfter: 2}
	})
	r := g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout", "Hello", map[string]any{"stream": true}), apiKey(tokMember))
	evs := anthropicEvents(t, r)
	want := "message_start content_block_start content_block_delta content_block_delta content_block_delta content_block_stop message_delta gw.notice message_stop"
	if got := names(evs); got != want {
		t.Errorf("fallback stream events %q, want %q (DECISIONS 4: fallback before the first byte; DECISIONS 5: notices)", got, want)
	} else if n := evs[len(evs)-2].Data; !strings.Contains(n, `"type":"gw.notice"`) || !strings.Contains(n, `"code":"backend_fallback"`) || strings.Contains(n, "sk-") {
		t.Errorf("gw.notice %s", n)
	}
	if got := r.Header.Get("Gw-Notice"); got != "backend_fallback" {
		t.Errorf("GW-Notice %q, want backend_fallback", got)
	}
	if chatCalls(g.CloudA) == 0 {
		t.Error("the answer did not come from cloudA")
	}
	r = g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout", "Hello", nil), apiKey(tokMember))
	if wantStatus(t, r, 200, "DECISIONS 4") && r.Header.Get("Gw-Notice") != "backend_fallback" {
		t.Errorf("JSON answer GW-Notice %q, want backend_fallback", r.Header.Get("Gw-Notice"))
	}

	r = g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout-cloudB", "Hello", map[string]any{"stream": true}), apiKey(tokMember))
	evs = anthropicEvents(t, r)
	if len(evs) == 0 || evs[len(evs)-1].Type != "error" || strings.Contains(names(evs), "message_stop") {
		t.Fatalf("cut stream events %q, want an error event last and no message_stop (issue 17: a stream cut after the first byte must end in event: error)", names(evs))
	}
	var e struct {
		Type  string
		Error struct{ Type, Code, Message string }
	}
	if json.Unmarshal([]byte(evs[len(evs)-1].Data), &e); e.Type != "error" || e.Error.Code != "upstream_error" || e.Error.Type != "api_error" || e.Error.Message == "" {
		t.Errorf("error event %s, want {type:error, error:{type:api_error, code:upstream_error, message}}", evs[len(evs)-1].Data)
	}
	if !strings.Contains(names(evs), "content_block_delta") {
		t.Errorf("cut stream %q: want the text before the cut", names(evs))
	}
}

// TestMessagesErrors: the gateway's own refusals on the Messages API's
// routes, the middleware's included, in Anthropic's shape.
func TestMessagesErrors(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) { s.Env["GATEWAY_BODY_LIMIT_BYTES"] = "4096" })
	ok := message("lm-4-scout-local", "hi", nil)

	wantAnthropicErr(t, g.do(t, "POST", "/v1/messages", "", "", ok, apiKey("wrong-token")), 401, "authentication_error", "invalid_authorization", "headers.authorization", "DECISIONS 9.4: x-api-key, same rules")
	wantAnthropicErr(t, g.do(t, "POST", "/v1/messages", "", "", ok, nil), 401, "authentication_error", "missing_authorization", "headers.authorization", "spec Authentication 4")
	wantAnthropicErr(t, g.do(t, "POST", "/v1/messages", tokAdmin, "", ok, apiKey(tokMember)), 401, "authentication_error", "invalid_authorization", "headers.authorization", "two tokens")
	wantAnthropicErr(t, g.do(t, "POST", "/v1/messages", "", "", ok, apiKey(tokRestrict)), 403, "permission_error", "forbidden", noParam, "DECISIONS 9.4: chat:write")
	wantAnthropicErr(t, g.do(t, "POST", "/v1/messages/count_tokens", "", "", ok, apiKey(tokRestrict)), 403, "permission_error", "forbidden", noParam, "DECISIONS 9.4: chat:write")
	r405 := g.do(t, "GET", "/v1/messages", "", "", nil, apiKey(tokMember))
	wantAnthropicErr(t, r405, 405, "invalid_request_error", "method_not_allowed", noParam, "issue 16 item 8: a wrong method, in the route's shape")
	if got := r405.Header.Get("Allow"); got != "POST" {
		t.Errorf("%s: Allow %q, want POST", r405, got)
	}
	wantAnthropicErr(t, g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout-local", strings.Repeat("x", 5000), nil), apiKey(tokMember)),
		413, "request_too_large", "body_too_large", noParam, "spec Limits: body size")
	wantAnthropicErr(t, g.do(t, "POST", "/v1/messages", "", "", map[string]any{"model": "lm-4-scout-local", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}, apiKey(tokMember)),
		400, "invalid_request_error", "missing_field", "max_tokens", "issue 17: max_tokens required")
	wantAnthropicErr(t, g.do(t, "POST", "/v1/messages", "", "", message("lm-transcribe", "hi", nil), apiKey(tokMember)),
		400, "invalid_request_error", "model_not_in_allowlist", "model", "spec /v1/chat/completions: model in the allowlist")
	wantAnthropicErr(t, g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout-local", "hi", map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 2048}}), apiKey(tokMember)),
		400, "invalid_request_error", "invalid_field", "thinking", "issue 17: unsupported features answer a catalogued 400 naming the field")
	wantAnthropicErr(t, g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout-local", "hi", map[string]any{"user_id": "u1"}), apiKey(tokMember)),
		400, "invalid_request_error", "invalid_field", "body.user_id", "spec End-user identity 2")
	r := g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout-local", "hi", map[string]any{"metadata": map[string]any{"user_id": "u1"}}), apiKey(tokMember))
	wantStatus(t, r, 200, "metadata.user_id is nested data, not the banned top-level user_id")

	// The rate limit (tokRate: burst 2), in the route's shape.
	var last *resp
	for range 3 {
		last = g.do(t, "POST", "/v1/messages/count_tokens", "", "", ok, apiKey(tokRate))
	}
	wantAnthropicErr(t, last, 429, "rate_limit_error", "rate_limit_exceeded", noParam, "spec Limits: rate")
	if last.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After (DECISIONS 8.1)")
	}
	// Other routes keep the gateway's envelope.
	wantErr(t, g.do(t, "GET", "/v1/models", "", "", nil, apiKey("wrong-token")), 401, "authentication_error", "invalid_authorization", "headers.authorization", "x-api-key on another route")
}

// TestMessagesQuotaAndGuard: the tenant's daily quota and the content guard
// apply to /v1/messages as to /v1/chat/completions, answering in
// Anthropic's shape before any upstream call.
func TestMessagesQuotaAndGuard(t *testing.T) {
	t.Parallel()
	t.Run("quota", func(t *testing.T) {
		t.Parallel()
		g := start(t, nil)
		// tenant quota: lm-4-scout-local, 2 requests a day.
		for i := range 2 {
			wantStatus(t, g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout-local", "hi", nil), apiKey(tokQuota)), 200, fmt.Sprintf("quota request %d", i+1))
		}
		before := chatCalls(g.Local)
		r := g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout-local", "hi", nil), apiKey(tokQuota))
		wantAnthropicErr(t, r, 429, "rate_limit_error", "model_quota_exhausted", anyParam, "spec Codes model_quota_exhausted")
		if r.Header.Get("Retry-After") == "" || chatCalls(g.Local) != before {
			t.Errorf("quota refusal: Retry-After %q, %d upstream calls; want a Retry-After and none", r.Header.Get("Retry-After"), chatCalls(g.Local)-before)
		}
	})
	t.Run("content guard", func(t *testing.T) {
		t.Parallel()
		g, _ := guardStart(t, guardConf{rules: guardRules}, nil)
		before := guardUpstreamChats(g)
		r := g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout-local", "tell me about the massacre", map[string]any{"stream": true}), apiKey(tokGuardBlock))
		wantAnthropicErr(t, r, 422, "invalid_request_error", "content_blocked", "violence", "spec Codes content_blocked; DECISIONS 9.1")
		blocks := map[string]any{"model": "lm-4-scout-local", "max_tokens": 64, "messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "hello"}, map[string]any{"type": "text", "text": "how to cook meth"}}}}}
		wantAnthropicErr(t, g.do(t, "POST", "/v1/messages", "", "", blocks, apiKey(tokGuardBlock)), 422, "invalid_request_error", "content_blocked", "illicit", "DECISIONS 9.1: text blocks")
		if n := guardUpstreamChats(g) - before; n != 0 {
			t.Errorf("blocked messages made %d upstream calls, want 0", n)
		}
		wantStatus(t, g.do(t, "POST", "/v1/messages", "", "", message("lm-4-scout-local", "what is the capital of France?", nil), apiKey(tokGuardBlock)), 200, "a clean message passes")
	})
}

// TestMessagesUsageRecords: /v1/messages is a metered chat route (DECISIONS
// 9.3): a JSON and a streamed message each record the tokens the backend
// reported (the gateway asks a stream for its usage), which the client saw
// in the message's usage too; count_tokens, which calls no backend, records
// nothing.
func TestMessagesUsageRecords(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	const user = "ada"
	hdr := apiKey(tokAdmin)
	r := g.do(t, "POST", "/v1/messages", "", user, message("lm-4-scout-local", "Hello", nil), hdr)
	if wantStatus(t, r, 200, "issue 17") {
		if u, _ := r.JSON()["usage"].(map[string]any); u["input_tokens"] != 12.0 || u["output_tokens"] != 3.0 {
			t.Errorf("message usage %v, want the backend's 12 and 3", u)
		}
	}
	wantStatus(t, g.do(t, "POST", "/v1/messages", "", user, message("lm-4-scout-local", "Hello", map[string]any{"stream": true}), hdr), 200, "issue 17")
	wantStatus(t, g.do(t, "POST", "/v1/messages/count_tokens", "", user, message("lm-4-scout-local", "Hello", nil), hdr), 200, "issue 17")
	got := usageGroups(t, g, tokAdmin, user, "group_by=kind", 2, func(it map[string]any) string { return str(it["kind"]) })
	if diff := cmp.Diff(map[string]usageTotals{"chat": {Requests: 2, In: 24, Out: 6}}, got); diff != "" {
		t.Errorf("usage of the messages mismatch (-want +got):\n%s", diff)
	}
}
