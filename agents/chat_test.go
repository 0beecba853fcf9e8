package agents_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/google/go-cmp/cmp"
)

const hello = `{"messages":[{"role":"user","content":"hello"}]}`

func TestList(t *testing.T) {
	e := newEnv(t, nil)
	var got struct {
		Object string           `json:"object"`
		Data   []map[string]any `json:"data"`
	}
	testkit.Decode(t, e.do(t, "GET", "/a1/agents", "", ""), 200, &got)
	var names []string
	for _, d := range got.Data {
		names = append(names, d["name"].(string))
		if _, ok := d["system_prompt"]; ok {
			t.Errorf("agent %v lists its system prompt", d["name"])
		}
	}
	if diff := cmp.Diff([]string{"broken", "caller", "helper", "plain", "reader"}, names); diff != "" {
		t.Errorf("names mismatch (-want +got):\n%s", diff)
	}
	want := map[string]any{"name": "helper", "description": "Looks things up.", "model": "lm-4-scout", "tools": []any{"lookup"}}
	if diff := cmp.Diff(want, got.Data[2]); diff != "" {
		t.Errorf("helper mismatch (-want +got):\n%s", diff)
	}
	if got.Object != "list" || fmt.Sprint(got.Data[3]["tools"]) != "[]" {
		t.Errorf("object %q, plain tools %v", got.Object, got.Data[3]["tools"])
	}
}

func TestChatJSON(t *testing.T) {
	e := newEnv(t, []reply{text("hi there")})
	rec := e.do(t, "POST", "/a1/agents/plain/chat", "", hello)
	if rec.Code != 200 {
		t.Fatalf("status %d %s", rec.Code, rec.Body)
	}
	if got := replyText(t, rec.Body.Bytes()); got != "hi there" {
		t.Errorf("reply %q", got)
	}
	if n := rec.Header().Get(relay.HeaderNotice); n != "" {
		t.Errorf("GW-Notice = %q", n)
	}
	body := e.up.body(t, 0)
	if body["model"] != "lm-small" || body["stream"] != false || body["tools"] != nil {
		t.Errorf("upstream body %v", body)
	}
	if diff := cmp.Diff([]string{"system: You talk.", "user: hello"}, e.up.messages(t, 0)); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
}

func TestChatErrors(t *testing.T) {
	tests := []struct {
		name, agent, body string
		headers           []string
		status            int
		code, param       string
	}{
		{"unknown agent", "nobody", hello, nil, 404, "agent_not_found", "name"},
		{"unregistered tool", "broken", hello, nil, 400, "agent_tool_not_registered", "tools"},
		{"depth not integer", "plain", hello, []string{"GW-Caller-Depth", "two"}, 400, "invalid_field", "headers.gw-caller-depth"},
		{"depth negative", "plain", hello, []string{"GW-Caller-Depth", "-1"}, 400, "invalid_field", "headers.gw-caller-depth"},
		{"depth 3", "plain", hello, []string{"GW-Caller-Depth", "3"}, 400, "recursion_depth_exceeded", "headers.gw-caller-depth"},
		{"depth 7", "plain", hello, []string{"GW-Caller-Depth", "7"}, 400, "recursion_depth_exceeded", "headers.gw-caller-depth"},
		{"no messages", "plain", `{}`, nil, 400, "missing_field", "body.messages"},
		{"messages not array", "plain", `{"messages":"hi"}`, nil, 400, "invalid_field", "body.messages"},
		{"empty messages", "plain", `{"messages":[]}`, nil, 400, "invalid_field", "body.messages"},
		{"bad role", "plain", `{"messages":[{"role":"robot","content":"x"}]}`, nil, 400, "invalid_field", "body.messages"},
		{"unknown field", "plain", `{"messages":[],"model":"x"}`, nil, 400, "invalid_field", "body.model"},
		{"user_id", "plain", `{"messages":[],"user_id":"x"}`, nil, 400, "invalid_field", "body.user_id"},
		{"stream not bool", "plain", `{"messages":[{"role":"user","content":"x"}],"stream":"yes"}`, nil, 400, "invalid_field", "body.stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			rec := e.do(t, "POST", "/a1/agents/"+tt.agent+"/chat", "", tt.body, tt.headers...)
			testkit.CheckError(t, rec, testkit.Error{Status: tt.status, Code: tt.code, Param: tt.param})
			if n := len(e.up.Calls()); n != 0 {
				t.Errorf("upstream called %d times", n)
			}
		})
	}
}

func TestChatDepthBelowCap(t *testing.T) {
	e := newEnv(t, []reply{toolCalls(call{"c1", "lookup", `{"q":"x"}`}), text("ok")})
	rec := e.do(t, "POST", "/a1/agents/helper/chat", "u1", hello, "GW-Caller-Depth", "2")
	if rec.Code != 200 {
		t.Fatalf("status %d %s", rec.Code, rec.Body)
	}
	if diff := cmp.Diff([]lookupCall{{"t1", "u1", 2, `{"q":"x"}`}}, e.lookups); diff != "" {
		t.Errorf("lookups mismatch (-want +got):\n%s", diff)
	}
}

func TestChatModelNotAllowed(t *testing.T) {
	e := newEnv(t, nil)
	e.tenants["t9"] = newTenant("t9", "lm-4-scout")
	rec := e.do(t, "POST", "/a1/agents/plain/chat", "", hello, "X-Test-Tenant", "t9")
	testkit.CheckError(t, rec, testkit.WantError(errcat.ModelNotInAllowlist, "model"))
}

func TestChatUpstreamErrors(t *testing.T) {
	tests := []struct {
		name   string
		script []reply
		status int
		code   string
	}{
		{"unavailable", []reply{fail(&errcat.Error{Code: errcat.UpstreamUnavailable})}, 503, "upstream_unavailable"},
		{"bad request", []reply{fail(&errcat.Error{Code: errcat.UpstreamBadRequest, Status: 422, Message: "nope"})}, 422, "upstream_bad_request"},
		{"error in tool round", []reply{toolCalls(call{"c1", "lookup", `{}`}), fail(&errcat.Error{Code: errcat.UpstreamTimeout})}, 504, "upstream_timeout"},
		{"not JSON", []reply{func(*upstreamReq) (*upstreamResp, error) { return testkit.JSONAnswer("nope"), nil }}, 502, "upstream_error"},
		{"error object", []reply{func(*upstreamReq) (*upstreamResp, error) { return testkit.JSONAnswer(`{"error":{"message":"x"}}`), nil }}, 502, "upstream_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.script)
			rec := e.do(t, "POST", "/a1/agents/helper/chat", "", hello)
			testkit.CheckError(t, rec, testkit.Error{Status: tt.status, Code: tt.code})
		})
	}
}

func TestToolLoop(t *testing.T) {
	e := newEnv(t, []reply{
		toolCalls(call{"c1", "lookup", `{"q":"cat"}`}, call{"c2", "lookup", `{"q":"dog"}`}),
		text("cats and dogs"),
	})
	rec := e.do(t, "POST", "/a1/agents/helper/chat", "u1", hello)
	if rec.Code != 200 {
		t.Fatalf("status %d %s", rec.Code, rec.Body)
	}
	if got := replyText(t, rec.Body.Bytes()); got != "cats and dogs" {
		t.Errorf("reply %q", got)
	}
	want := []lookupCall{{"t1", "u1", 0, `{"q":"cat"}`}, {"t1", "u1", 0, `{"q":"dog"}`}}
	if diff := cmp.Diff(want, e.lookups); diff != "" {
		t.Errorf("lookups mismatch (-want +got):\n%s", diff)
	}
	wantMsgs := []string{
		"system: You help.",
		"user: hello",
		`assistant:  ->lookup({"q":"cat"}) ->lookup({"q":"dog"})`,
		`tool: {"answer":"meaning of cat"}`,
		`tool: {"answer":"meaning of dog"}`,
	}
	if diff := cmp.Diff(wantMsgs, e.up.messages(t, 1)); diff != "" {
		t.Errorf("second call messages mismatch (-want +got):\n%s", diff)
	}
	tools0 := e.up.body(t, 0)["tools"].([]any)
	fn := tools0[0].(map[string]any)["function"].(map[string]any)
	if len(tools0) != 1 || fn["name"] != "lookup" || fn["description"] != "Looks a word up." {
		t.Errorf("tools %v", tools0)
	}
	var second struct {
		Messages []map[string]any `json:"messages"`
		Tools    []any            `json:"tools"`
	}
	_ = json.Unmarshal(e.up.Calls()[1].Body, &second)
	if second.Messages[3]["tool_call_id"] != "c1" || second.Messages[4]["tool_call_id"] != "c2" || len(second.Tools) != 1 {
		t.Errorf("second call %v", second)
	}
	if n := rec.Header().Get(relay.HeaderNotice); n != "" {
		t.Errorf("GW-Notice = %q", n)
	}
}

func TestToolLoopCapped(t *testing.T) {
	// helper has max_tool_rounds 2: two tool rounds, then a call without tools.
	e := newEnv(t, []reply{
		toolCalls(call{"c1", "lookup", `{"q":"a"}`}),
		toolCalls(call{"c2", "lookup", `{"q":"b"}`}),
		text("gave up"),
	})
	rec := e.do(t, "POST", "/a1/agents/helper/chat", "", hello)
	if rec.Code != 200 || replyText(t, rec.Body.Bytes()) != "gave up" {
		t.Fatalf("= %d %s", rec.Code, rec.Body)
	}
	if n := rec.Header().Get(relay.HeaderNotice); n != "tool_loop_capped" {
		t.Errorf("GW-Notice = %q", n)
	}
	if len(e.lookups) != 2 || len(e.up.Calls()) != 3 {
		t.Errorf("%d lookups, %d calls", len(e.lookups), len(e.up.Calls()))
	}
	if tl := e.up.body(t, 2)["tools"]; tl != nil {
		t.Errorf("final call offered tools %v", tl)
	}
}

func TestToolCallStripped(t *testing.T) {
	t.Run("with a listed call", func(t *testing.T) {
		e := newEnv(t, []reply{
			toolCalls(call{"c1", "current_time", `{}`}, call{"c2", "lookup", `{"q":"x"}`}),
			text("done"),
		})
		rec := e.do(t, "POST", "/a1/agents/helper/chat", "", hello)
		if rec.Code != 200 || rec.Header().Get(relay.HeaderNotice) != "tool_call_stripped" {
			t.Fatalf("= %d %q %s", rec.Code, rec.Header().Get(relay.HeaderNotice), rec.Body)
		}
		msgs := e.up.messages(t, 1)
		if msgs[2] != `assistant:  ->lookup({"q":"x"})` || len(msgs) != 4 {
			t.Errorf("second call messages %q", msgs)
		}
		if len(e.lookups) != 1 {
			t.Errorf("lookups %v", e.lookups)
		}
	})
	t.Run("only unlisted calls", func(t *testing.T) {
		e := newEnv(t, []reply{toolCalls(call{"c1", "current_time", `{}`}), text("plain answer")})
		rec := e.do(t, "POST", "/a1/agents/helper/chat", "", hello)
		if rec.Code != 200 || replyText(t, rec.Body.Bytes()) != "plain answer" || rec.Header().Get(relay.HeaderNotice) != "tool_call_stripped" {
			t.Fatalf("= %d %q %s", rec.Code, rec.Header().Get(relay.HeaderNotice), rec.Body)
		}
		if tl := e.up.body(t, 1)["tools"]; tl != nil || len(e.up.messages(t, 1)) != 2 {
			t.Errorf("retry offered tools %v, messages %q", tl, e.up.messages(t, 1))
		}
	})
}

func TestToolErrorsFedBack(t *testing.T) {
	e := newEnv(t, []reply{
		toolCalls(call{"c1", "lookup", `not json`}, call{"c2", "lookup", `{"q":1}`}),
		text("sorry"),
	})
	rec := e.do(t, "POST", "/a1/agents/helper/chat", "", hello)
	if rec.Code != 200 {
		t.Fatalf("= %d %s", rec.Code, rec.Body)
	}
	msgs := e.up.messages(t, 1)
	if !strings.Contains(msgs[2], `->lookup({})`) {
		t.Errorf("invalid arguments not replaced: %q", msgs[2])
	}
	if !strings.Contains(msgs[3], `"code":"invalid_field"`) || !strings.Contains(msgs[4], `"param":"arguments.q"`) {
		t.Errorf("tool errors %q", msgs[3:])
	}
}

func TestChatInject(t *testing.T) {
	var calls []string
	e := newEnv(t, []reply{text("a"), text("b")}, withInject(func(tenant, user string) (string, error) {
		calls = append(calls, tenant+"/"+user)
		return "Memory: likes tea", nil
	}))
	e.do(t, "POST", "/a1/agents/reader/chat", "u1", hello)
	e.do(t, "POST", "/a1/agents/reader/chat", "", hello)
	want := []string{"system: Memory: likes tea", "system: You read.\n\nTo look up facts, call the rag_search tool with index \"docs\".", "user: hello"}
	if diff := cmp.Diff(want, e.up.messages(t, 0)); diff != "" {
		t.Errorf("with user mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[1:], e.up.messages(t, 1)); diff != "" {
		t.Errorf("without user mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"t1/u1"}, calls); diff != "" {
		t.Errorf("inject calls mismatch (-want +got):\n%s", diff)
	}
}

func TestChatStream(t *testing.T) {
	tests := []struct {
		name    string
		agent   string
		script  []reply
		text    string
		notices []string
		calls   int
	}{
		{"no tools", "plain", []reply{text("streamed answer")}, "streamed answer", nil, 1},
		{"tool rounds then stream", "helper", []reply{toolCalls(call{"c1", "lookup", `{"q":"x"}`}), text("after tools")}, "after tools", nil, 2},
		{"capped", "helper", []reply{toolCalls(call{"c1", "lookup", `{}`}), toolCalls(call{"c2", "lookup", `{}`}), text("capped")}, "capped", []string{"tool_loop_capped"}, 3},
		{"stripped", "helper", []reply{toolCalls(call{"c1", "nope", `{}`}), text("no tools")}, "no tools", []string{"tool_call_stripped"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.script)
			rec := e.do(t, "POST", "/a1/agents/"+tt.agent+"/chat", "", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
			if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
				t.Fatalf("= %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			text, notices, done := streamText(t, rec.Body.String())
			if text != tt.text || !done {
				t.Errorf("text %q done %v; body %s", text, done, rec.Body)
			}
			if diff := cmp.Diff(tt.notices, notices); diff != "" {
				t.Errorf("notices mismatch (-want +got):\n%s", diff)
			}
			calls := e.up.Calls()
			if len(calls) != tt.calls {
				t.Fatalf("%d upstream calls, want %d", len(calls), tt.calls)
			}
			for i, c := range calls {
				if !c.Stream {
					t.Errorf("call %d not streamed", i)
				}
			}
			evs := testkit.ParseSSE(t, rec.Body.String())
			if last := evs[len(evs)-1]; last.Data != "[DONE]" {
				t.Errorf("last event %v", last)
			}
		})
	}
}

func TestChatStreamToolRoundError(t *testing.T) {
	cut := func(*upstreamReq) (*upstreamResp, error) {
		r := testkit.SSEAnswer(testkit.Chunk(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"lookup","arguments":""}}]}`, ""))
		b := strings.TrimSuffix(readAll(t, r), "data: [DONE]\n\n")
		return &upstreamResp{StatusCode: 200, Header: r.Header, Body: nopCloser(b)}, nil
	}
	e := newEnv(t, []reply{cut})
	rec := e.do(t, "POST", "/a1/agents/helper/chat", "", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	testkit.CheckError(t, rec, testkit.WantError(errcat.UpstreamError, ""))
	if len(e.lookups) != 0 {
		t.Errorf("tool ran for a cut answer")
	}
}

func TestAgentCall(t *testing.T) {
	e := newEnv(t, []reply{
		toolCalls(call{"c1", "agent_call", `{"agent":"helper","message":"look up x"}`}),
		toolCalls(call{"h1", "lookup", `{"q":"x"}`}), // helper's first round
		text("x means y"),     // helper's answer
		text("helper says y"), // caller's answer
	})
	rec := e.do(t, "POST", "/a1/agents/caller/chat", "u1", hello, "GW-Caller-Depth", "1")
	if rec.Code != 200 || replyText(t, rec.Body.Bytes()) != "helper says y" {
		t.Fatalf("= %d %s", rec.Code, rec.Body)
	}
	if diff := cmp.Diff([]lookupCall{{"t1", "u1", 2, `{"q":"x"}`}}, e.lookups); diff != "" {
		t.Errorf("lookups mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"system: You help.", "user: look up x"}, e.up.messages(t, 1)); diff != "" {
		t.Errorf("helper messages mismatch (-want +got):\n%s", diff)
	}
	msgs := e.up.messages(t, 3)
	if want := `tool: {"agent":"helper","reply":"x means y"}`; msgs[len(msgs)-1] != want {
		t.Errorf("tool result %q, want %q", msgs[len(msgs)-1], want)
	}
}

func TestAgentCallErrors(t *testing.T) {
	tests := []struct {
		name, args string
		depth      string
		want       string
	}{
		{"depth", `{"agent":"plain","message":"x"}`, "2", `"code":"recursion_depth_exceeded"`},
		{"unknown agent", `{"agent":"nobody","message":"x"}`, "0", `"code":"agent_not_found","message":"No agent named \"nobody\" is configured.","param":"name"`},
		{"unregistered tool", `{"agent":"broken","message":"x"}`, "0", `"code":"agent_tool_not_registered"`},
		{"missing agent", `{"message":"x"}`, "0", `"param":"arguments.agent"`},
		{"missing message", `{"agent":"plain"}`, "0", `"param":"arguments.message"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, []reply{toolCalls(call{"c1", "agent_call", tt.args}), text("ok")})
			rec := e.do(t, "POST", "/a1/agents/caller/chat", "", hello, "GW-Caller-Depth", tt.depth)
			if rec.Code != 200 {
				t.Fatalf("= %d %s", rec.Code, rec.Body)
			}
			msgs := e.up.messages(t, 1)
			if last := msgs[len(msgs)-1]; !strings.Contains(last, tt.want) {
				t.Errorf("tool result %q lacks %q", last, tt.want)
			}
			if n := len(e.up.Calls()); n != 2 {
				t.Errorf("%d upstream calls", n)
			}
		})
	}
}

func TestAgentCallThroughToolsExecute(t *testing.T) {
	e := newEnv(t, []reply{text("pong")})
	rec := e.do(t, "POST", "/v1/tools/execute", "u1", `{"name":"agent_call","arguments":{"agent":"plain","message":"ping"}}`)
	var got map[string]any
	testkit.Decode(t, rec, 200, &got)
	if diff := cmp.Diff(map[string]any{"agent": "plain", "reply": "pong"}, got); diff != "" {
		t.Errorf("result mismatch (-want +got):\n%s", diff)
	}
	rec = e.do(t, "POST", "/v1/tools/execute", "u1", `{"name":"agent_call","arguments":{"agent":"plain","message":"ping"}}`, "X-Test-Deny", "agents:write")
	testkit.Diff(t, "without agents:write: error", testkit.WantError(errcat.Forbidden, ""), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
}
