package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// OpenAI's Responses API (issue 17 items 1 and 2; DECISIONS 9.4): the
// Responses wire format at the gateway's edge, the backends still
// chat-completions backends, every rule of /v1/chat/completions applied, and
// stored responses scoped to tenant and GW-User-Id.

// responsesEvents checks that every event of a Responses stream has its
// event: line equal to its data's type and the next sequence_number, and
// returns them.
func responsesEvents(t *testing.T, r *resp) []testkit.Event {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("%s: Content-Type %q, want text/event-stream", r, ct)
	}
	evs := testkit.ParseSSE(t, string(r.Body))
	for i, ev := range evs {
		var d struct {
			Type string `json:"type"`
			Seq  *int   `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &d); err != nil || d.Type != ev.Type || d.Seq == nil || *d.Seq != i {
			t.Errorf("event %d %q %s: want the data's type as event: line and sequence_number %d", i, ev.Type, ev.Data, i)
		}
	}
	return evs
}

// outputText joins the output_text parts of a response object.
func outputText(r map[string]any) string {
	var b strings.Builder
	out, _ := r["output"].([]any)
	for _, it := range out {
		m, _ := it.(map[string]any)
		parts, _ := m["content"].([]any)
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			if pm["type"] == "output_text" {
				b.WriteString(str(pm["text"]))
			}
		}
	}
	return b.String()
}

func TestResponsesJSONStreamAndStorage(t *testing.T) {
	t.Parallel()
	g := start(t, nil)

	// JSON: the response, and the chat-completions request the backend got.
	r := g.do(t, "POST", "/v1/responses", tokMember, "u1", map[string]any{"model": "lm-4-scout-local", "input": "Hello",
		"instructions": "Be brief.", "max_output_tokens": 256, "temperature": 0.3, "metadata": map[string]any{"k": "v"}}, nil)
	if !wantStatus(t, r, 200, "issue 17 item 1") {
		return
	}
	first := r.JSON()
	usage, _ := first["usage"].(map[string]any)
	if first["object"] != "response" || first["status"] != "completed" || first["model"] != "lm-4-scout-local" ||
		outputText(first) != upstreamtest.DefaultContent || !strings.HasPrefix(str(first["id"]), "resp_") ||
		usage["input_tokens"] != 12.0 || usage["output_tokens"] != 3.0 || first["store"] != true {
		t.Errorf("response %s: want a completed response of the alias with the backend's text and usage", r.Body)
	}
	sent := lastBody(t, g.Local, "/chat/completions")
	msgs := messagesOf(sent)
	if len(msgs) != 2 || msgs[0]["role"] != "system" || textOf(msgs[0]) != "Be brief." || textOf(msgs[1]) != "Hello" ||
		sent["max_tokens"] != 256.0 || sent["temperature"] != 0.3 || sent["metadata"] != nil {
		t.Errorf("the backend got %s: want the instructions, the input, max_tokens and temperature (and no metadata)", mustJSON(sent))
	}

	// Stream, continuing the first: the event sequence, the chain sent.
	r = g.do(t, "POST", "/v1/responses", tokMember, "u1", map[string]any{"model": "lm-4-scout-local", "input": "More",
		"previous_response_id": first["id"], "stream": true}, nil)
	if !wantStatus(t, r, 200, "issue 17 item 1") {
		return
	}
	evs := responsesEvents(t, r)
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.delta response.output_text.delta " +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if got := names(evs); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	var done struct{ Response map[string]any }
	json.Unmarshal([]byte(evs[len(evs)-1].Data), &done)
	if u, _ := done.Response["usage"].(map[string]any); outputText(done.Response) != upstreamtest.DefaultContent || u["total_tokens"] != 15.0 {
		t.Errorf("response.completed %s: want the whole text and the usage", evs[len(evs)-1].Data)
	}
	msgs = messagesOf(lastBody(t, g.Local, "/chat/completions"))
	if len(msgs) != 3 || textOf(msgs[0]) != "Hello" || msgs[1]["role"] != "assistant" || textOf(msgs[1]) != upstreamtest.DefaultContent || textOf(msgs[2]) != "More" {
		t.Errorf("the continuation reached the backend as %s: want the first input, its answer, the new input (no earlier instructions)", mustJSON(msgs))
	}

	// Stored: GET, input_items, scoping, DELETE.
	id := str(done.Response["id"])
	r = g.get(t, "/v1/responses/"+id, tokMember, "u1")
	if wantStatus(t, r, 200, "issue 17 item 2") && (r.JSON()["previous_response_id"] != first["id"] || outputText(r.JSON()) != upstreamtest.DefaultContent) {
		t.Errorf("GET %s: want the stored response", r.Body)
	}
	r = g.get(t, "/v1/responses/"+id+"/input_items?order=asc", tokMember, "u1")
	if wantStatus(t, r, 200, "issue 17 item 2") {
		l := r.JSON()
		data, _ := l["data"].([]any)
		if l["object"] != "list" || len(data) != 1 || l["has_more"] != false || l["first_id"] == "" {
			t.Errorf("input_items %s: want OpenAI's list of the one input item", r.Body)
		}
	}
	for _, who := range []struct{ token, user, ref string }{
		{tokMember, "u2", "another user"}, {tokMember, "", "no GW-User-Id"}, {tokGlobex, "u1", "another tenant"},
	} {
		wantErr(t, g.get(t, "/v1/responses/"+id, who.token, who.user), 404, "not_found_error", "response_not_found", "response_id", "issue 17: "+who.ref)
		wantErr(t, g.do(t, "POST", "/v1/responses", who.token, who.user, map[string]any{"model": "lm-4-scout-local", "input": "x", "previous_response_id": id}, nil),
			404, "not_found_error", "response_not_found", "previous_response_id", "issue 17: "+who.ref)
	}
	r = g.do(t, "DELETE", "/v1/responses/"+id, tokMember, "u1", nil, nil)
	if wantStatus(t, r, 200, "issue 17 item 2") && (r.JSON()["deleted"] != true || r.JSON()["object"] != "response" || r.JSON()["id"] != id) {
		t.Errorf("DELETE %s: want OpenAI's deletion object", r.Body)
	}
	wantErr(t, g.get(t, "/v1/responses/"+id, tokMember, "u1"), 404, "not_found_error", "response_not_found", "response_id", "deleted")

	// store false keeps nothing.
	r = g.do(t, "POST", "/v1/responses", tokMember, "", map[string]any{"model": "lm-4-scout-local", "input": "x", "store": false}, nil)
	if wantStatus(t, r, 200, "store false") {
		wantErr(t, g.get(t, "/v1/responses/"+str(r.JSON()["id"]), tokMember, ""), 404, "not_found_error", "response_not_found", "response_id", "store false")
	}
}

// TestResponsesToolCallTwoTurns: a function call streamed in the first turn,
// and its output sent back with previous_response_id (the OpenAI SDKs) or
// with the earlier items as item_reference items (the Vercel AI SDK), reach
// the backend as chat completions has them.
func TestResponsesToolCallTwoTurns(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	chunk := func(d, finish string) string {
		return `{"id":"chatcmpl-tools","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + d + `,"finish_reason":` + finish + `}]}`
	}
	call := upstreamtest.Reply{Events: []string{
		chunk(`{"role":"assistant","content":null}`, "null"),
		chunk(`{"tool_calls":[{"index":0,"id":"call_w","type":"function","function":{"name":"get_weather","arguments":"{\"city\":"}}]}`, "null"),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "null"),
		chunk(`{}`, `"tool_calls"`),
	}}
	tools := []any{map[string]any{"type": "function", "name": "get_weather", "description": "Weather", "strict": true,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}, "additionalProperties": false}}}
	for _, mode := range []string{"previous_response_id", "item_reference"} {
		g.Local.Enqueue(call)
		r := g.do(t, "POST", "/v1/responses", tokMember, "", map[string]any{"model": "lm-4-scout-local", "stream": true,
			"input": []any{map[string]any{"role": "user", "content": "Weather in Paris?"}}, "tools": tools}, nil)
		evs := responsesEvents(t, r)
		body := string(r.Body)
		for _, want := range []string{`"type":"function_call","status":"in_progress","call_id":"call_w","name":"get_weather","arguments":""`,
			`"type":"response.function_call_arguments.done"`, `"arguments":"{\"city\":\"Paris\"}"`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: first turn lacks %s:\n%s", mode, want, body)
			}
		}
		if len(evs) == 0 || evs[len(evs)-1].Type != "response.completed" {
			t.Fatalf("%s: first turn did not complete: %s", mode, body)
		}
		if tl, _ := lastBody(t, g.Local, "/chat/completions")["tools"].([]any); len(tl) != 1 || !strings.Contains(mustJSON(tl[0]), `"strict":true`) {
			t.Errorf("the backend got tools %s, want a function tool with strict", mustJSON(tl))
		}
		var done struct{ Response map[string]any }
		json.Unmarshal([]byte(evs[len(evs)-1].Data), &done)
		output := done.Response["output"].([]any)
		fc := output[0].(map[string]any)
		result := map[string]any{"type": "function_call_output", "call_id": "call_w", "output": "sunny"}
		second := map[string]any{"model": "lm-4-scout-local", "tools": tools}
		if mode == "previous_response_id" {
			second["previous_response_id"], second["input"] = done.Response["id"], []any{result}
		} else {
			items := g.get(t, "/v1/responses/"+str(done.Response["id"])+"/input_items", tokMember, "").JSON()
			user := items["data"].([]any)[0].(map[string]any)["id"]
			second["input"] = []any{map[string]any{"type": "item_reference", "id": user}, map[string]any{"type": "item_reference", "id": fc["id"]}, result}
		}
		r = g.do(t, "POST", "/v1/responses", tokMember, "", second, nil)
		if !wantStatus(t, r, 200, "issue 17 item 1: "+mode) {
			continue
		}
		msgs := messagesOf(lastBody(t, g.Local, "/chat/completions"))
		if len(msgs) != 3 || textOf(msgs[0]) != "Weather in Paris?" || msgs[1]["role"] != "assistant" || !strings.Contains(mustJSON(msgs[1]["tool_calls"]), `"id":"call_w"`) ||
			!strings.Contains(mustJSON(msgs[1]["tool_calls"]), `{\"city\":\"Paris\"}`) ||
			msgs[2]["role"] != "tool" || msgs[2]["tool_call_id"] != "call_w" || textOf(msgs[2]) != "sunny" {
			t.Errorf("%s: second turn reached the backend as %s: want the user message, the assistant's tool call and a tool message", mode, mustJSON(msgs))
		}
	}
}

// TestResponsesFallbackAndCut: a fallback before the first byte is named in
// GW-Notice (and a gw.notice event); a stream the backend cuts after the
// first byte ends with response.failed and an error event.
func TestResponsesFallbackAndCut(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) {
		s.LocalURL = refused(t)
		s.CloudB.Reply = upstreamtest.Reply{Chunks: 4, Drop: true, DropAfter: 2}
	})
	r := g.do(t, "POST", "/v1/responses", tokMember, "", map[string]any{"model": "lm-4-scout", "input": "Hello", "stream": true}, nil)
	evs := responsesEvents(t, r)
	if got := r.Header.Get("Gw-Notice"); got != "backend_fallback" {
		t.Errorf("GW-Notice %q, want backend_fallback", got)
	}
	if n := len(evs); n < 2 || evs[n-1].Type != "response.completed" || evs[n-2].Type != "gw.notice" || !strings.Contains(evs[n-2].Data, `"code":"backend_fallback"`) {
		t.Errorf("fallback stream events %q: want gw.notice before response.completed", names(evs))
	}
	r = g.do(t, "POST", "/v1/responses", tokMember, "", map[string]any{"model": "lm-4-scout", "input": "Hello"}, nil)
	if wantStatus(t, r, 200, "DECISIONS 4") && r.Header.Get("Gw-Notice") != "backend_fallback" {
		t.Errorf("JSON answer GW-Notice %q, want backend_fallback", r.Header.Get("Gw-Notice"))
	}

	r = g.do(t, "POST", "/v1/responses", tokMember, "", map[string]any{"model": "lm-4-scout-cloudB", "input": "Hello", "stream": true}, nil)
	evs = responsesEvents(t, r)
	n := len(evs)
	if n < 2 || evs[n-2].Type != "response.failed" || evs[n-1].Type != "error" || strings.Contains(names(evs), "response.completed") {
		t.Fatalf("cut stream events %q, want response.failed then error last, no response.completed", names(evs))
	}
	var e struct{ Type, Code, Message string }
	if json.Unmarshal([]byte(evs[n-1].Data), &e); e.Code != "upstream_error" || e.Message == "" {
		t.Errorf("error event %s, want code upstream_error and a message", evs[n-1].Data)
	}
	if !strings.Contains(names(evs), "response.output_text.delta") {
		t.Errorf("cut stream %q: want the text before the cut", names(evs))
	}
}

// TestResponsesErrors: the routes' scopes and the refusals of what cannot be
// honoured, in the gateway's envelope (OpenAI's shape).
func TestResponsesErrors(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	ok := map[string]any{"model": "lm-4-scout-local", "input": "hi"}
	with := func(k string, v any) map[string]any {
		return map[string]any{"model": "lm-4-scout-local", "input": "hi", k: v}
	}
	wantErr(t, g.do(t, "POST", "/v1/responses", tokRestrict, "", ok, nil), 403, "permission_error", "forbidden", noParam, "DECISIONS 9.4: chat:write")
	wantErr(t, g.do(t, "POST", "/v1/responses", "wrong-token", "", ok, nil), 401, "authentication_error", "invalid_authorization", "headers.authorization", "spec Authentication 4")
	wantErr(t, g.do(t, "POST", "/v1/responses", tokMember, "", with("tools", []any{map[string]any{"type": "web_search"}}), nil),
		400, "invalid_request_error", "invalid_field", "tools[0].type", "issue 17: built-in tools answer a catalogued 400")
	wantErr(t, g.do(t, "POST", "/v1/responses", tokMember, "", with("background", true), nil),
		400, "invalid_request_error", "invalid_field", "background", "issue 17: background")
	wantErr(t, g.do(t, "POST", "/v1/responses", tokMember, "", with("reasoning", map[string]any{"summary": "auto"}), nil),
		400, "invalid_request_error", "invalid_field", "reasoning.summary", "issue 17: reasoning summaries")
	wantErr(t, g.do(t, "POST", "/v1/responses", tokMember, "", with("user_id", "u1"), nil),
		400, "invalid_request_error", "invalid_field", "body.user_id", "spec End-user identity 2")
	wantErr(t, g.do(t, "POST", "/v1/responses", tokMember, "", map[string]any{"model": "lm-transcribe", "input": "hi"}, nil),
		400, "invalid_request_error", "model_not_in_allowlist", "model", "spec: model in the allowlist")
	wantErr(t, g.do(t, "POST", "/v1/responses", tokMember, "", map[string]any{"model": "lm-4-scout-local", "input": []any{map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "input_image", "image_url": "https://example.com/cat.png"}}}}}, nil),
		400, "invalid_request_error", "image_url_not_supported", "input[].content[].image_url", "spec: http(s) image URLs are refused")
	wantErr(t, g.do(t, "DELETE", "/v1/responses/resp_nope", tokMember, "", nil, nil), 404, "not_found_error", "response_not_found", "response_id", "unknown id")
}
