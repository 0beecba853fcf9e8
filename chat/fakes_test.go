package chat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/chat"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/conversation"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
)

// The conversation family's service is the History of these tests, as the root
// wires it; chat itself never imports conversation.
var _ chat.History = (*conversation.Service)(nil)

// fakeUpstream records every call and answers with reply (the default answers
// "reply <n>" as SSE or JSON, as the request asked).
type fakeUpstream struct {
	mu    sync.Mutex
	calls []upstream.Request
	reply func(n int, req *upstream.Request) (*upstream.Response, error)
}

func (f *fakeUpstream) Do(ctx context.Context, req *upstream.Request) (*upstream.Response, error) {
	f.mu.Lock()
	c := *req
	c.Body = append([]byte(nil), req.Body...)
	f.calls = append(f.calls, c)
	n := len(f.calls)
	reply := f.reply
	f.mu.Unlock()
	if reply == nil {
		reply = textReply
	}
	return reply(n, req)
}

// Calls returns the recorded calls.
func (f *fakeUpstream) Calls() []upstream.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]upstream.Request(nil), f.calls...)
}

// lastBody returns the JSON body of the last call, decoded.
func (f *fakeUpstream) lastBody(t *testing.T) map[string]any {
	t.Helper()
	calls := f.Calls()
	if len(calls) == 0 {
		t.Fatal("upstream was not called")
	}
	var m map[string]any
	if err := json.Unmarshal(calls[len(calls)-1].Body, &m); err != nil {
		t.Fatalf("upstream body %s: %v", calls[len(calls)-1].Body, err)
	}
	return m
}

// textReply answers "reply <n>", streamed in two deltas or as one completion.
func textReply(n int, req *upstream.Request) (*upstream.Response, error) {
	text := fmt.Sprint("reply ", n)
	if req.Stream {
		return testkit.SSEAnswer(
			testkit.Chunk(`{"role":"assistant","content":""}`, ""),
			testkit.Chunk(fmt.Sprintf(`{"content":%q}`, text[:3]), ""),
			testkit.Chunk(fmt.Sprintf(`{"content":%q}`, text[3:]), ""),
			testkit.Chunk(`{}`, "stop"),
		), nil
	}
	return testkit.JSONAnswer(testkit.Completion(fmt.Sprintf(`{"role":"assistant","content":%q}`, text), "stop")), nil
}

func ptr[T any](v T) *T { return &v }

// testCatalog has the scout chain, a text-only alias and a reasoning alias.
func testCatalog() *upstream.Catalog {
	chatModel := func(alias string, imageIn bool, minMax *int, providers ...string) upstream.ModelInfo {
		m := upstream.ModelInfo{
			Alias: alias, Kind: upstream.KindChat, ContextWindow: 32000,
			Modalities: upstream.Modalities{TextIn: true, TextOut: true, ImageIn: imageIn},
			Tools:      true, JSONMode: true,
			Constraints: upstream.Constraints{MinMaxTokens: minMax},
		}
		for _, p := range providers {
			m.Backends = append(m.Backends, upstream.BackendInfo{Provider: p, RouterAlias: alias + "@" + p, Status: upstream.StatusAvailable})
		}
		return m
	}
	return &upstream.Catalog{Models: []upstream.ModelInfo{
		chatModel("lm-4-scout", true, nil, "local", "cloudA", "cloudB"),
		chatModel("lm-4-scout-local", true, nil, "local"),
		chatModel("lm-4-scout-cloudA", true, nil, "cloudA"),
		chatModel("lm-4-scout-cloudB", true, nil, "cloudB"),
		chatModel("lm-text", false, nil, "local"),
		chatModel("lm-reason", false, ptr(200), "local"),
	}}
}

// env is a chat service over a memstore and a fake upstream, with the
// conversation service for reading back, served by a router whose stand-in
// middleware takes the tenant from X-Test-Tenant (default t1).
type env struct {
	st    *memstore.Store
	up    *fakeUpstream
	conv  *conversation.Service
	chat  *chat.Service
	h     http.Handler
	clock *clock.Fake
	// tenants are the tenants by id that the stand-in middleware hands over;
	// another id gets a plain tenant.
	tenants map[string]*auth.Tenant
	quota   *quota.Accountant
}

type envOption func(*env, *chat.Config)

func withHistory(h chat.History) envOption {
	return func(_ *env, c *chat.Config) { c.History = h }
}

func withInject(f func(tenant, user string) (string, error)) envOption {
	return func(e *env, c *chat.Config) {
		c.Inject = func(_ store.Tx, tenant, user string) (string, error) { return f(tenant, user) }
	}
}

// withQuota wires a quota Accountant over the test catalog and the env's clock,
// and serves the given tenants (by id) with their quotas.
func withQuota(tenants ...*auth.Tenant) envOption {
	return func(e *env, c *chat.Config) {
		e.quota = quota.New(quota.Config{Store: e.st, Clock: e.clock, Catalog: c.Catalog})
		c.Quota = e.quota
		e.tenants = map[string]*auth.Tenant{}
		for _, t := range tenants {
			e.tenants[t.ID] = t
		}
	}
}

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	e := &env{st: memstore.New(), up: &fakeUpstream{}, clock: clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))}
	t.Cleanup(func() { e.st.Close() })
	e.conv = conversation.New(conversation.Config{Store: e.st, Clock: e.clock})
	cfg := chat.Config{History: e.conv, Upstream: e.up, Catalog: testCatalog(), Store: e.st, Clock: e.clock}
	for _, o := range opts {
		o(e, &cfg)
	}
	e.chat = chat.New(cfg)
	e.h = e.withPrincipal(testkit.Router(t, map[string]http.HandlerFunc{
		"POST /c1/chat":             e.chat.Chat,
		"GET /c1/conversations/:id": e.conv.GetConversation,
	}))
	return e
}

func (e *env) withPrincipal(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, known := testkit.TenantOf(r, "t1", e.tenants)
		if !known {
			tenant.Settings.CloudDocConsent = r.Header.Get("X-Test-Consent") == "on"
		}
		p := &auth.Principal{Tenant: tenant, Role: auth.RoleMember}
		h.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), p)))
	})
}

// post sends body to POST /c1/chat as user (with extra header pairs).
func (e *env) post(t *testing.T, user, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	return testkit.Serve(t, e.h, testkit.Request{Method: "POST", Target: "/c1/chat", User: user, Header: h, Body: body})
}

// history returns the stored conversation as GET /c1/conversations/:id shows
// it to user, or nil on 404.
func (e *env) history(t *testing.T, tenant, user, id string) []any {
	t.Helper()
	rec := testkit.Serve(t, e.h, testkit.Request{Method: "GET", Target: "/c1/conversations/" + id, User: user,
		Header: http.Header{"X-Test-Tenant": {tenant}}})
	if rec.Code == 404 {
		return nil
	}
	var body struct {
		Messages []any `json:"messages"`
	}
	testkit.Decode(t, rec, http.StatusOK, &body)
	return body.Messages
}

func msg(role, content string) map[string]any {
	return map[string]any{"role": role, "content": content}
}
