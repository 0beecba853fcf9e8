package agents_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chatgw/gateway/agents"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
)

func withMaxResponseBytes(n int64) envOption {
	return func(_ *env, c *agents.Config) { c.MaxResponseBytes = n }
}

// TestOversizedAnswers: every upstream answer an agent holds is bounded by
// MaxResponseBytes: a tool round read whole (JSON or stream) before anything
// reached the client answers 502 upstream_error; a session's streamed final
// answer ends with a gw.error, and the turn is not stored.
func TestOversizedAnswers(t *testing.T) {
	big := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name, body string
		script     []reply
	}{
		{"JSON tool round", hello, []reply{text(big)}},
		{"streamed tool round", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`,
			[]reply{toolCalls(call{"c1", "lookup", fmt.Sprintf(`{"q":%q}`, big)})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.script, withMaxResponseBytes(1000))
			rec := e.do(t, "POST", "/a1/agents/helper/chat", "", tc.body)
			testkit.CheckError(t, rec, testkit.WantError(errcat.UpstreamError, ""))
			if !strings.Contains(rec.Body.String(), "larger than 1000 bytes") {
				t.Errorf("error does not name the limit: %s", rec.Body)
			}
		})
	}
	t.Run("session stream", func(t *testing.T) {
		e := newEnv(t, []reply{text(big)}, withMaxResponseBytes(1000))
		s := e.create(t, "plain", "u1", "")
		rec := e.do(t, "POST", "/a1/agents/plain/sessions/"+s.ID+"/messages", "u1", `{"message":"hi","stream":true}`)
		if out := rec.Body.String(); rec.Code != 200 || !strings.Contains(out, "event: gw.error") || strings.Contains(out, "[DONE]") {
			t.Errorf("= %d %q, want a stream ended by gw.error", rec.Code, out[max(0, len(out)-300):])
		}
		if got := e.get(t, "plain", "u1", s.ID); len(got.Messages) != 0 {
			t.Errorf("session holds %v after the refused answer, want nothing stored", contents(got))
		}
	})
}
