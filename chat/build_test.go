package chat

import (
	"encoding/json"
	"testing"

	"github.com/chatgw/gateway/internal/wire"
)

// roleOfJSON is roleOf without the fast path: what it must agree with.
func roleOfJSON(raw []byte) string {
	var m wire.Message
	_ = json.Unmarshal(raw, &m)
	return m.Role
}

func TestRoleOf(t *testing.T) {
	tests := []struct{ raw, want string }{
		{`{"role":"user","content":"hi"}`, "user"},
		{`{"role":"system","content":"be brief"}`, "system"},
		{`{"content":"hi","role":"assistant"}`, "assistant"},
		{`{"role":"user","role":"system"}`, "system"},              // the last key wins
		{`{"role":"sys\u0074em","content":""}`, "system"},          // an escape
		{`{"role":"user","content":"say \"role\" twice"}`, "user"}, // "role" in the content
		{`{"role":"user","content":"ends in \"role"}`, "user"},     // `"role"` bytes in a string
		{`{"role":"us`, ""},             // cut short
		{`{ "role" : "tool" }`, "tool"}, // not compact
		{`{"Role":"user"}`, "user"},     // case-folded key
		{`{"role":null}`, ""},
		{`[]`, ""},
		{"{\"role\":\"\x80\"}", "\ufffd"},                                    // invalid UTF-8 reads as U+FFFD
		{"{\"role\":\"d\u00e9v\"}", "d\u00e9v"},                              // valid UTF-8 as it is
		{`{"role":"user","ROLE":"system"}`, "system"},                        // a later case-folded key wins
		{`{"role":"user","r\u006fle":"system"}`, "system"},                   // a later escaped key wins
		{`{"role":"user","Role":null}`, "user"},                              // null leaves the role
		{`{"role":"user","role":5}`, "user"},                                 // a wrong type leaves it too
		{`{"role":"user","content":[{"role":"system"}]}`, "user"},            // a nested key is not the role
		{`{"role":"user"`, ""},                                               // not JSON: encoding/json reads nothing
		{`{"role":"user"} {}`, ""},                                           // two values
		{`{"content":"x","role":"assistant","roles":"system"}`, "assistant"}, // a longer key
	}
	for _, tt := range tests {
		if got := roleOf(json.RawMessage(tt.raw)); got != tt.want {
			t.Errorf("roleOf(%s) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

// TestRoleOfAllocs holds roleOf to reading the roles of stored messages, as
// encoding/json writes them, without allocating: every turn with
// keep_last_turns reads the role of every stored message.
func TestRoleOfAllocs(t *testing.T) {
	for _, raw := range []string{
		`{"role":"user","content":"What is the weather like in Paris?"}`,
		`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"role\":1}"}}]}`,
		`{"role":"system","content":"say \"role\" twice"}`,
		`{"content":[{"type":"text","text":"look"}],"role":"user"}`,
	} {
		msg := json.RawMessage(raw)
		if n := testing.AllocsPerRun(100, func() { roleOf(msg) }); n != 0 {
			t.Errorf("roleOf(%s) allocates %v times, want 0", raw, n)
		}
	}
}

func FuzzRoleOf(f *testing.F) {
	for _, s := range []string{`{"role":"user","content":"x"}`, `{"role":"a\"b"}`, `{"role":"x","role":"y"}`, `{"role":""}`, `{"role":"x","ROLE":"y"}`, `{"role":"x","r\u006fle":"y"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // stored messages are valid JSON
		}
		if got, want := roleOf(raw), roleOfJSON(raw); got != want {
			t.Errorf("roleOf(%q) = %q, encoding/json reads %q", raw, got, want)
		}
	})
}

func BenchmarkTrimHistory(b *testing.B) {
	history := make([]json.RawMessage, 0, 40)
	for i := 0; i < 20; i++ {
		history = append(history,
			json.RawMessage(`{"role":"user","content":"What is the weather like in Paris today, and should I take an umbrella?"}`),
			json.RawMessage(`{"role":"assistant","content":"It is mild and cloudy in Paris today with a chance of light rain in the afternoon; an umbrella would be wise."}`))
	}
	k := int32(10)
	b.ReportAllocs()
	for b.Loop() {
		trimHistory(history, &k)
	}
}
