package e2e_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// checkStream checks a streamed chat answer of a fake's default reply: SSE
// headers, OpenAI chunks (of id from, unless from is "") carrying
// upstreamtest.DefaultContent, then data: [DONE]; and a gw.notice
// backend_fallback chunk shaped like the stream's own chunks before [DONE]
// exactly when notice is true.
func checkStream(t *testing.T, r *resp, from string, notice bool) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("stream Content-Type %q, want text/event-stream (DECISIONS 8.30)", ct)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("stream Cache-Control %q, want no-cache (DECISIONS 8.30)", cc)
	}
	evs := testkit.ParseSSE(t, string(r.Body))
	if len(evs) == 0 || evs[len(evs)-1].Data != "[DONE]" || evs[len(evs)-1].Type != "" {
		t.Errorf("stream does not end with data: [DONE]: %s", truncate(string(r.Body), 500))
		return
	}
	var first map[string]any
	var notices []map[string]any
	for i, e := range evs[:len(evs)-1] {
		var m map[string]any
		if err := json.Unmarshal([]byte(e.Data), &m); err != nil {
			t.Errorf("event %d data is not JSON: %q", i, e.Data)
			continue
		}
		switch e.Type {
		case "":
			if m["object"] != "chat.completion.chunk" {
				t.Errorf("event %d object %v, want chat.completion.chunk", i, m["object"])
			}
			if first == nil {
				first = m
			}
		case "gw.notice":
			gn, _ := m["gw_notice"].(map[string]any)
			choices, isArr := m["choices"].([]any)
			if m["object"] != "chat.completion.chunk" || first == nil || m["id"] != first["id"] || m["created"] != first["created"] || m["model"] != first["model"] ||
				!isArr || len(choices) != 0 || gn == nil || gn["code"] == nil {
				t.Errorf("gw.notice data %s, want {id, object:chat.completion.chunk, created, model of the stream's chunks %v, choices:[], gw_notice:{code,message}} (DECISIONS 5)", e.Data, first)
			}
			if msg, _ := gn["message"].(string); msg == "" || strings.Contains(msg, "sk-") {
				t.Errorf("gw_notice.message %q: want a message naming the alias, never a key (DECISIONS 5)", msg)
			}
			notices = append(notices, gn)
		default:
			t.Errorf("unexpected event %q: %s", e.Type, e.Data)
		}
	}
	if from != "" && (first == nil || first["id"] != from) {
		t.Errorf("stream chunk id %v, want %s (answered by the expected backend)", first["id"], from)
	}
	if got := testkit.Content(t, evs); got != upstreamtest.DefaultContent {
		t.Errorf("streamed content %q, want %q", got, upstreamtest.DefaultContent)
	}
	fallback := false
	for _, n := range notices {
		if n["code"] == "backend_fallback" {
			fallback = true
			if msg, _ := n["message"].(string); !strings.Contains(msg, "lm-4-scout") {
				t.Errorf("backend_fallback message %q does not name the alias (DECISIONS 5)", msg)
			}
		}
	}
	if fallback != notice {
		t.Errorf("gw.notice backend_fallback present=%v, want %v (DECISIONS 5): %s", fallback, notice, truncate(string(r.Body), 800))
	}
}

// ---- upstream records ----

// lastBody decodes the body of the last call the fake received on path suffix.
func lastBody(t *testing.T, s *upstreamtest.Server, suffix string) map[string]any {
	t.Helper()
	calls := s.Calls()
	for i := len(calls) - 1; i >= 0; i-- {
		if strings.HasSuffix(calls[i].Path, suffix) {
			var m map[string]any
			if err := json.Unmarshal(calls[i].Body, &m); err != nil {
				t.Fatalf("upstream body is not JSON: %s", calls[i].Body)
			}
			return m
		}
	}
	t.Fatalf("the fake received no call on %s (calls: %d)", suffix, len(calls))
	return nil
}

// chatCalls counts the fake's calls to /chat/completions.
func chatCalls(s *upstreamtest.Server) int {
	n := 0
	for _, c := range s.Calls() {
		if strings.HasSuffix(c.Path, "/chat/completions") {
			n++
		}
	}
	return n
}

// callsOn counts the calls of g's three fakes on path suffix.
func callsOn(g *gw, suffix string) int {
	n := 0
	for _, c := range append(append(g.Local.Calls(), g.CloudA.Calls()...), g.CloudB.Calls()...) {
		if strings.HasSuffix(c.Path, suffix) {
			n++
		}
	}
	return n
}

// messagesOf returns the messages array of an upstream chat body.
func messagesOf(body map[string]any) []map[string]any {
	raw, _ := body["messages"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, m := range raw {
		mm, _ := m.(map[string]any)
		out = append(out, mm)
	}
	return out
}

// textOf returns a message content as text (parts joined).
func textOf(m map[string]any) string {
	switch c := m["content"].(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			if pm, ok := p.(map[string]any); ok {
				if s, ok := pm["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// ctxTimeout is a context for waits on fakes.
func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
