package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/conversation"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
)

// env is one gateway over an in-memory store and a fake local backend, with
// tokens admin (tenant_admin of acme), member (member of acme), beta (member
// of beta) and nousage (member of acme denied usage:read).
type env struct {
	srv  *httptest.Server
	fake *upstreamtest.Server
	g    *gateway.Gateway
}

func newEnv(t *testing.T, opts ...gateway.Option) *env {
	t.Helper()
	fake := upstreamtest.New(t)
	return newEnvOn(t, fake, upstream.Backends{LocalURL: fake.URL}, opts...)
}

// newEnvOn is newEnv over the backends b, for a test that needs their keys or
// other servers than a fake; fake is the env's fake (nil when b names none).
func newEnvOn(t *testing.T, fake *upstreamtest.Server, b upstream.Backends, opts ...gateway.Option) *env {
	t.Helper()
	tokens := auth.MustStatic(
		[]*auth.Tenant{{ID: "acme"}, {ID: "beta"}},
		map[string]auth.StaticToken{
			"admin":   {Tenant: "acme", Role: auth.RoleTenantAdmin},
			"member":  {Tenant: "acme", Role: auth.RoleMember},
			"beta":    {Tenant: "beta", Role: auth.RoleMember},
			"nousage": {Tenant: "acme", Role: auth.RoleMember, Deny: []string{"usage:read"}},
		})
	base := []gateway.Option{
		gateway.WithStore(memstore.New()),
		gateway.WithTokenCatalog(tokens),
		gateway.WithBackends(b),
		gateway.WithLogger(slog.New(slog.DiscardHandler)),
		gateway.WithRateLimit(1000, 1000),
	}
	g, err := gateway.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(func() { srv.Close(); g.Close() })
	return &env{srv: srv, fake: fake, g: g}
}

type call struct {
	method, path, token, user, body string
	header                          http.Header // more request headers
}

func (e *env) do(t *testing.T, c call) (*http.Response, []byte) {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, e.srv.URL+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.user != "" {
		req.Header.Set("GW-User-Id", c.user)
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// outcome is "<status> <code> <param>" for errors, "<status>" otherwise.
func outcome(resp *http.Response, b []byte) string {
	if resp.StatusCode < 400 {
		return http.StatusText(resp.StatusCode)
	}
	var e struct {
		Error struct {
			Code  string  `json:"code"`
			Param *string `json:"param"`
		} `json:"error"`
	}
	json.Unmarshal(b, &e)
	p := "null"
	if e.Error.Param != nil {
		p = *e.Error.Param
	}
	return http.StatusText(resp.StatusCode) + " " + e.Error.Code + " " + p
}

func TestRoutesScopesAndIdentity(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		call call
		want string
	}{
		{"public index", call{method: "GET", path: "/"}, "OK"},
		{"public health", call{method: "GET", path: "/healthz"}, "OK"},
		{"public errors", call{method: "GET", path: "/errors"}, "OK"},
		{"public errors html", call{method: "GET", path: "/docs/errors"}, "OK"},
		{"public openapi", call{method: "GET", path: "/openapi.json"}, "OK"},
		{"public playground", call{method: "GET", path: "/playground"}, "OK"},
		{"docs unknown", call{method: "GET", path: "/docs/nope"}, "Not Found route_not_found null"},
		{"memory needs user", call{method: "GET", path: "/v1/memory", token: "member"}, "Bad Request missing_field headers.gw-user-id"},
		{"memory needs bearer", call{method: "GET", path: "/v1/memory", user: "u1"}, "Unauthorized missing_authorization headers.authorization"},
		{"memory ok", call{method: "GET", path: "/v1/memory", token: "member", user: "u1"}, "OK"},
		{"member cannot write tenant prompt", call{method: "PUT", path: "/v1/system-prompts/tenant", token: "member", user: "u1", body: `{"content":"x"}`}, "Forbidden forbidden null"},
		{"member writes user prompt", call{method: "PUT", path: "/v1/system-prompts/user", token: "member", user: "u1", body: `{"content":"x"}`}, "OK"},
		{"admin reads tenant prompts without user", call{method: "GET", path: "/v1/system-prompts/tenant/versions", token: "admin"}, "OK"},
		{"admin reads user prompts only with user", call{method: "GET", path: "/v1/system-prompts/user/versions", token: "admin"}, "Bad Request missing_field headers.gw-user-id"},
		{"member reads tenant prompts only with user", call{method: "GET", path: "/v1/system-prompts/tenant/versions", token: "member"}, "Bad Request missing_field headers.gw-user-id"},
		{"member reads config", call{method: "GET", path: "/v1/tenant/config", token: "member"}, "OK"},
		{"member cannot write config", call{method: "PUT", path: "/v1/tenant/config", token: "member", body: `{"key":"default_model","value":"lm-4-scout"}`}, "Forbidden forbidden null"},
		{"body user_id on memory", call{method: "POST", path: "/v1/memory", token: "member", user: "u1", body: `{"key":"k","value":"v","visibility":"private","user_id":"x"}`}, "Bad Request invalid_field body.user_id"},
		{"query user_id on conversations", call{method: "GET", path: "/c1/conversations?user_id=x", token: "member", user: "u1"}, "Bad Request invalid_field query.user_id"},
		{"admin tenant-wide conversations", call{method: "GET", path: "/c1/conversations", token: "admin"}, "OK"},
		{"member needs user on conversations", call{method: "GET", path: "/c1/conversations", token: "member"}, "Bad Request missing_field headers.gw-user-id"},
		{"c1 chat needs user even for admin", call{method: "POST", path: "/c1/chat", token: "admin", body: `{"message":"hi"}`}, "Bad Request missing_field headers.gw-user-id"},
		{"tools inspect", call{method: "POST", path: "/v1/tools/execute", token: "member", body: `{"inspect":true}`}, "OK"},
		{"admin reads the tenant's usage", call{method: "GET", path: "/v1/usage", token: "admin"}, "OK"},
		{"member reads its user's usage", call{method: "GET", path: "/v1/usage", token: "member", user: "u1"}, "OK"},
		{"member needs user on usage", call{method: "GET", path: "/v1/usage", token: "member"}, "Bad Request missing_field headers.gw-user-id"},
		{"usage without usage:read", call{method: "GET", path: "/v1/usage", token: "nousage", user: "u1"}, "Forbidden forbidden null"},
		{"usage query user_id", call{method: "GET", path: "/v1/usage?user_id=u2", token: "admin"}, "Bad Request invalid_field query.user_id"},
		{"unknown route", call{method: "GET", path: "/v2/nothing", token: "member"}, "Not Found route_not_found null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := e.do(t, tt.call)
			if got := outcome(resp, b); got != tt.want {
				t.Errorf("%s %s = %q, want %q (%s)", tt.call.method, tt.call.path, got, tt.want, b)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no x-request-id")
			}
		})
	}
}

func TestErrorCatalogEndpoint(t *testing.T) {
	e := newEnv(t)
	_, b := e.do(t, call{method: "GET", path: "/errors"})
	var cat struct {
		Version int               `json:"version"`
		Count   int               `json:"count"`
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(b, &cat); err != nil {
		t.Fatal(err)
	}
	n := len(errcat.Entries()) // the spec's 50 and chatgw's additions
	if diff := cmp.Diff([]int{1, n, n}, []int{cat.Version, cat.Count, len(cat.Entries)}); diff != "" {
		t.Errorf("catalog version/count/entries mismatch (-want +got):\n%s", diff)
	}
}

func TestInjectionReachesUpstreamButNotHistory(t *testing.T) {
	e := newEnv(t)
	steps := []call{
		{method: "PUT", path: "/v1/system-prompts/tenant", token: "admin", user: "u1", body: `{"content":"Be kind."}`},
		{method: "POST", path: "/v1/memory", token: "member", user: "u1", body: `{"key":"name","value":"Alice","visibility":"private"}`},
	}
	for _, c := range steps {
		if resp, b := e.do(t, c); resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, resp.StatusCode, b)
		}
	}
	resp, b := e.do(t, call{method: "POST", path: "/c1/chat", token: "member", user: "u1", body: `{"message":"hi","stream":false,"conversation_id":"c1"}`})
	if resp.StatusCode != 200 {
		t.Fatalf("/c1/chat: %d %s", resp.StatusCode, b)
	}
	calls := e.fake.Calls()
	if len(calls) != 1 {
		t.Fatalf("upstream calls = %d", len(calls))
	}
	var sent struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(calls[0].Body, &sent)
	if len(sent.Messages) != 2 || sent.Messages[0].Role != "system" ||
		!strings.Contains(sent.Messages[0].Content, "Be kind.") || !strings.Contains(sent.Messages[0].Content, "name: Alice") {
		t.Errorf("upstream messages = %+v", sent.Messages)
	}
	_, b = e.do(t, call{method: "GET", path: "/c1/conversations/c1", token: "member", user: "u1"})
	if strings.Contains(string(b), "Be kind.") || strings.Contains(string(b), "Alice") {
		t.Errorf("injected context was persisted: %s", b)
	}
}

func TestTwoGatewaysSideBySide(t *testing.T) {
	a, b := newEnv(t), newEnv(t)
	for _, e := range []*env{a, b} {
		if resp, body := e.do(t, call{method: "POST", path: "/v1/memory", token: "member", user: "u1", body: `{"key":"k","value":"v","visibility":"private"}`}); resp.StatusCode != 200 {
			t.Fatalf("memory write: %d %s", resp.StatusCode, body)
		}
	}
	_, body := b.do(t, call{method: "GET", path: "/v1/memory/usage?visibility=private", token: "member", user: "u1"})
	var usage struct {
		Entries int `json:"entries"`
	}
	json.Unmarshal(body, &usage)
	if usage.Entries != 1 {
		t.Errorf("second gateway sees %d entries, want its own 1", usage.Entries)
	}
}

func TestNewNeedsTokenCatalog(t *testing.T) {
	if _, err := gateway.New(gateway.WithStore(memstore.New())); err == nil || !strings.Contains(err.Error(), "token catalog") {
		t.Errorf("New without tokens = %v", err)
	}
}

func TestDefaultStoreIsLockedFile(t *testing.T) {
	dir := t.TempDir()
	tokens := auth.MustStatic([]*auth.Tenant{{ID: "t"}}, map[string]auth.StaticToken{"x": {Tenant: "t"}})
	g, err := gateway.New(gateway.WithTokenCatalog(tokens), gateway.WithDataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.New(gateway.WithTokenCatalog(tokens), gateway.WithDataDir(dir)); err == nil {
		t.Error("a second gateway opened the same bbolt file")
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	g2, err := gateway.New(gateway.WithTokenCatalog(tokens), gateway.WithDataDir(dir))
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	g2.Close()
}

// TestNewMigratesConversations: New brings the store's conversations to the
// current layout before it serves (layout 1's global id claims are removed),
// and refuses a store that a newer gateway wrote.
func TestNewMigratesConversations(t *testing.T) {
	ctx := context.Background()
	tokens := auth.MustStatic([]*auth.Tenant{{ID: "t"}}, map[string]auth.StaticToken{"x": {Tenant: "t"}})
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	put := func(bucket, key string, value []byte) {
		t.Helper()
		if err := st.Update(ctx, func(tx store.Tx) error { return tx.Put([]byte(bucket), []byte(key), value) }); err != nil {
			t.Fatal(err)
		}
	}
	put("conv/owner", "T-1", []byte("other-tenant"))
	g, err := gateway.New(gateway.WithStore(st), gateway.WithTokenCatalog(tokens), gateway.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	err = st.View(ctx, func(tx store.Tx) error {
		if v := tx.Get([]byte("conv/owner"), []byte("T-1")); v != nil {
			t.Errorf("conv/owner T-1 = %q after New; want it removed", v)
		}
		if v := tx.Get([]byte("conv/layout"), []byte("version")); string(v) != string(store.AppendUint64(nil, conversation.LayoutVersion)) {
			t.Errorf("conv/layout version = %x; want %d", v, conversation.LayoutVersion)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	put("conv/layout", "version", store.AppendUint64(nil, conversation.LayoutVersion+1))
	if _, err := gateway.New(gateway.WithStore(st), gateway.WithTokenCatalog(tokens)); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("New over a newer layout = %v; want an error naming it", err)
	}
}

// TestAnswersVaryByIdentity: every authenticated answer, the cacheable model
// list and the errors included, says that it depends on who calls, so that
// a browser does not serve one token's answer to another; public ones do not.
func TestAnswersVaryByIdentity(t *testing.T) {
	e := newEnv(t)
	const want = "Authorization, X-Api-Key, GW-Tenant-Id, GW-User-Id"
	for _, tc := range []struct {
		name string
		c    call
		vary string
	}{
		{"model list", call{method: "GET", path: "/v1/models", token: "admin"}, want},
		{"conversations", call{method: "GET", path: "/c1/conversations", token: "member", user: "u1"}, want},
		{"bad token", call{method: "GET", path: "/v1/models", token: "nope"}, want},
		{"x-api-key", call{method: "GET", path: "/v1/models", header: http.Header{"X-Api-Key": {"admin"}}}, want},
		{"a message", call{method: "POST", path: "/v1/messages", token: "member", body: `{"model":"lm-4-scout","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`}, want},
		{"health", call{method: "GET", path: "/healthz"}, ""},
	} {
		resp, body := e.do(t, tc.c)
		if got := strings.Join(resp.Header.Values("Vary"), ", "); got != tc.vary {
			t.Errorf("%s: Vary %q, want %q (%d %s)", tc.name, got, tc.vary, resp.StatusCode, body)
		}
	}
}

// TestIndexNegotiates: / is the landing page for a browser and the JSON
// index for any other client, both linking the playground and the API
// reference.
func TestIndexNegotiates(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		accept, wantType string
		wantLinks        []string
	}{
		{"text/html,application/xhtml+xml,*/*;q=0.8", "text/html; charset=utf-8", []string{`href="./playground"`, `href="./redoc"`, `href="./docs/errors"`, `href="./readyz"`}},
		{"*/*", "application/json", []string{`"playground":"/playground"`, `"api_reference":"/redoc"`}},
	} {
		resp, body := e.do(t, call{method: "GET", path: "/", header: http.Header{"Accept": {tc.accept}}})
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.wantType || resp.Header.Get("Vary") != "Accept" {
			t.Errorf("Accept %s: %d %s Vary %q, want 200 %s Vary Accept", tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Vary"), tc.wantType)
		}
		for _, l := range tc.wantLinks {
			if !strings.Contains(string(body), l) {
				t.Errorf("Accept %s: the answer lacks %s", tc.accept, l)
			}
		}
	}
}

// TestC1ReadsAhead checks that a /c1 turn names its reads ahead: on a store
// that reads ahead (pgstore) every read of its read transaction then comes
// in one round trip, but for those that depend on what was read (a stored
// prompt's current version, the entries of a memory bucket that has some);
// and that its Append assumes the conversation's record the read saw
// (store.Assumer) rather than reading it again.
func TestC1ReadsAhead(t *testing.T) {
	ra := &testkit.ReadAhead{Store: memstore.New()}
	e := newEnv(t, gateway.WithStore(ra))
	turn := call{method: "POST", path: "/c1/chat", token: "member", user: "u1", body: `{"message":"hi","stream":false,"conversation_id":"c1"}`}
	steps := []struct {
		name   string
		before []call
		want   []string
	}{
		{name: "a new conversation"},
		{name: "a continued conversation"},
		{name: "with a tenant prompt and a memory entry", before: []call{
			{method: "PUT", path: "/v1/system-prompts/tenant", token: "admin", user: "u1", body: `{"content":"Be kind."}`},
			{method: "POST", path: "/v1/memory", token: "member", user: "u1", body: `{"key":"name","value":"Alice","visibility":"private"}`},
		}, want: []string{"get mem/prompts", "scan mem/entries"}},
	}
	// The families whose background work (image expiry, usage purge, runs'
	// recovery) shares the store: their reads are not the turn's.
	background := map[string]bool{"img": true, "usage": true, "runs": true}
	for _, s := range steps {
		for _, c := range s.before {
			if resp, b := e.do(t, c); resp.StatusCode != 200 {
				t.Fatalf("%s %s: %d %s", c.method, c.path, resp.StatusCode, b)
			}
		}
		ra.Missed()
		if resp, b := e.do(t, turn); resp.StatusCode != 200 {
			t.Fatalf("%s: /c1/chat: %d %s", s.name, resp.StatusCode, b)
		}
		var got []string
		for _, m := range ra.Missed() {
			op, bucket, _ := strings.Cut(m, " ")
			bucket, _, _ = strings.Cut(bucket, " ")
			if family, _, _ := strings.Cut(bucket, "/"); background[family] {
				continue
			}
			got = append(got, op+" "+bucket)
		}
		slices.Sort(got)
		got = slices.Compact(got) // memstore runs a View's fn twice
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s: reads not named ahead (-want +got):\n%s", s.name, diff)
		}
	}
}
