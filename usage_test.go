package gateway_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
)

// usageGroup is a GET /v1/usage item grouped by kind, alias, user and
// backend.
type usageGroup struct {
	Kind                 string  `json:"kind"`
	Alias                string  `json:"alias"`
	User                 *string `json:"user"`
	Backend              string  `json:"backend"`
	Requests             int64   `json:"requests"`
	FailedRequests       int64   `json:"failed_requests"`
	RequestsWithoutUsage int64   `json:"requests_without_usage"`
	InputTokens          int64   `json:"input_tokens"`
	OutputTokens         int64   `json:"output_tokens"`
	TotalTokens          int64   `json:"total_tokens"`
}

// usageOf answers GET /v1/usage?query for token (and user), decoded.
func (e *env) usageOf(t *testing.T, token, user, query string) []usageGroup {
	t.Helper()
	resp, b := e.do(t, call{method: "GET", path: "/v1/usage?" + query, token: token, user: user})
	if resp.StatusCode != 200 {
		t.Fatalf("GET /v1/usage?%s: %s", query, outcome(resp, b))
	}
	var list struct {
		Data []usageGroup `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	return list.Data
}

func strp(s string) *string { return &s }

// TestUsageRecords: each chat (/v1 and /c1, JSON and stream), embeddings and
// image request that reached the upstream is recorded once with the tokens
// the backend reported; requests refused before the upstream are not; an
// upstream failure is, with its code. Close writes the records still
// buffered, so a gateway started afterwards on the store reads them.
func TestUsageRecords(t *testing.T) {
	st := memstore.New()
	fake := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{PromptTokens: 7, CompletionTokens: 3}))
	e := newEnvOn(t, fake, upstream.Backends{LocalURL: fake.URL, CloudAURL: fake.URL}, gateway.WithStore(st))
	sends := []struct {
		call   call
		status int
	}{
		{call{method: "POST", path: "/v1/chat/completions", token: "member", user: "alice",
			body: `{"model":"lm-4-scout-local","messages":[{"role":"user","content":"hi"}]}`}, 200},
		{call{method: "POST", path: "/v1/chat/completions", token: "member", user: "alice",
			body: `{"model":"lm-4-scout-local","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`}, 200},
		// A /v1 stream whose client does not ask for usage has none.
		{call{method: "POST", path: "/v1/chat/completions", token: "admin",
			body: `{"model":"lm-4-scout-local","stream":true,"messages":[{"role":"user","content":"hi"}]}`}, 200},
		// /c1 asks for usage itself.
		{call{method: "POST", path: "/c1/chat", token: "member", user: "bob", body: `{"message":"hi","model":"lm-4-scout-local"}`}, 200},
		{call{method: "POST", path: "/c1/chat", token: "member", user: "bob", body: `{"message":"hi","model":"lm-4-scout-local","stream":false}`}, 200},
		{call{method: "POST", path: "/v1/embeddings", token: "member", body: `{"model":"lm-embed","input":"hello"}`}, 200},
		{call{method: "POST", path: "/v1/images/generations", token: "member", user: "alice", body: `{"model":"lm-image","prompt":"a cat"}`}, 200},
		// Refused before the upstream: no record.
		{call{method: "POST", path: "/v1/chat/completions", token: "member", body: `{"messages":[{"role":"user","content":"hi"}]}`}, 400},
		{call{method: "POST", path: "/v1/embeddings", token: "member", body: `{"model":"lm-embed"}`}, 400},
		// Another tenant.
		{call{method: "POST", path: "/v1/chat/completions", token: "beta",
			body: `{"model":"lm-4-scout-local","messages":[{"role":"user","content":"hi"}]}`}, 200},
	}
	for _, s := range sends {
		if resp, b := e.do(t, s.call); resp.StatusCode != s.status {
			t.Fatalf("%s %s: %s, want %d", s.call.method, s.call.path, outcome(resp, b), s.status)
		}
	}
	fake.Enqueue(upstreamtest.Reply{Status: 500})
	if resp, b := e.do(t, call{method: "POST", path: "/v1/chat/completions", token: "member", user: "alice",
		body: `{"model":"lm-4-scout-local","messages":[{"role":"user","content":"hi"}]}`}); resp.StatusCode != 502 {
		t.Fatalf("upstream failure: %s", outcome(resp, b))
	}
	if err := e.g.Close(); err != nil {
		t.Fatal(err)
	}

	again := newEnvOn(t, fake, upstream.Backends{LocalURL: fake.URL, CloudAURL: fake.URL}, gateway.WithStore(st))
	want := []usageGroup{
		{Kind: "chat", Alias: "lm-4-scout-local", User: nil, Backend: "local", Requests: 1, RequestsWithoutUsage: 1},
		{Kind: "chat", Alias: "lm-4-scout-local", User: strp("alice"), Backend: "", Requests: 1, FailedRequests: 1},
		{Kind: "chat", Alias: "lm-4-scout-local", User: strp("alice"), Backend: "local", Requests: 2, InputTokens: 14, OutputTokens: 6, TotalTokens: 20},
		{Kind: "chat", Alias: "lm-4-scout-local", User: strp("bob"), Backend: "local", Requests: 2, InputTokens: 14, OutputTokens: 6, TotalTokens: 20},
		{Kind: "embeddings", Alias: "lm-embed", User: nil, Backend: "local", Requests: 1, InputTokens: 7, TotalTokens: 7},
		{Kind: "image", Alias: "lm-image", User: strp("alice"), Backend: "cloudA", Requests: 1, RequestsWithoutUsage: 1},
	}
	got := again.usageOf(t, "admin", "", "group_by=kind,alias,user,backend")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage mismatch (-want +got):\n%s", diff)
	}
	beta := again.usageOf(t, "beta", "u9", "group_by=")
	if len(beta) != 0 {
		t.Errorf("beta's member u9 sees %+v", beta)
	}
}

// TestWithUsageRetention refuses a retention that keeps nothing.
func TestWithUsageRetention(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Hour} {
		if _, err := gateway.New(gateway.WithUsageRetention(d)); err == nil {
			t.Errorf("WithUsageRetention(%v): New succeeded", d)
		}
	}
}

// TestUsageWrittenBeforeDefaultStoreCloses: with the default bbolt store,
// Close writes the buffered records before it closes the file.
func TestUsageWrittenBeforeDefaultStoreCloses(t *testing.T) {
	dir := t.TempDir()
	fake := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{PromptTokens: 5, CompletionTokens: 2}))
	opts := []gateway.Option{gateway.WithStore(nil), gateway.WithDataDir(dir)}
	e := newEnvOn(t, fake, upstream.Backends{LocalURL: fake.URL}, opts...)
	if resp, b := e.do(t, call{method: "POST", path: "/v1/chat/completions", token: "member",
		body: `{"model":"lm-4-scout-local","messages":[{"role":"user","content":"hi"}]}`}); resp.StatusCode != 200 {
		t.Fatal(outcome(resp, b))
	}
	if err := e.g.Close(); err != nil {
		t.Fatal(err)
	}
	again := newEnvOn(t, fake, upstream.Backends{LocalURL: fake.URL}, opts...)
	want := []usageGroup{{Requests: 1, InputTokens: 5, OutputTokens: 2, TotalTokens: 7}}
	if diff := cmp.Diff(want, again.usageOf(t, "admin", "", "group_by=")); diff != "" {
		t.Errorf("usage mismatch (-want +got):\n%s", diff)
	}
}
