package demo_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/demo"
	"github.com/chatgw/gateway/internal/testkit"
)

// TestStreamUsage: a stream ends with the usage chunk when the request asks
// for it with stream_options.include_usage, as OpenAI's does, and not
// otherwise.
func TestStreamUsage(t *testing.T) {
	for _, tc := range []struct {
		options   string
		wantUsage bool
	}{
		{`,"stream_options":{"include_usage":true}`, true},
		{``, false},
	} {
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"two words"}]` + tc.options + `}`
		w := httptest.NewRecorder()
		demo.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/chat/completions", strings.NewReader(body)))
		events := testkit.ParseSSE(t, w.Body.String())
		if got := testkit.Content(t, events); !strings.Contains(got, `You said: \"two words\"`) && !strings.Contains(got, `You said: "two words"`) {
			t.Errorf("content %q does not quote the message", got)
		}
		last := events[len(events)-2].Data // before [DONE]
		if got := strings.Contains(last, `"usage":{"completion_tokens"`); got != tc.wantUsage {
			t.Errorf("options %q: last chunk %s; usage there = %v, want %v", tc.options, last, got, tc.wantUsage)
		}
	}
}
