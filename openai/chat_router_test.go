package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/openai"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
)

// chatThroughRouter serves a chat request through the real Router: local
// answers with localReply, cloudA with cloudReply.
func chatThroughRouter(t *testing.T, body string, localReply, cloudReply upstreamtest.Reply) (string, *upstreamtest.Server, *upstreamtest.Server) {
	t.Helper()
	local := upstreamtest.New(t, upstreamtest.WithReply(localReply))
	cloud := upstreamtest.New(t, upstreamtest.WithReply(cloudReply))
	cat, err := upstream.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	b := upstream.Backends{LocalURL: local.URL, CloudAURL: cloud.URL}
	router, err := upstream.NewRouter(cat, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { router.Close() })
	s := openai.New(openai.Config{Upstream: router, Catalog: router.Catalog()})
	w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", body, allTenants, nil))
	return w.Body.String(), local, cloud
}

func TestChatCompletionsThroughRouterFallbackStream(t *testing.T) {
	body := `{"messages":[{"role":"user","content":"hi"}],"stream":true,"model":"lm-4-scout"}`
	out, local, cloud := chatThroughRouter(t, body, upstreamtest.Reply{Status: 503}, upstreamtest.Reply{Content: "abc", Chunks: 3})
	evs := testkit.ParseSSE(t, out)
	n := len(evs)
	if n < 3 || evs[n-1] != (testkit.Event{Data: "[DONE]"}) || evs[n-2].Type != "gw.notice" ||
		!strings.Contains(evs[n-2].Data, `"code":"backend_fallback"`) {
		t.Fatalf("stream %q: want the chunks, a backend_fallback notice, [DONE]", out)
	}
	if got := testkit.Content(t, evs); got != "abc" {
		t.Errorf("streamed content %q, want abc", got)
	}
	// Both backends got the rewritten body, with their router alias as model.
	for _, srv := range []*upstreamtest.Server{local, cloud} {
		calls := srv.Calls()
		if len(calls) != 1 || !calls[0].Stream || !strings.Contains(string(calls[0].Body), `"messages":[{"role":"user","content":"hi"}]`) {
			t.Errorf("backend calls %+v", calls)
		}
	}
}

func TestChatCompletionsThroughRouterDrop(t *testing.T) {
	body := `{"model":"lm-4-scout-local","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	out, _, _ := chatThroughRouter(t, body, upstreamtest.Reply{Content: "abcdef", Chunks: 6, Drop: true, DropAfter: 2}, upstreamtest.Reply{})
	events := testkit.ParseSSE(t, out)
	if strings.Contains(out, "[DONE]") || events[len(events)-1].Type != "gw.error" {
		t.Errorf("stream %q: want gw.error last and no [DONE]", out)
	}
}

func TestChatCompletionsThroughRouterJSON(t *testing.T) {
	body := `{"model":"lm-4-scout-local","messages":[{"role":"user","content":"hi"}]}`
	out, _, _ := chatThroughRouter(t, body, upstreamtest.Reply{Content: "fine"}, upstreamtest.Reply{})
	var c struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil || len(c.Choices) != 1 {
		t.Fatalf("answer %q: %v", out, err)
	}
	if diff := cmp.Diff("fine", c.Choices[0].Message.Content); diff != "" {
		t.Errorf("content mismatch (-want +got):\n%s", diff)
	}
}
