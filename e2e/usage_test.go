package e2e_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
)

// usageTotals is what the client saw of an answer's usage, or what
// GET /v1/usage answers of a group.
type usageTotals struct {
	Requests, WithoutUsage, In, Out int64
}

// answerUsage returns the prompt and completion tokens of the usage object
// of a JSON answer or of a stream's usage chunk, as the client received them;
// ok is false when the answer had none.
func answerUsage(t *testing.T, r *resp) (in, out int64, ok bool) {
	t.Helper()
	var objs []string
	if strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
		for _, ev := range testkit.ParseSSE(t, string(r.Body)) {
			if ev.Type == "" && ev.Data != "[DONE]" {
				objs = append(objs, ev.Data)
			}
		}
	} else {
		objs = []string{string(r.Body)}
	}
	for _, o := range objs {
		var a struct {
			Usage *struct {
				Prompt     int64 `json:"prompt_tokens"`
				Completion int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal([]byte(o), &a) == nil && a.Usage != nil {
			in, out, ok = a.Usage.Prompt, a.Usage.Completion, true
		}
	}
	return in, out, ok
}

// usageGroups polls GET /v1/usage?query as token (and user) until its
// groups' requests add up to requests (records are written within about a
// second), and returns the groups keyed by key.
func usageGroups(t *testing.T, g *gw, token, user, query string, requests int64, key func(map[string]any) string) map[string]usageTotals {
	t.Helper()
	var got map[string]usageTotals
	waitFor(5*time.Second, func() bool {
		r := g.get(t, "/v1/usage?"+query, token, user)
		if !wantStatus(t, r, 200, "GET /v1/usage, DECISIONS 9.3") {
			return true
		}
		got = map[string]usageTotals{}
		var n int64
		for _, it := range listData(r) {
			u := usageTotals{Requests: int64(it["requests"].(float64)), WithoutUsage: int64(it["requests_without_usage"].(float64)),
				In: int64(it["input_tokens"].(float64)), Out: int64(it["output_tokens"].(float64))}
			if total := int64(it["total_tokens"].(float64)); total != u.In+u.Out {
				t.Errorf("group %v: total_tokens %d, want input + output %d", it, total, u.In+u.Out)
			}
			got[key(it)] = u
			n += u.Requests
		}
		return n >= requests
	})
	return got
}

// TestUsageTotalsMatchUpstream (issue 15: "usage totals match the fake
// upstream's reported usage exactly"): /v1 and /c1 chats, JSON and streamed,
// an embeddings request and a chat a fallback backend answered each add
// exactly the tokens the fake backend reported, which the client saw too, to
// GET /v1/usage, grouped by user and backend; a request refused before the
// upstream adds nothing; the records survive a restart.
func TestUsageTotalsMatchUpstream(t *testing.T) {
	g := start(t, nil)
	want := map[string]usageTotals{}
	send := func(fake *upstreamtest.Server, reply upstreamtest.Reply, path, token, user string, body any, key string) {
		t.Helper()
		fake.SetReply(reply)
		r := g.post(t, path, token, user, body)
		if !wantStatus(t, r, 200, "a chat the fake answers") {
			return
		}
		w := want[key]
		w.Requests++
		in, out, ok := answerUsage(t, r)
		if !ok {
			w.WithoutUsage++
		} else if in != int64(reply.PromptTokens) || (!strings.Contains(path, "embeddings") && out != int64(reply.CompletionTokens)) {
			t.Errorf("%s: the client saw usage %d/%d, the fake was told %d/%d", path, in, out, reply.PromptTokens, reply.CompletionTokens)
		}
		w.In += in
		w.Out += out
		want[key] = w
	}
	msgs := []map[string]any{{"role": "user", "content": "hi"}}
	send(g.Local, upstreamtest.Reply{PromptTokens: 11, CompletionTokens: 4}, "/v1/chat/completions", tokMember, "alice",
		map[string]any{"model": "lm-4-scout-local", "messages": msgs}, "alice local")
	send(g.Local, upstreamtest.Reply{PromptTokens: 13, CompletionTokens: 5}, "/v1/chat/completions", tokMember, "alice",
		map[string]any{"model": "lm-4-scout-local", "messages": msgs, "stream": true, "stream_options": map[string]any{"include_usage": true}}, "alice local")
	send(g.Local, upstreamtest.Reply{PromptTokens: 17, CompletionTokens: 6}, "/c1/chat", tokMember, "bob",
		map[string]any{"message": "hi", "model": "lm-4-scout-local"}, "bob local")
	send(g.Local, upstreamtest.Reply{PromptTokens: 19, CompletionTokens: 7}, "/c1/chat", tokMember, "bob",
		map[string]any{"message": "hi", "model": "lm-4-scout-local", "stream": false}, "bob local")
	send(g.Local, upstreamtest.Reply{PromptTokens: 23}, "/v1/embeddings", tokMember, "",
		map[string]any{"model": "lm-embed", "input": []string{"a", "b"}}, " local")
	// A /v1 stream whose client did not ask for usage has none to count.
	send(g.Local, upstreamtest.Reply{PromptTokens: 29, CompletionTokens: 8}, "/v1/chat/completions", tokMember, "carol",
		map[string]any{"model": "lm-4-scout-local", "messages": msgs, "stream": true}, "carol local")
	// The local backend fails; cloudA answers and is the backend recorded.
	g.Local.SetReply(upstreamtest.Reply{Status: 503})
	send(g.CloudA, upstreamtest.Reply{PromptTokens: 31, CompletionTokens: 9}, "/v1/chat/completions", tokAdmin, "dave",
		map[string]any{"model": "lm-4-scout", "messages": msgs}, "dave cloudA")
	// Refused before the upstream: no record.
	wantStatus(t, g.post(t, "/v1/chat/completions", tokMember, "erin", map[string]any{"messages": msgs}), 400, "missing model")

	byUserBackend := func(it map[string]any) string { return str(it["user"]) + " " + str(it["backend"]) }
	check := func(when string) {
		got := usageGroups(t, g, tokAdmin, "", "group_by=user,backend", 7, byUserBackend)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: GET /v1/usage mismatch with what the fake reported (-want +got):\n%s", when, diff)
		}
	}
	check("after the requests")

	// A member sees its own user's usage only (DECISIONS 9.3).
	bob := usageGroups(t, g, tokMember, "bob", "group_by=user", 2, func(it map[string]any) string { return str(it["user"]) })
	if diff := cmp.Diff(map[string]usageTotals{"bob": want["bob local"]}, bob); diff != "" {
		t.Errorf("member bob's view mismatch (-want +got):\n%s", diff)
	}
	wantErr(t, g.get(t, "/v1/usage", tokMember, ""), 400, "invalid_request_error", "missing_field", "headers.gw-user-id",
		"a member without GW-User-Id, DECISIONS 9.3")

	g.Restart() // SIGTERM: the records still buffered are written before the store closes
	check("after a restart")
}

// TestUsageRetentionSetting: GATEWAY_USAGE_RETENTION must be positive.
func TestUsageRetentionSetting(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	writeFile(t, tokens, defaultTokens())
	code, out := runToExit(t, map[string]string{"GATEWAY_TOKENS_FILE": tokens, "GATEWAY_LOCAL_URL": "", "GATEWAY_USAGE_RETENTION": "0s"})
	if code == 0 || !strings.Contains(out, "WithUsageRetention") {
		t.Errorf("GATEWAY_USAGE_RETENTION=0s: exit %d, want a refusal naming the retention:\n%s", code, tail(out, 1000))
	}
}
