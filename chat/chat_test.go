package chat_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/google/go-cmp/cmp"
)

const pngURL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

func TestFieldRules(t *testing.T) {
	tests := []struct {
		name, body   string
		status       int
		code, param  string
		headerConvID string // request header gw-conversation-id
	}{
		{name: "no message", body: `{}`, status: 400, code: "missing_field", param: "body.message"},
		{name: "null message", body: `{"message":null}`, status: 400, code: "missing_field", param: "body.message"},
		{name: "number message", body: `{"message":5}`, status: 400, code: "invalid_field", param: "body.message"},
		{name: "object message", body: `{"message":{"role":"user"}}`, status: 400, code: "invalid_field", param: "body.message"},
		{name: "empty parts", body: `{"message":[]}`, status: 400, code: "invalid_field", param: "body.message"},
		{name: "part not object", body: `{"message":["hi"]}`, status: 400, code: "invalid_field", param: "body.message[0]"},
		{name: "text part without text", body: `{"message":[{"type":"text"}]}`, status: 400, code: "invalid_field", param: "body.message[0].text"},
		{name: "image part without url", body: `{"message":[{"type":"image_url","image_url":{}}]}`, status: 400, code: "invalid_field", param: "body.message[0].image_url.url"},
		{name: "bad provider", body: `{"message":"hi","provider":"cloudC"}`, status: 400, code: "invalid_field", param: "body.provider"},
		{name: "provider number", body: `{"message":"hi","provider":1}`, status: 400, code: "invalid_field", param: "body.provider"},
		{name: "empty model", body: `{"message":"hi","model":""}`, status: 400, code: "invalid_field", param: "body.model"},
		{name: "unknown model", body: `{"message":"hi","model":"gpt-9"}`, status: 400, code: "model_not_in_allowlist", param: "model"},
		{name: "temperature high", body: `{"message":"hi","temperature":2.01}`, status: 400, code: "invalid_field", param: "body.temperature"},
		{name: "temperature negative", body: `{"message":"hi","temperature":-0.1}`, status: 400, code: "invalid_field", param: "body.temperature"},
		{name: "temperature string", body: `{"message":"hi","temperature":"warm"}`, status: 400, code: "invalid_field", param: "body.temperature"},
		{name: "keep_last_turns negative", body: `{"message":"hi","keep_last_turns":-1}`, status: 400, code: "invalid_field", param: "body.keep_last_turns"},
		{name: "keep_last_turns fraction", body: `{"message":"hi","keep_last_turns":1.5}`, status: 400, code: "invalid_field", param: "body.keep_last_turns"},
		{name: "keep_last_turns over int32", body: `{"message":"hi","keep_last_turns":3000000000}`, status: 400, code: "invalid_field", param: "body.keep_last_turns"},
		{name: "max_tokens negative", body: `{"message":"hi","max_tokens":-1}`, status: 400, code: "invalid_field", param: "body.max_tokens"},
		{name: "max_tokens zero", body: `{"message":"hi","max_tokens":0}`, status: 400, code: "max_tokens_below_minimum", param: "max_tokens"},
		{name: "max_tokens string", body: `{"message":"hi","max_tokens":"10"}`, status: 400, code: "invalid_field", param: "body.max_tokens"},
		{name: "stream string", body: `{"message":"hi","stream":"yes"}`, status: 400, code: "invalid_field", param: "body.stream"},
		{name: "ephemeral number", body: `{"message":"hi","ephemeral":1}`, status: 400, code: "invalid_field", param: "body.ephemeral"},
		{name: "system_prompt number", body: `{"message":"hi","system_prompt":1}`, status: 400, code: "invalid_field", param: "body.system_prompt"},
		{name: "conversation_id number", body: `{"message":"hi","conversation_id":7}`, status: 400, code: "invalid_field", param: "body.conversation_id"},
		{name: "conversation_id too long", body: `{"message":"hi","conversation_id":"` + strings.Repeat("x", 257) + `"}`, status: 400, code: "invalid_field", param: "body.conversation_id"},
		{name: "conversation_id differs from header", body: `{"message":"hi","conversation_id":"a"}`, headerConvID: "b", status: 400, code: "invalid_field", param: "body.conversation_id"},
		{name: "images not array", body: `{"message":"hi","images":"x"}`, status: 400, code: "invalid_field", param: "body.images"},
		{name: "image not object", body: `{"message":"hi","images":["x"]}`, status: 400, code: "invalid_field", param: "body.images[0]"},
		{name: "image without url", body: `{"message":"hi","images":[{"detail":"low"}]}`, status: 400, code: "missing_field", param: "body.images[0].url"},
		{name: "image url number", body: `{"message":"hi","images":[{"url":1}]}`, status: 400, code: "invalid_field", param: "body.images[0].url"},
		{name: "image detail number", body: `{"message":"hi","images":[{"url":"` + pngURL + `","detail":1}]}`, status: 400, code: "invalid_field", param: "body.images[0].detail"},
		{name: "image unknown field", body: `{"message":"hi","images":[{"url":"` + pngURL + `","size":1}]}`, status: 400, code: "invalid_field", param: "body.images[1-1].size"},
		{name: "image http url", body: `{"message":"hi","images":[{"url":"https://example.com/cat.png"}]}`, status: 400, code: "image_url_not_supported", param: "messages[].content[].image_url.url"},
		{name: "image bad base64", body: `{"message":"hi","images":[{"url":"data:image/png;base64,@@@"}]}`, status: 400, code: "image_base64_invalid", param: "messages[].content[].image_url.url"},
		{name: "image not an image", body: `{"message":"hi","images":[{"url":"data:image/png;base64,aGVsbG8="}]}`, status: 400, code: "image_decode_error", param: "messages[].content[].image_url.url"},
		{name: "image to text-only model", body: `{"message":"hi","model":"lm-text","images":[{"url":"` + pngURL + `"}]}`, status: 400, code: "model_not_vision_capable", param: "messages[].content[].image_url"},
		{name: "http image part", body: `{"message":[{"type":"image_url","image_url":{"url":"http://x/y.png"}}]}`, status: 400, code: "image_url_not_supported", param: "messages[].content[].image_url.url"},
		{name: "tools object", body: `{"message":"hi","tools":{}}`, status: 400, code: "invalid_field", param: "body.tools"},
		{name: "tool_choice word", body: `{"message":"hi","tool_choice":"maybe"}`, status: 400, code: "invalid_field", param: "body.tool_choice"},
		{name: "response_format string", body: `{"message":"hi","response_format":"json"}`, status: 400, code: "invalid_field", param: "body.response_format"},
		{name: "attachments object", body: `{"message":"hi","attachments":{}}`, status: 400, code: "invalid_field", param: "body.attachments"},
		{name: "unknown field", body: `{"message":"hi","messages":[]}`, status: 400, code: "invalid_field", param: "body.messages"},
		{name: "user_id", body: `{"message":"hi","user_id":"bob"}`, status: 400, code: "invalid_field", param: "body.user_id"},
		{name: "not json", body: `{"message":`, status: 400, code: "invalid_json"},
		{name: "array body", body: `[]`, status: 400, code: "invalid_json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			body := strings.Replace(tc.body, "[1-1]", "[0]", 1)
			tc.param = strings.Replace(tc.param, "[1-1]", "[0]", 1)
			var headers []string
			if tc.headerConvID != "" {
				headers = []string{"Gw-Conversation-Id", tc.headerConvID}
			}
			rec := e.post(t, "alice", body, headers...)
			if rec.Code != tc.status {
				t.Fatalf("status = %d; want %d: %s", rec.Code, tc.status, rec.Body)
			}
			testkit.Diff(t, "error", testkit.Error{Status: tc.status, Code: tc.code, Param: tc.param}, testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if n := len(e.up.Calls()); n != 0 {
				t.Errorf("upstream called %d times on a rejected request", n)
			}
		})
	}
}

func TestOptionalFieldsAccepted(t *testing.T) {
	tests := []struct{ name, body string }{
		{"minimal", `{"message":"hi"}`},
		{"nulls", `{"message":"hi","conversation_id":null,"model":null,"provider":null,"system_prompt":null,"stream":null,"ephemeral":null,"images":null,"keep_last_turns":null,"max_tokens":null,"temperature":null,"tools":null,"tool_choice":null,"response_format":null}`},
		{"parts", `{"message":[{"type":"text","text":"hi"}]}`},
		{"edges", `{"message":"hi","temperature":0,"keep_last_turns":0,"max_tokens":1,"stream":false}`},
		{"temperature 2", `{"message":"hi","temperature":2}`},
		{"tool_choice object", `{"message":"hi","tools":[],"tool_choice":{"type":"function","function":{"name":"f"}}}`},
		{"images ignored with parts", `{"message":[{"type":"text","text":"hi"}],"images":[{"url":"https://ignored.example/x.png"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if rec := e.post(t, "alice", tc.body); rec.Code != 200 {
				t.Fatalf("status = %d: %s", rec.Code, rec.Body)
			}
		})
	}
}

func TestAlias(t *testing.T) {
	tests := []struct {
		name, fields, want string
	}{
		{"default", ``, "lm-4-scout"},
		{"provider auto", `,"provider":"auto"`, "lm-4-scout"},
		{"provider local", `,"provider":"local"`, "lm-4-scout-local"},
		{"provider cloudA", `,"provider":"cloudA"`, "lm-4-scout-cloudA"},
		{"provider cloudB", `,"provider":"cloudB"`, "lm-4-scout-cloudB"},
		{"model wins", `,"model":"lm-text","provider":"cloudB"`, "lm-text"},
		{"model", `,"model":"lm-4-scout-local"`, "lm-4-scout-local"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if rec := e.post(t, "alice", `{"message":"hi"`+tc.fields+`}`); rec.Code != 200 {
				t.Fatalf("status = %d: %s", rec.Code, rec.Body)
			}
			call := e.up.Calls()[0]
			if call.Alias != tc.want || call.Path != "/chat/completions" {
				t.Errorf("upstream call = %s %s; want %s /chat/completions", call.Alias, call.Path, tc.want)
			}
			if got := e.up.lastBody(t)["model"]; got != tc.want {
				t.Errorf("body model = %v; want %s", got, tc.want)
			}
		})
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestConversationID(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		headers []string
		want    string // "" means a generated UUID
		status  int
	}{
		{name: "generated", body: `{"message":"hi"}`, status: 200},
		{name: "generated, empty body id", body: `{"message":"hi","conversation_id":""}`, status: 200},
		{name: "body", body: `{"message":"hi","conversation_id":"c-body"}`, want: "c-body", status: 200},
		{name: "gw header", body: `{"message":"hi"}`, headers: []string{"gw-conversation-id", "c-gw"}, want: "c-gw", status: 200},
		{name: "x header", body: `{"message":"hi"}`, headers: []string{"X-CONVERSATION-ID", "c-x"}, want: "c-x", status: 200},
		{name: "body and header equal", body: `{"message":"hi","conversation_id":"c1"}`, headers: []string{"x-conversation-id", "c1"}, want: "c1", status: 200},
		{name: "error after id known", body: `{"message":"hi","conversation_id":"c1","temperature":9}`, want: "c1", status: 400},
		{name: "header id on decode error", body: `{"message":"hi","bogus":1}`, headers: []string{"gw-conversation-id", "c2"}, want: "c2", status: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			rec := e.post(t, "alice", tc.body, tc.headers...)
			if rec.Code != tc.status {
				t.Fatalf("status = %d; want %d: %s", rec.Code, tc.status, rec.Body)
			}
			gw, x := rec.Header().Get("gw-conversation-id"), rec.Header().Get("x-conversation-id")
			if gw != x {
				t.Fatalf("gw-conversation-id %q != x-conversation-id %q", gw, x)
			}
			if tc.want == "" && !uuidV4.MatchString(gw) || tc.want != "" && gw != tc.want {
				t.Errorf("conversation id = %q; want %q (or a v4 UUID)", gw, tc.want)
			}
			if tc.status == 200 && e.history(t, "t1", "alice", gw) == nil {
				t.Errorf("conversation %q not stored", gw)
			}
		})
	}
	t.Run("distinct ids", func(t *testing.T) {
		e := newEnv(t)
		a := e.post(t, "alice", `{"message":"hi"}`).Header().Get("gw-conversation-id")
		b := e.post(t, "alice", `{"message":"hi"}`).Header().Get("gw-conversation-id")
		if a == b {
			t.Errorf("two new conversations got the same id %s", a)
		}
	})
	for _, tc := range []struct{ name, header, id, param string }{
		{"gw header too long", "gw-conversation-id", strings.Repeat("c", 257), "headers.gw-conversation-id"},
		{"x header too long", "x-conversation-id", strings.Repeat("c", 257), "headers.x-conversation-id"},
		{"gw header not UTF-8", "gw-conversation-id", "c\xff", "headers.gw-conversation-id"},
		{"x header not UTF-8", "x-conversation-id", "c\xff", "headers.x-conversation-id"},
		{"gw header with a slash", "gw-conversation-id", "a/b", "headers.gw-conversation-id"},
		{"x header with a slash", "x-conversation-id", "a/b", "headers.x-conversation-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			rec := e.post(t, "alice", `{"message":"hi"}`, tc.header, tc.id)
			testkit.Diff(t, "error", testkit.WantError(errcat.InvalidField, tc.param), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
			if e.history(t, "t1", "alice", tc.id) != nil {
				t.Errorf("conversation %q stored", tc.id)
			}
		})
	}
	for _, id := range []string{"a/b", "/", `a\u0001b`, `tab\there`} { // JSON escapes
		t.Run("body id "+strconv.Quote(id), func(t *testing.T) {
			e := newEnv(t)
			rec := e.post(t, "alice", `{"message":"hi","conversation_id":"`+id+`"}`)
			testkit.Diff(t, "error", testkit.WantError(errcat.InvalidField, "body.conversation_id"), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
		})
	}
	t.Run("headers differ", func(t *testing.T) {
		e := newEnv(t)
		rec := e.post(t, "alice", `{"message":"hi"}`, "gw-conversation-id", "a", "x-conversation-id", "b")
		testkit.Diff(t, "error", testkit.WantError(errcat.InvalidField, "headers.x-conversation-id"), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
	})
}

// TestTurns holds a three-turn conversation (stream, JSON, stream) and checks
// what the upstream receives on each turn and what GET shows afterwards.
func TestTurns(t *testing.T) {
	e := newEnv(t)
	post := func(body string) {
		t.Helper()
		rec := e.post(t, "alice", body)
		if rec.Code != 200 {
			t.Fatalf("status = %d: %s", rec.Code, rec.Body)
		}
		if got := rec.Header().Get("gw-conversation-id"); got != "c1" {
			t.Errorf("gw-conversation-id = %q", got)
		}
	}
	post(`{"conversation_id":"c1","message":"one","system_prompt":"Be brief."}`)
	if diff := cmp.Diff([]any{msg("system", "Be brief."), msg("user", "one")}, e.up.lastBody(t)["messages"]); diff != "" {
		t.Errorf("turn 1 upstream messages mismatch (-want +got):\n%s", diff)
	}

	post(`{"conversation_id":"c1","message":"two","system_prompt":"Ignored.","stream":false,"images":[{"url":"` + pngURL + `","detail":"low"}]}`)
	turn2 := map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "two"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": pngURL, "detail": "low"}},
	}}
	body := e.up.lastBody(t)
	want := []any{msg("system", "Be brief."), msg("user", "one"), msg("assistant", "reply 1"), turn2}
	if diff := cmp.Diff(want, body["messages"]); diff != "" {
		t.Errorf("turn 2 upstream messages mismatch (-want +got):\n%s", diff)
	}
	if body["stream"] != false {
		t.Errorf("turn 2 stream = %v; want false", body["stream"])
	}
	if so, ok := body["stream_options"]; ok {
		t.Errorf("turn 2 (JSON) stream_options = %v; want none", so)
	}

	post(`{"conversation_id":"c1","message":"three","max_tokens":50,"temperature":0.5,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"auto","response_format":{"type":"json_object"}}`)
	body = e.up.lastBody(t)
	want = []any{msg("system", "Be brief."), msg("user", "one"), msg("assistant", "reply 1"), turn2, msg("assistant", "reply 2"), msg("user", "three")}
	if diff := cmp.Diff(want, body["messages"]); diff != "" {
		t.Errorf("turn 3 upstream messages mismatch (-want +got):\n%s", diff)
	}
	passed := map[string]any{
		"max_tokens": 50.0, "temperature": 0.5, "stream": true, "tool_choice": "auto",
		"stream_options":  map[string]any{"include_usage": true},
		"tools":           []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{}}}},
		"response_format": map[string]any{"type": "json_object"},
	}
	for k, v := range passed {
		if diff := cmp.Diff(v, body[k]); diff != "" {
			t.Errorf("turn 3 %s mismatch (-want +got):\n%s", k, diff)
		}
	}

	want = append(want[:len(want):len(want)], msg("assistant", "reply 3"))
	if diff := cmp.Diff(want, e.history(t, "t1", "alice", "c1")); diff != "" {
		t.Errorf("stored history mismatch (-want +got):\n%s", diff)
	}
}

func TestKeepLastTurns(t *testing.T) {
	e := newEnv(t)
	for i := 1; i <= 3; i++ {
		if rec := e.post(t, "alice", fmt.Sprintf(`{"conversation_id":"c1","message":"m%d","system_prompt":"sys"}`, i)); rec.Code != 200 {
			t.Fatal(rec.Body)
		}
	}
	full := []any{msg("system", "sys"), msg("user", "m1"), msg("assistant", "reply 1"), msg("user", "m2"),
		msg("assistant", "reply 2"), msg("user", "m3"), msg("assistant", "reply 3")}
	tests := []struct {
		name, k string
		stream  bool
		want    []any
		trimmed bool
	}{
		{"null keeps all", "null", true, full, false},
		{"0", "0", true, []any{msg("system", "sys")}, true},
		{"1", "1", false, []any{msg("system", "sys"), msg("user", "m3"), msg("assistant", "reply 3")}, true},
		{"2", "2", true, append([]any{msg("system", "sys")}, full[3:]...), true},
		{"3 keeps all", "3", false, full, false},
		{"large", "2147483647", true, full, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.post(t, "alice", fmt.Sprintf(`{"conversation_id":"c1","message":"now","keep_last_turns":%s,"stream":%v,"ephemeral":true}`, tc.k, tc.stream))
			if rec.Code != 200 {
				t.Fatal(rec.Body)
			}
			want := append(append([]any{}, tc.want...), msg("user", "now"))
			if diff := cmp.Diff(want, e.up.lastBody(t)["messages"]); diff != "" {
				t.Errorf("upstream messages mismatch (-want +got):\n%s", diff)
			}
			var notices []string
			if tc.stream {
				for _, ev := range testkit.ParseSSE(t, rec.Body.String()) {
					if ev.Type == "gw.notice" {
						var n struct {
							ID      string                `json:"id"`
							Choices []any                 `json:"choices"`
							Notice  struct{ Code string } `json:"gw_notice"`
						}
						if err := json.Unmarshal([]byte(ev.Data), &n); err != nil || n.ID != "chatcmpl-1" || n.Choices == nil {
							t.Errorf("gw.notice %s: %v", ev.Data, err)
						}
						notices = append(notices, n.Notice.Code)
					}
				}
			} else if h := rec.Header().Get("GW-Notice"); h != "" {
				notices = strings.Split(h, ", ")
			}
			if got := len(notices) == 1 && notices[0] == "history_trimmed"; got != tc.trimmed {
				t.Errorf("notices = %v; want history_trimmed: %v", notices, tc.trimmed)
			}
		})
	}
	if diff := cmp.Diff(full, e.history(t, "t1", "alice", "c1")); diff != "" {
		t.Errorf("trimming changed the stored history (-want +got):\n%s", diff)
	}
}

func TestEphemeral(t *testing.T) {
	e := newEnv(t)
	rec := e.post(t, "alice", `{"conversation_id":"c1","message":"secret","ephemeral":true,"system_prompt":"sys"}`)
	if rec.Code != 200 {
		t.Fatal(rec.Body)
	}
	if got := e.history(t, "t1", "alice", "c1"); got != nil {
		t.Errorf("ephemeral first turn stored: %v", got)
	}
	e.post(t, "alice", `{"conversation_id":"c1","message":"one","stream":false}`)
	rec = e.post(t, "alice", `{"conversation_id":"c1","message":"two","ephemeral":true,"stream":false}`)
	if rec.Code != 200 {
		t.Fatal(rec.Body)
	}
	// The ephemeral turn sees the history but adds nothing to it.
	if diff := cmp.Diff([]any{msg("user", "one"), msg("assistant", "reply 2"), msg("user", "two")}, e.up.lastBody(t)["messages"]); diff != "" {
		t.Errorf("ephemeral upstream messages mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{msg("user", "one"), msg("assistant", "reply 2")}, e.history(t, "t1", "alice", "c1")); diff != "" {
		t.Errorf("history mismatch (-want +got):\n%s", diff)
	}
}

func TestIsolation(t *testing.T) {
	e := newEnv(t)
	e.post(t, "alice", `{"conversation_id":"c1","message":"alice secret","system_prompt":"alice sys"}`)
	calls := len(e.up.Calls())

	rec := e.post(t, "bob", `{"conversation_id":"c1","message":"hi"}`)
	testkit.Diff(t, "bob on alice's conversation: error", testkit.WantError(errcat.ConversationNotFound, "conversation_id"), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
	if strings.Contains(rec.Body.String(), "secret") {
		t.Errorf("404 leaks: %s", rec.Body)
	}
	if rec.Header().Get("gw-conversation-id") != "c1" {
		t.Errorf("404 without conversation headers: %v", rec.Header())
	}
	if len(e.up.Calls()) != calls {
		t.Errorf("upstream called for another user's conversation")
	}

	// Ids are scoped to the tenant: the same user id of another tenant naming
	// c1 starts a conversation of its own, which is sent upstream without a
	// trace of t1's, and leaves t1's as it was.
	rec = e.post(t, "alice", `{"conversation_id":"c1","message":"other tenant"}`, "X-Test-Tenant", "t2")
	if rec.Code != 200 {
		t.Fatalf("other tenant on c1 = %d %s; want 200", rec.Code, rec.Body)
	}
	if up := e.up.Calls(); len(up) != calls+1 || strings.Contains(string(up[len(up)-1].Body), "alice") {
		t.Errorf("other tenant's turn: %d upstream calls (want %d), last body %s; want one without t1's conversation", len(up), calls+1, up[len(up)-1].Body)
	}
	want := []any{msg("system", "alice sys"), msg("user", "alice secret"), msg("assistant", "reply 1")}
	if diff := cmp.Diff(want, e.history(t, "t1", "alice", "c1")); diff != "" {
		t.Errorf("alice's history mismatch (-want +got):\n%s", diff)
	}
	want = []any{msg("user", "other tenant"), msg("assistant", "reply 2")}
	if diff := cmp.Diff(want, e.history(t, "t2", "alice", "c1")); diff != "" {
		t.Errorf("other tenant's history mismatch (-want +got):\n%s", diff)
	}
	if got := e.history(t, "t1", "bob", "c1"); got != nil {
		t.Errorf("bob reads alice's conversation: %v", got)
	}
}

func TestInject(t *testing.T) {
	var gotTenant, gotUser string
	e := newEnv(t, withInject(func(tenant, user string) (string, error) {
		gotTenant, gotUser = tenant, user
		return "Memory:\n- likes: tea", nil
	}))
	e.post(t, "alice", `{"conversation_id":"c1","message":"one","system_prompt":"sys"}`)
	e.post(t, "alice", `{"conversation_id":"c1","message":"two"}`)
	want := []any{msg("system", "Memory:\n- likes: tea"), msg("system", "sys"), msg("user", "one"), msg("assistant", "reply 1"), msg("user", "two")}
	if diff := cmp.Diff(want, e.up.lastBody(t)["messages"]); diff != "" {
		t.Errorf("upstream messages mismatch (-want +got):\n%s", diff)
	}
	if gotTenant != "t1" || gotUser != "alice" {
		t.Errorf("Inject(%q, %q); want t1, alice", gotTenant, gotUser)
	}
	// The injected message is never stored.
	if diff := cmp.Diff(want[1:], e.history(t, "t1", "alice", "c1")[:4]); diff != "" {
		t.Errorf("stored history mismatch (-want +got):\n%s", diff)
	}
}

func TestInjectError(t *testing.T) {
	e := newEnv(t, withInject(func(string, string) (string, error) { return "", errors.New("disk") }))
	rec := e.post(t, "alice", `{"message":"hi"}`)
	testkit.Diff(t, "error", testkit.WantError(errcat.InternalError, ""), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
}

func TestMissingUser(t *testing.T) {
	e := newEnv(t)
	rec := e.post(t, "", `{"message":"hi"}`)
	testkit.Diff(t, "error", testkit.WantError(errcat.MissingField, "headers.gw-user-id"), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
}
