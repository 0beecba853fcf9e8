package agents_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chatgw/gateway/agents"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// metered notes each upstream call in the request's meter, as the root's
// upstream wrapper does.
type metered struct{ upstream.Upstream }

func (m metered) Do(ctx context.Context, req *upstream.Request) (*upstream.Response, error) {
	resp, err := m.Upstream.Do(ctx, req)
	backend := ""
	if err == nil {
		backend = resp.Provider
	}
	httpx.MeterOf(ctx).Call(req.Alias, backend)
	return resp, err
}

func withMeteredUpstream() envOption {
	return func(e *env, c *agents.Config) { c.Upstream = metered{e.up} }
}

// usageChunk is a stream's usage chunk of in prompt and out completion tokens.
func usageChunk(in, out int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"lm","choices":[],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, in, out, in+out)
}

// TestChatMetersEveryRound: a metered agent chat reports the usage of every
// upstream round, tool rounds and nested agent_call chats included, and of
// the last round once although the tool loop and the relay both read it.
func TestChatMetersEveryRound(t *testing.T) {
	streamedCall := func(*upstream.Request) (*upstream.Response, error) {
		return testkit.SSEAnswer(
			testkit.Chunk(`{"role":"assistant","content":null}`, ""),
			testkit.Chunk(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"x\"}"}}]}`, ""),
			testkit.Chunk(`{}`, "tool_calls"),
			usageChunk(10, 3),
		), nil
	}
	streamedText := func(*upstream.Request) (*upstream.Response, error) {
		return testkit.SSEAnswer(
			testkit.Chunk(`{"role":"assistant","content":""}`, ""),
			testkit.Chunk(`{"content":"done"}`, ""),
			testkit.Chunk(`{}`, "stop"),
			usageChunk(20, 4),
		), nil
	}
	for _, tc := range []struct {
		name, agent, body string
		script            []reply
		want              httpx.MeterTotals
	}{
		{"json: tool round and last round", "helper", hello,
			[]reply{toolCalls(call{"c1", "lookup", `{"q":"x"}`}), text("done")},
			httpx.MeterTotals{Calls: 2, Alias: "lm-4-scout", Backend: "local", InputTokens: 2, OutputTokens: 2}},
		{"stream: tool round and last round", "helper", `{"stream":true,"messages":[{"role":"user","content":"hello"}]}`,
			[]reply{streamedCall, streamedText},
			httpx.MeterTotals{Calls: 2, Alias: "lm-4-scout", Backend: "local", InputTokens: 30, OutputTokens: 7}},
		{"stream without usage", "plain", `{"stream":true,"messages":[{"role":"user","content":"hello"}]}`,
			[]reply{text("done")},
			httpx.MeterTotals{Calls: 1, Alias: "lm-small", Backend: "local", UsageMissing: true}},
		{"agent_call's chat counts", "caller", hello,
			[]reply{toolCalls(call{"c1", "agent_call", `{"agent":"plain","message":"hi"}`}), text("nested"), text("done")},
			httpx.MeterTotals{Calls: 3, Alias: "lm-4-scout", Backend: "local", InputTokens: 3, OutputTokens: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.script, withMeteredUpstream())
			r := testkit.NewRequest(t, testkit.Request{Method: "POST", Target: "/a1/agents/" + tc.agent + "/chat", User: "u1", Body: tc.body})
			info := httpx.InfoFrom(r.Context())
			info.Meter.Start()
			w := testkit.Record(e.h.ServeHTTP, r)
			if w.Code != 200 {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			if diff := cmp.Diff(tc.want, info.Meter.Totals()); diff != "" {
				t.Errorf("meter totals mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
