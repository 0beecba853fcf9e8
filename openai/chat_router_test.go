package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

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
	w := serve(s.ChatCompletions, request("POST", "/v1/chat/completions", body, allTenants, nil))
	return w.Body.String(), local, cloud
}

func TestChatCompletionsThroughRouterFallbackStream(t *testing.T) {
	body := `{"messages":[{"role":"user","content":"hi"}],"stream":true,"model":"lm-4-scout"}`
	out, local, cloud := chatThroughRouter(t, body, upstreamtest.Reply{Status: 503}, upstreamtest.Reply{Content: "abc", Chunks: 3})
	events := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n")
	if len(events) < 3 || events[len(events)-1] != "data: [DONE]" || !strings.HasPrefix(events[len(events)-2], "event: gw.notice\n") ||
		!strings.Contains(events[len(events)-2], `"code":"backend_fallback"`) {
		t.Fatalf("stream %q: want the chunks, a backend_fallback notice, [DONE]", out)
	}
	var content strings.Builder
	for _, ev := range events[:len(events)-2] {
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &c); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		for _, ch := range c.Choices {
			content.WriteString(ch.Delta.Content)
		}
	}
	if content.String() != "abc" {
		t.Errorf("streamed content %q, want abc", content.String())
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
	events := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n")
	last := events[len(events)-1]
	if strings.Contains(out, "[DONE]") || !strings.HasPrefix(last, "event: gw.error\n") {
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
