package chat_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/chatgw/gateway/chat"
	"github.com/chatgw/gateway/store"
	"github.com/google/go-cmp/cmp"
)

// fixedHistory is a History holding one stored conversation, whatever the id.
type fixedHistory struct {
	chat.History
	msgs []string
}

func (h *fixedHistory) LoadTx(store.Tx, string, string, string) ([]json.RawMessage, []byte, error) {
	out := make([]json.RawMessage, len(h.msgs))
	for i, m := range h.msgs {
		out[i] = json.RawMessage(m)
	}
	return out, nil, nil
}

func (h *fixedHistory) Append(context.Context, string, string, string, []json.RawMessage, string, []byte) error {
	return nil
}

func TestToolCallReplay(t *testing.T) {
	const (
		weather  = `{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}`
		now      = `{"id":"call_2","type":"function","function":{"name":"now","arguments":"{}"}}`
		badArgs  = `{"id":"call_3","type":"function","function":{"name":"broken","arguments":"{"}}`
		user     = `{"role":"user","content":"q"}`
		answer1  = `{"role":"tool","tool_call_id":"call_1","content":"sunny"}`
		answer2  = `{"role":"tool","tool_call_id":"call_2","content":"noon"}`
		afterAll = `{"role":"assistant","content":"It is sunny."}`
	)
	asMsg := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return v
	}
	tests := []struct {
		name    string
		history []string
		want    []string // the history as sent upstream
	}{
		{
			name:    "content kept",
			history: []string{user, `{"role":"assistant","content":"Let me check.","tool_calls":[` + weather + `]}`},
			want:    []string{user, `{"role":"assistant","content":"Let me check."}`},
		},
		{
			name:    "empty content names the tools",
			history: []string{user, `{"role":"assistant","content":"","tool_calls":[` + weather + `,` + now + `]}`},
			want:    []string{user, `{"role":"assistant","content":"[called tools: get_weather, now]"}`},
		},
		{
			name:    "null content",
			history: []string{user, `{"role":"assistant","content":null,"tool_calls":[` + now + `]}`},
			want:    []string{user, `{"role":"assistant","content":"[called tools: now]"}`},
		},
		{
			// Arguments that are not JSON would fail the pre-flight check
			// tool_call_arguments_invalid on every later turn if they were sent.
			name:    "invalid arguments not replayed",
			history: []string{user, `{"role":"assistant","content":"","tool_calls":[` + badArgs + `]}`},
			want:    []string{user, `{"role":"assistant","content":"[called tools: broken]"}`},
		},
		{
			name: "answered calls sent as stored",
			history: []string{user, `{"role":"assistant","content":null,"tool_calls":[` + weather + `,` + now + `]}`,
				answer2, answer1, afterAll},
			want: []string{user, `{"role":"assistant","content":null,"tool_calls":[` + weather + `,` + now + `]}`,
				answer2, answer1, afterAll},
		},
		{
			name: "partly answered keeps the answered call",
			history: []string{user, `{"role":"assistant","content":null,"tool_calls":[` + weather + `,` + now + `]}`,
				answer1, afterAll},
			want: []string{user, `{"role":"assistant","content":null,"tool_calls":[` + weather + `]}`,
				answer1, afterAll},
		},
		{
			name: "an answer after another message does not count",
			history: []string{user, `{"role":"assistant","content":"x","tool_calls":[` + weather + `]}`,
				user, answer1},
			want: []string{user, `{"role":"assistant","content":"x"}`, user, answer1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withHistory(&fixedHistory{msgs: tc.history}))
			if rec := e.post(t, "alice", `{"conversation_id":"c1","message":"next","stream":false}`); rec.Code != 200 {
				t.Fatalf("status = %d: %s", rec.Code, rec.Body)
			}
			var want []any
			for _, m := range tc.want {
				want = append(want, asMsg(m))
			}
			want = append(want, msg("user", "next"))
			if diff := cmp.Diff(want, e.up.lastBody(t)["messages"]); diff != "" {
				t.Errorf("upstream messages mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
