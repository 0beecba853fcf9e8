package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/agents"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/tenantconfig"
	"github.com/chatgw/gateway/tools"
	"github.com/chatgw/gateway/upstream"
)

// reply answers one upstream call.
type reply func(req *upstream.Request) (*upstream.Response, error)

// fakeUpstream answers call n with script[n]; calls past the script answer
// text "final" (as SSE or JSON, as asked).
type fakeUpstream struct {
	mu     sync.Mutex
	calls  []upstream.Request
	script []reply
}

func (f *fakeUpstream) Do(ctx context.Context, req *upstream.Request) (*upstream.Response, error) {
	f.mu.Lock()
	c := *req
	c.Body = append([]byte(nil), req.Body...)
	f.calls = append(f.calls, c)
	n := len(f.calls) - 1
	var r reply = text("final")
	if n < len(f.script) {
		r = f.script[n]
	}
	f.mu.Unlock()
	return r(req)
}

func (f *fakeUpstream) Calls() []upstream.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]upstream.Request(nil), f.calls...)
}

// body returns call i's body, decoded.
func (f *fakeUpstream) body(t *testing.T, i int) map[string]any {
	t.Helper()
	calls := f.Calls()
	if i >= len(calls) {
		t.Fatalf("upstream call %d not made (%d calls)", i, len(calls))
	}
	var m map[string]any
	if err := json.Unmarshal(calls[i].Body, &m); err != nil {
		t.Fatalf("upstream body %s: %v", calls[i].Body, err)
	}
	return m
}

// messages returns the messages of call i as role: content strings (tool
// calls as role->name(args)).
func (f *fakeUpstream) messages(t *testing.T, i int) []string {
	t.Helper()
	var out []string
	for _, m := range f.body(t, i)["messages"].([]any) {
		mm := m.(map[string]any)
		s := fmt.Sprint(mm["role"], ": ", mm["content"])
		if tcs, ok := mm["tool_calls"].([]any); ok {
			for _, tc := range tcs {
				fn := tc.(map[string]any)["function"].(map[string]any)
				s += fmt.Sprintf(" ->%s(%s)", fn["name"], fn["arguments"])
			}
		}
		out = append(out, s)
	}
	return out
}

// text answers content, streamed in two deltas or as one completion.
func text(content string) reply {
	return func(req *upstream.Request) (*upstream.Response, error) {
		if req.Stream {
			half := len(content) / 2
			return testkit.SSEAnswer(
				testkit.Chunk(`{"role":"assistant","content":""}`, ""),
				testkit.Chunk(fmt.Sprintf(`{"content":%q}`, content[:half]), ""),
				testkit.Chunk(fmt.Sprintf(`{"content":%q}`, content[half:]), ""),
				testkit.Chunk(`{}`, "stop"),
			), nil
		}
		return testkit.JSONAnswer(testkit.Completion(fmt.Sprintf(`{"role":"assistant","content":%q}`, content), "stop")), nil
	}
}

// call is one tool call of a scripted answer.
type call struct{ id, name, args string }

// toolCalls answers the calls, streamed or as one completion.
func toolCalls(calls ...call) reply {
	return func(req *upstream.Request) (*upstream.Response, error) {
		if req.Stream {
			chunks := []string{testkit.Chunk(`{"role":"assistant","content":null}`, "")}
			for i, c := range calls {
				chunks = append(chunks,
					testkit.Chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, i, c.id, c.name), ""),
					testkit.Chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%q}}]}`, i, c.args), ""))
			}
			chunks = append(chunks, testkit.Chunk(`{}`, "tool_calls"))
			return testkit.SSEAnswer(chunks...), nil
		}
		var tcs []string
		for _, c := range calls {
			tcs = append(tcs, fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}`, c.id, c.name, c.args))
		}
		return testkit.JSONAnswer(testkit.Completion(`{"role":"assistant","content":null,"tool_calls":[`+strings.Join(tcs, ",")+`]}`, "tool_calls")), nil
	}
}

// fail answers err.
func fail(err error) reply {
	return func(*upstream.Request) (*upstream.Response, error) { return nil, err }
}

func testCatalog() *upstream.Catalog {
	m := func(alias string) upstream.ModelInfo {
		return upstream.ModelInfo{
			Alias: alias, Kind: upstream.KindChat, ContextWindow: 32000,
			Modalities: upstream.Modalities{TextIn: true, TextOut: true},
			Tools:      true,
			Backends:   []upstream.BackendInfo{{Provider: "local", RouterAlias: alias + "@local", Status: upstream.StatusAvailable}},
		}
	}
	return &upstream.Catalog{Models: []upstream.ModelInfo{m("lm-4-scout"), m("lm-small")}}
}

// lookupCall is one execution of the test tool lookup.
type lookupCall struct {
	Tenant, User string
	Depth        int
	Args         string
}

// env is an agents service over a memstore, a fake upstream and a registry
// with the test tool lookup and agent_call, served by a router whose stand-in
// middleware takes the tenant from X-Test-Tenant (default t1) and the role
// from X-Test-Role (default member).
type env struct {
	st      *memstore.Store
	up      *fakeUpstream
	clock   *clock.Fake
	reg     *tools.Registry
	svc     *agents.Service
	h       http.Handler
	mu      sync.Mutex
	lookups []lookupCall
	tenants map[string]*auth.Tenant
}

func testAgents() []agents.Agent {
	return []agents.Agent{
		{Name: "helper", Description: "Looks things up.", Model: "lm-4-scout", SystemPrompt: "You help.", Tools: []string{"lookup"}, MaxToolRounds: 2},
		{Name: "plain", Description: "Just talks.", Model: "lm-small", SystemPrompt: "You talk."},
		{Name: "broken", Model: "lm-4-scout", Tools: []string{"missing_tool"}},
		{Name: "caller", Model: "lm-4-scout", SystemPrompt: "You delegate.", Tools: []string{"agent_call"}},
		{Name: "reader", Model: "lm-4-scout", SystemPrompt: "You read.", Tools: []string{"lookup"}, RAGIndex: "docs"},
	}
}

type envOption func(*env, *agents.Config)

func withInject(f func(tenant, user string) (string, error)) envOption {
	return func(_ *env, c *agents.Config) {
		c.Inject = func(_ context.Context, tenant, user string) (string, error) { return f(tenant, user) }
	}
}

func newEnv(t *testing.T, script []reply, opts ...envOption) *env {
	t.Helper()
	e := &env{
		st:      memstore.New(),
		up:      &fakeUpstream{script: script},
		clock:   clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)),
		tenants: map[string]*auth.Tenant{},
	}
	t.Cleanup(func() { e.st.Close() })
	lookup := tools.Tool{
		Name:        "lookup",
		Description: "Looks a word up.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
		Execute: func(ctx context.Context, c tools.Call) (any, error) {
			e.mu.Lock()
			e.lookups = append(e.lookups, lookupCall{c.TenantID, c.UserID, agents.CallerDepth(ctx), string(c.Arguments)})
			e.mu.Unlock()
			var a struct {
				Q string `json:"q"`
			}
			if err := tools.DecodeArgs(c.Arguments, &a); err != nil {
				return nil, err
			}
			return map[string]string{"answer": "meaning of " + a.Q}, nil
		},
	}
	var err error
	if e.reg, err = tools.NewRegistry(lookup, tools.CurrentTime(e.clock)); err != nil {
		t.Fatal(err)
	}
	cfg := agents.Config{
		Agents: testAgents(), Tools: e.reg, Upstream: e.up, Catalog: testCatalog(),
		Store: e.st, Clock: e.clock, Keepalive: -1,
	}
	for _, o := range opts {
		o(e, &cfg)
	}
	if e.svc, err = agents.New(cfg); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.Register(e.svc.CallTool()); err != nil {
		t.Fatal(err)
	}
	e.h = e.withPrincipal(testkit.Router(t, map[string]http.HandlerFunc{
		"GET /a1/agents":                               e.svc.List,
		"POST /a1/agents/:name/chat":                   e.svc.Chat,
		"POST /a1/agents/:name/sessions":               e.svc.CreateSession,
		"GET /a1/agents/:name/sessions":                e.svc.ListSessions,
		"GET /a1/agents/:name/sessions/:sid":           e.svc.GetSession,
		"POST /a1/agents/:name/sessions/:sid/messages": e.svc.PostMessage,
		"POST /a1/agents/:name/sessions/:sid/compact":  e.svc.Compact,
		"GET /a1/agents/:name/sessions/:sid/lineage":   e.svc.Lineage,
		"POST /v1/tools/execute":                       e.reg.Execute,
		"PUT /v1/tenant/config":                        tenantconfig.NewService(e.st, testCatalog()).Put,
	}))
	return e
}

func (e *env) withPrincipal(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, _ := testkit.TenantOf(r, "t1", e.tenants)
		role := r.Header.Get("X-Test-Role")
		if role == "" {
			role = auth.RoleMember
		}
		p := &auth.Principal{Tenant: tenant, Role: role}
		if deny := r.Header.Get("X-Test-Deny"); deny != "" {
			p.Deny = []string{deny}
		}
		h.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), p)))
	})
}

// do sends a request as user (no GW-User-Id when ""), with header pairs;
// body "" sends none.
func (e *env) do(t *testing.T, method, path, user, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	q := testkit.Request{Method: method, Target: path, User: user, Header: http.Header{}}
	if body != "" {
		q.Body = body
	}
	for i := 0; i+1 < len(headers); i += 2 {
		q.Header.Set(headers[i], headers[i+1])
	}
	return testkit.Serve(t, e.h, q)
}

// streamText joins the content deltas of a recorded stream and lists its
// notice codes and whether it ended with [DONE].
func streamText(t *testing.T, body string) (text string, notices []string, done bool) {
	t.Helper()
	evs := testkit.ParseSSE(t, body)
	for _, ev := range evs {
		switch {
		case ev.Type == "gw.notice":
			var n struct {
				Notice struct {
					Code string `json:"code"`
				} `json:"gw_notice"`
			}
			_ = json.Unmarshal([]byte(ev.Data), &n)
			notices = append(notices, n.Notice.Code)
		case ev.Data == "[DONE]":
			done = true
		}
	}
	return testkit.Content(t, evs), notices, done
}

// replyText returns the content of a JSON chat completion.
func replyText(t *testing.T, body []byte) string {
	t.Helper()
	var c struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) == 0 {
		t.Fatalf("completion %s: %v", body, err)
	}
	return c.Choices[0].Message.Content
}

type (
	upstreamReq  = upstream.Request
	upstreamResp = upstream.Response
)

func readAll(t *testing.T, r *upstream.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func nopCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }

// newTenant returns a tenant allowing only models.
func newTenant(id string, models ...string) *auth.Tenant {
	return &auth.Tenant{ID: id, Models: models}
}
