package gateway_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// Markers, one for each way a secret or a piece of content enters the
// gateway. None looks like an API key or a bearer header, so that only the
// log lines' structure, not internal/redact's patterns, can keep them out.
// Every marker holds "LEAK", which the test looks for.
const (
	mkLocalKey  = "LEAKlocalkey"  // the backends' API keys
	mkCloudAKey = "LEAKcloudakey" //
	mkCloudBKey = "LEAKcloudbkey" //
	mkBearer    = "LEAKbearer"    // in the (valid) bearer token
	mkBadBearer = "LEAKbadbearer" // in a bearer token that matches nothing
	mkHeader    = "LEAKheader"    // Api-Key, Cookie and another header
	mkContent   = "LEAKcontent"   // user messages, embedding input
	mkToolArgs  = "LEAKtoolargs"  // function.arguments, from the client and from the model
	mkMemory    = "LEAKmemory"    // memory values
	mkPrompt    = "LEAKprompt"    // system prompts: the tenant's, /c1's, the agent's; the image prompt
	mkUpstream  = "LEAKupstream"  // upstream error bodies and stream garbage
	mkReply     = "LEAKreply"     // a successful answer's content
)

// logToken is the bearer token of every request.
const logToken = "tok-" + mkBearer

// logAgent is the agent of agent chat; it lists tools, so that its chats go
// through the tool loop's own reading of upstream answers.
const logAgent = `{"name":"helper","model":"lm-4-scout","system_prompt":"Be brief. ` + mkPrompt + `agent","tools":["current_time","memory_remember"]}`

// logRoute is one request a case sends: POST unless method says otherwise,
// with logToken unless token says otherwise. want is the code its request
// line must hold ("" for none), or wantCase or wantAny.
type logRoute struct {
	name, method, path, token, body, want string
}

const (
	wantCase = "<case>" // the case's code: the route maps upstream failures as chat does
	wantAny  = "<any>"  // whatever the client got (images and agent_call map some failures their own way)
)

var (
	v1Messages = `"messages":[` +
		`{"role":"system","content":"Answer in ` + mkContent + `system."},` +
		`{"role":"user","content":"What is ` + mkContent + `?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"` + mkToolArgs + `\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"` + mkContent + `tool"}],` +
		`"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}]`

	// anthropicMessages are v1Messages in the Messages API's blocks.
	anthropicMessages = `"system":"Answer in ` + mkContent + `system.","messages":[` +
		`{"role":"user","content":"What is ` + mkContent + `?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"lookup","input":{"q":"` + mkToolArgs + `"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"` + mkContent + `tool"}]}],` +
		`"tools":[{"name":"lookup","input_schema":{"type":"object"}}]`

	// logUpstreamRoutes reach the upstream.
	logUpstreamRoutes = []logRoute{
		{name: "v1 json", path: "/v1/chat/completions", want: wantCase, body: `{"model":"lm-4-scout","stream":false,` + v1Messages + `}`},
		{name: "v1 stream", path: "/v1/chat/completions", want: wantCase, body: `{"model":"lm-4-scout","stream":true,` + v1Messages + `}`},
		{name: "c1 json", path: "/c1/chat", want: wantCase, body: `{"message":"` + mkContent + `c1","system_prompt":"` + mkPrompt + `c1","stream":false}`},
		{name: "c1 stream", path: "/c1/chat", want: wantCase, body: `{"message":"` + mkContent + `c1","system_prompt":"` + mkPrompt + `c1"}`},
		{name: "agent json", path: "/a1/agents/helper/chat", want: wantCase, body: `{"messages":[{"role":"user","content":"` + mkContent + `agent"}],"stream":false}`},
		{name: "agent stream", path: "/a1/agents/helper/chat", want: wantCase, body: `{"messages":[{"role":"user","content":"` + mkContent + `agent"}],"stream":true}`},
		{name: "embeddings", path: "/v1/embeddings", want: wantCase, body: `{"model":"lm-embed","input":["` + mkContent + `embed"]}`},
		{name: "images", path: "/v1/images/generations", want: wantAny, body: `{"model":"lm-image","prompt":"` + mkPrompt + `image"}`},
		{name: "tool agent_call", path: "/v1/tools/execute", want: wantAny, body: `{"name":"agent_call","arguments":{"agent":"helper","message":"` + mkContent + `call"}}`},
		{name: "messages json", path: "/v1/messages", want: wantCase, body: `{"model":"lm-4-scout","max_tokens":64,` + anthropicMessages + `}`},
		{name: "messages stream", path: "/v1/messages", want: wantCase, body: `{"model":"lm-4-scout","max_tokens":64,"stream":true,` + anthropicMessages + `}`},
	}

	// logClientRoutes succeed or fail without an upstream.
	logClientRoutes = []logRoute{
		{name: "tool memory_remember", path: "/v1/tools/execute", want: "",
			body: `{"name":"memory_remember","arguments":{"key":"k2","value":"` + mkMemory + `tool","visibility":"private"}}`},
		{name: "tool arguments not JSON", path: "/v1/tools/execute", want: "invalid_field",
			body: `{"name":"memory_remember","arguments":"{\"value\":\"` + mkToolArgs + `\""}`},
		{name: "tool arguments of the wrong type", path: "/v1/tools/execute", want: "invalid_field",
			body: `{"name":"memory_remember","arguments":{"key":"k3","value":["` + mkMemory + `"],"visibility":"private"}}`},
		{name: "v1 body cut", path: "/v1/chat/completions", want: "invalid_json",
			body: `{"model":"lm-4-scout","messages":[{"role":"user","content":"` + mkContent + `cut`},
		{name: "v1 arguments not JSON", path: "/v1/chat/completions", want: "tool_call_arguments_invalid",
			body: `{"model":"lm-4-scout","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{` + mkToolArgs + `"}}]}]}`},
		{name: "v1 document without consent", path: "/v1/chat/completions", want: "cloud_consent_required",
			body: `{"model":"lm-4-scout","messages":[{"role":"user","content":"x"}],"attachments":[{"kind":"document","doc_name":"` + mkContent + `.txt","content":"` + mkContent + `doc"}]}`},
		{name: "c1 unknown field", path: "/c1/chat", want: "invalid_field",
			body: `{"message":"` + mkContent + `","` + mkContent + `field":1}`},
		{name: "messages unknown member", path: "/v1/messages", want: "invalid_field",
			body: `{"model":"lm-4-scout","max_tokens":1,"messages":[{"role":"user","content":"` + mkContent + `"}],"` + mkContent + `field":1}`},
		{name: "messages image not base64", path: "/v1/messages", want: "image_base64_invalid",
			body: `{"model":"lm-4-scout","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + mkContent + `%%"}}]}]}`},
		{name: "memory value too large", path: "/v1/memory", want: "memory_bucket_full",
			body: `{"key":"big","value":"` + mkMemory + strings.Repeat("x", 17<<10) + `","visibility":"private"}`},
		{name: "system prompt too large", method: "PUT", path: "/v1/system-prompts/user", want: "system_prompt_too_large",
			body: `{"content":"` + mkPrompt + strings.Repeat("x", 9<<10) + `"}`},
		{name: "unknown bearer", method: "GET", path: "/v1/models", token: mkBadBearer, want: "invalid_authorization"},
		{name: "unknown bearer after Bearer", method: "GET", path: "/v1/models", token: "Bearer " + mkBadBearer, want: "invalid_authorization"},
		{name: "unknown key-shaped bearer", method: "GET", path: "/v1/models", token: "sk-" + mkBadBearer, want: "invalid_authorization"},
	}
)

// chunk is an SSE chat-completion chunk with delta.
func chunk(delta string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
}

// errorObject is an OpenAI error body whose message carries the upstream
// marker, the backend's key (as "invalid key" answers echo it) and the user's
// text (as some backends quote the prompt).
const errorObject = `{"error":{"message":"Incorrect API key provided: ` + mkLocalKey + ` for prompt ` + mkContent +
	` ` + mkUpstream + `","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`

// toolCallJSON is a completion calling memory_remember with a marker value.
const toolCallJSON = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
	`"tool_calls":[{"id":"call_9","type":"function","function":{"name":"memory_remember","arguments":"{\"key\":\"k9\",\"value\":\"` + mkToolArgs + `\",\"visibility\":\"private\"}"}}]},"finish_reason":"tool_calls"}]}`

// TestLogsHoldNoSecretsOrContent drives every route that reaches an upstream
// through each way an upstream can fail (and succeed), and the client's own
// mistakes, with markers in keys, tokens, headers, content, tool arguments,
// memory, prompts and upstream bodies, and greps the Debug-level log for
// them. So that it cannot pass by logging nothing, every request's line must
// be there, with the status and code the client got, and the fake backend
// must have received the key and the content markers.
func TestLogsHoldNoSecretsOrContent(t *testing.T) {
	upstreamMsg := "Sorry, " + mkUpstream + " failed on " + mkContent + " with key " + mkLocalKey
	tests := []struct {
		name    string
		replies []upstreamtest.Reply // in turn, the last one for every further call
		garbage bool                 // the backends answer bytes that are not HTTP
		routes  []logRoute           // logUpstreamRoutes when nil
		want    string               // the code of wantCase routes ("" for none)
	}{
		{name: "ok", replies: []upstreamtest.Reply{{Content: mkReply + " answer", Header: http.Header{"X-Debug": {mkUpstream}}}}},
		{name: "client errors", routes: logClientRoutes},
		{name: "200 with an error object", replies: []upstreamtest.Reply{{Body: []byte(errorObject)}}, want: "upstream_error"},
		{name: "400 with the marker in message", replies: []upstreamtest.Reply{{Status: 400, ErrorMessage: upstreamMsg}}, want: "upstream_bad_request"},
		{name: "401 echoing the key", replies: []upstreamtest.Reply{{Status: 401, Body: []byte(errorObject)}}, want: "upstream_bad_request"},
		{name: "429 with the marker in message", replies: []upstreamtest.Reply{{Status: 429, ErrorMessage: upstreamMsg, RetryAfter: "1"}}, want: "upstream_bad_request"},
		{name: "500 with the marker in message", replies: []upstreamtest.Reply{{Status: 500, ErrorMessage: upstreamMsg}}, want: "upstream_error"},
		{name: "500 plain text", replies: []upstreamtest.Reply{{Status: 500, Body: []byte(upstreamMsg), ContentType: "text/plain"}}, want: "upstream_error"},
		{name: "200 malformed JSON", replies: []upstreamtest.Reply{{Body: []byte(`{"choices":[{"message":{"content":"` + mkUpstream + mkContent)}}, want: "upstream_error"},
		{name: "stream with an error object", replies: []upstreamtest.Reply{{Events: []string{
			chunk(`{"role":"assistant","content":""}`), chunk(`{"content":"` + mkReply + `"}`), errorObject}}}, want: "upstream_error"},
		{name: "stream with garbage, cut", replies: []upstreamtest.Reply{{Drop: true, DropAfter: 3, Events: []string{
			chunk(`{"role":"assistant","content":""}`), chunk(`{"content":"` + mkReply + `"}`), "garbage " + mkUpstream + ` {"content":"` + mkContent + `"`}}}, want: "upstream_error"},
		{name: "stream with garbage", replies: []upstreamtest.Reply{{Events: []string{
			chunk(`{"role":"assistant","content":""}`), "garbage " + mkUpstream, chunk(`{"content":"` + mkReply + `"}`)}}}},
		{name: "not HTTP", garbage: true, want: "upstream_unavailable"},
		{name: "agent tool round, then an error object", routes: logUpstreamRoutes[4:5], want: "upstream_error",
			replies: []upstreamtest.Reply{{Body: []byte(toolCallJSON)}, {Body: []byte(errorObject)}}},
		{name: "agent streamed tool round, then an error event", routes: logUpstreamRoutes[5:6], want: "upstream_error",
			replies: []upstreamtest.Reply{
				{Events: []string{chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"memory_remember","arguments":"{\"key\":\"k9\",\"value\":\"` + mkToolArgs + `\",\"visibility\":\"private\"}"}}]}`)}},
				{Events: []string{chunk(`{"role":"assistant","content":""}`), errorObject}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var fake *upstreamtest.Server
			var url string
			if tt.garbage {
				url = upstreamtest.NotHTTPURL(t, "garbage "+mkUpstream+" "+mkLocalKey+"\r\nX-"+mkUpstream+": yes")
			} else {
				fake = upstreamtest.New(t, upstreamtest.WithScript(tt.replies...))
				if n := len(tt.replies); n > 0 {
					fake.SetReply(tt.replies[n-1])
				}
				url = fake.URL
			}
			sink := &logSink{}
			e := newLogEnv(t, fake, url, sink, "")
			routes := tt.routes
			if routes == nil {
				routes = logUpstreamRoutes
			}
			for i, rt := range routes {
				id := strings.NewReplacer(" ", "-").Replace(tt.name+"-"+rt.name) + "-" + string(rune('a'+i))
				method, token := cmp.Or(rt.method, "POST"), cmp.Or(rt.token, logToken)
				resp, b := e.do(t, logCall(method, rt.path, token, id, rt.body))
				line := sink.await(t, id)
				if got, want := line.outcome(), answerOutcome(resp, b); got != want {
					t.Errorf("%s: request line %q, but the client got %q", rt.name, got, want)
				}
				want := rt.want
				if want == wantCase {
					want = tt.want
				}
				if want != wantAny && line.Code != want {
					t.Errorf("%s: request line code %q, want %q (answer %d %.300s)", rt.name, line.Code, want, resp.StatusCode, b)
				}
			}
			if fake != nil && tt.routes == nil && !saw(fake, mkLocalKey, mkContent) {
				t.Error("the fake backend never got the key and the content markers: the test proves nothing")
			}
			if leaks := sink.leaks(); len(leaks) > 0 {
				t.Errorf("%d log lines hold a marker:\n%s", len(leaks), strings.Join(leaks, "\n"))
			}
		})
	}
}

// TestGuardLogsHoldNoContent: the content guard's lines, of a flagged request
// in block and audit mode and of a classifier that fails, name the request
// and the categories but hold none of the content.
func TestGuardLogsHoldNoContent(t *testing.T) {
	rules, err := guard.ParseRules([]byte(`{"categories":{"violence":{"patterns":["(?i)leakcontent"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	chatRoutes := []logRoute{}
	for _, rt := range logUpstreamRoutes {
		if rt.name != "embeddings" && rt.name != "images" {
			chatRoutes = append(chatRoutes, rt)
		}
	}
	for _, tc := range []struct {
		mode, wantMsg string
		c             gateway.Classifier
	}{
		{"block", "content guard flagged the request", rules},
		{"audit", "content guard flagged the request", rules},
		{"block", "content guard could not classify the request: refused", failing{}},
		{"audit", "content guard could not classify the request: let through", failing{}},
	} {
		t.Run(tc.mode+" "+tc.wantMsg, func(t *testing.T) {
			t.Parallel()
			fake := upstreamtest.New(t, upstreamtest.WithScript(upstreamtest.Reply{Content: mkReply + " answer"}))
			sink := &logSink{}
			e := newLogEnv(t, fake, fake.URL, sink, tc.mode, gateway.WithClassifier(tc.c))
			for i, rt := range chatRoutes {
				id := strings.NewReplacer(" ", "-").Replace(tc.mode+"-guard-"+rt.name) + "-" + string(rune('a'+i))
				e.do(t, logCall("POST", rt.path, logToken, id, rt.body))
				sink.await(t, id)
				sink.awaitMsg(t, id, tc.wantMsg)
			}
			if leaks := sink.leaks(); len(leaks) > 0 {
				t.Errorf("%d log lines hold a marker:\n%s", len(leaks), strings.Join(leaks, "\n"))
			}
		})
	}
}

// failing is a classifier that never answers.
type failing struct{}

func (failing) Classify(context.Context, guard.Input) (guard.Verdict, error) {
	return guard.Verdict{}, guard.ErrUnavailable
}

// awaitMsg waits for the line of the request with id whose msg is msg.
func (s *logSink) awaitMsg(t *testing.T, id, msg string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range s.lines() {
			var rl requestLine
			if json.Unmarshal([]byte(l), &rl) == nil && rl.Msg == msg && rl.RequestID == id {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %q line for %s in the log", msg, id)
}

// newLogEnv is a gateway whose three backends are at url, each with a marker
// API key, which logs at Debug level as JSON into sink. Its tenant needs
// consent for documents bound to a cloud. It holds the agent helper, a
// tenant system prompt and a memory entry, all three with markers. The
// tenant's content_guard is guardMode; opts come after the env's own.
func newLogEnv(t *testing.T, fake *upstreamtest.Server, url string, sink *logSink, guardMode string, opts ...gateway.Option) *env {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "helper.json"), []byte(logAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	tokens := auth.MustStatic([]*auth.Tenant{{ID: "acme", Settings: auth.Settings{CloudDocConsent: true, ContentGuard: guardMode}}},
		map[string]auth.StaticToken{logToken: {Tenant: "acme", Role: auth.RoleTenantAdmin}})
	opts = append([]gateway.Option{
		gateway.WithTokenCatalog(tokens),
		gateway.WithAgentsDir(dir),
		gateway.WithLogger(slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}, opts...)
	e := newEnvOn(t, fake, upstream.Backends{
		LocalURL: url, LocalAPIKey: mkLocalKey,
		CloudAURL: url, CloudAAPIKey: mkCloudAKey,
		CloudBURL: url, CloudBAPIKey: mkCloudBKey,
		FirstByteTimeout: 5 * time.Second,
	}, opts...)
	for i, c := range []call{
		logCall("PUT", "/v1/system-prompts/tenant", logToken, "setup-prompt", `{"content":"Be kind. `+mkPrompt+`tenant"}`),
		logCall("POST", "/v1/memory", logToken, "setup-memory", `{"key":"name","value":"`+mkMemory+`rest","visibility":"private"}`),
	} {
		if resp, b := e.do(t, c); resp.StatusCode != http.StatusOK {
			t.Fatalf("setup %d: %d %s", i, resp.StatusCode, b)
		}
	}
	return e
}

// logCall is a call as user u1 with marker headers besides the bearer token
// (a consent naming no document changes nothing).
func logCall(method, path, token, requestID, body string) call {
	return call{method: method, path: path, token: token, user: "u1", body: body, header: http.Header{
		"X-Request-Id":     {requestID},
		"Api-Key":          {mkHeader + "apikey"}, // Azure OpenAI's key header, which the gateway does not read
		"Cookie":           {"session=" + mkHeader + "cookie"},
		"X-Client-Note":    {mkHeader + "note"},
		"Gw-Cloud-Consent": {"sha256:" + mkHeader + ";persist"},
	}}
}

// saw reports whether some call the fake got carried key in its Authorization
// header and some call's body carried content.
func saw(fake *upstreamtest.Server, key, content string) bool {
	var k, c bool
	for _, call := range fake.Calls() {
		k = k || strings.Contains(call.Header.Get("Authorization"), key)
		c = c || bytes.Contains(call.Body, []byte(content))
	}
	return k && c
}

// logSink collects a gateway's JSON log lines.
type logSink struct{ testkit.Buffer }

func (s *logSink) lines() []string {
	return strings.Split(strings.TrimSuffix(s.String(), "\n"), "\n")
}

// leaks returns the lines that hold a marker.
func (s *logSink) leaks() []string {
	var out []string
	for _, l := range s.lines() {
		if strings.Contains(strings.ToLower(l), "leak") {
			out = append(out, l)
		}
	}
	return out
}

// requestLine is what the test reads of a request log line.
type requestLine struct {
	Msg       string `json:"msg"`
	RequestID string `json:"request_id"`
	Status    int    `json:"status"`
	Code      string `json:"code"`
}

// outcome is the line's status, and its code when the status is an error's.
func (l requestLine) outcome() string {
	if l.Status < 400 {
		return http.StatusText(l.Status)
	}
	return http.StatusText(l.Status) + " " + l.Code
}

// answerOutcome is an answer's status, and its code when the status is an
// error's (a stream that failed after its start answered 200).
func answerOutcome(resp *http.Response, b []byte) string {
	o := outcome(resp, b)
	if resp.StatusCode >= 400 {
		o = o[:strings.LastIndexByte(o, ' ')] // without the param
	}
	return o
}

// await returns the request line of the request with id, which the gateway
// writes after the client got its answer.
func (s *logSink) await(t *testing.T, id string) requestLine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		for _, l := range s.lines() {
			var rl requestLine
			if json.Unmarshal([]byte(l), &rl) == nil && rl.Msg == "request" && rl.RequestID == id {
				return rl
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no request line for %s in the log", id)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
