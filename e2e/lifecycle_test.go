package e2e_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

func TestRestartPersistence(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	must := func(r *resp) *resp {
		t.Helper()
		if r.Status < 200 || r.Status > 299 {
			t.Fatalf("setup: %s", r)
		}
		return r
	}
	r := must(c1(t, g, tokMember, "alice", map[string]any{"message": "remember me", "stream": false, "model": "lm-4-scout-local", "system_prompt": "SYS"}))
	id := convID(t, r)
	must(c1(t, g, tokMember, "alice", map[string]any{"message": "second", "stream": false, "model": "lm-4-scout-local", "conversation_id": id}))
	must(g.post(t, "/v1/memory", tokMember, "alice", map[string]any{"key": "k", "value": "persisted", "visibility": "private"}))
	must(g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "alice", map[string]any{"content": "v1"}, nil))
	must(g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "alice", map[string]any{"content": "v2"}, nil))
	must(g.do(t, "PUT", "/v1/tenant/config", tokAdmin, "", map[string]any{"key": "compact_keep_last_n", "value": 42}, nil))
	img := listData(must(g.post(t, "/v1/images/generations", tokAdmin, "", map[string]any{"model": "lm-image", "prompt": "cat"})))
	doc := map[string]any{"kind": "document", "doc_name": "keep.txt", "content": "persisted grant doc"}
	consent := chatBody("lm-4-scout-cloudA", "read it")
	consent["attachments"] = []any{doc}
	must(g.do(t, "POST", "/v1/chat/completions", tokAdmin, "alice", consent, H{"GW-Cloud-Consent": "sha256:" + sha256Hex("persisted grant doc") + ";persist"}))
	// a streamed turn right before the stop
	must(c1(t, g, tokMember, "alice", map[string]any{"message": "third streamed", "model": "lm-4-scout-local", "conversation_id": id}))
	_, before := history(t, g, tokMember, "alice", id)

	g.Restart()

	hr, after := history(t, g, tokMember, "alice", id)
	if !wantStatus(t, hr, 200, "issue 5 item 6 / DECISIONS 2: a restart loses nothing") || mustJSON(after) != mustJSON(before) || len(nonSystem(after)) != 6 {
		t.Errorf("history after restart %v, want %v", roles(after), roles(before))
	}
	if d := listData(g.get(t, "/c1/conversations", tokMember, "alice")); len(d) != 1 || d[0]["message_count"] != float64(len(before)) {
		t.Errorf("list after restart %v", d)
	}
	found := false
	for _, e := range listData(g.get(t, "/v1/memory?visibility=private", tokMember, "alice")) {
		found = found || e["value"] == "persisted"
	}
	if !found {
		t.Errorf("memory entry lost across restart")
	}
	if v := versions(t, g, tokMember, "alice", "user"); mustJSON(v) != mustJSON(map[int]bool{1: false, 2: true}) {
		t.Errorf("prompt versions after restart %v, want 1 and 2 (current)", v)
	}
	cfg := g.get(t, "/v1/tenant/config", tokAdmin, "").JSON()
	if ks, _ := cfg["keys"].(map[string]any); ks == nil || ks["compact_keep_last_n"].(map[string]any)["value"] != 42.0 {
		t.Errorf("tenant config after restart: %v", cfg["keys"])
	}
	if len(img) == 1 {
		wantStatus(t, g.get(t, "/v1/images/"+str(img[0]["id"]), tokAdmin, ""), 200, "image survives restart")
	}
	wantStatus(t, g.post(t, "/v1/chat/completions", tokMember, "bob", consent), 200, "spec Errors rule 1: ;persist stores a permanent grant (survives a restart)")
	wantStatus(t, c1(t, g, tokMember, "alice", map[string]any{"message": "after restart", "stream": false, "model": "lm-4-scout-local", "conversation_id": id}), 200, "a turn after the restart")
	// a new version number continues after the restart
	must(g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "alice", map[string]any{"content": "v3"}, nil))
	if v := versions(t, g, tokMember, "alice", "user"); !v[3] {
		t.Errorf("version after restart %v, want 3 current", v)
	}
}

// flight is the outcome of a request sent in the background.
type flight struct {
	r   *resp
	err error
}

// inFlight posts body (as JSON) to path in the background.
func inFlight(g *gw, path, token, user string, body any) <-chan flight {
	done := make(chan flight, 1)
	go func() {
		req, _ := http.NewRequest("POST", g.Base+path, strings.NewReader(mustJSON(body)))
		req.Header.Set("Authorization", "Bearer "+token)
		if user != "" {
			req.Header.Set("GW-User-Id", user)
		}
		res, err := client.Do(req)
		if err != nil {
			done <- flight{err: err}
			return
		}
		defer res.Body.Close()
		data, err := io.ReadAll(res.Body)
		done <- flight{r: &resp{Status: res.StatusCode, Header: res.Header, Body: data, req: "POST " + path}, err: err}
	}()
	return done
}

func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	t.Run("in-flight stream completes", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) {
			s.Local.Reply = upstreamtest.Reply{Chunks: 5, Interval: 150 * time.Millisecond, Content: "slow stream of words"}
		})
		b := chatBody("lm-4-scout-local", "SECRET-CONTENT-XYZZY")
		b["stream"] = true
		done := inFlight(g, "/v1/chat/completions", tokAdmin, "", b)
		if err := g.Local.AwaitCalls(ctxTimeout(t, 5*time.Second), 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		g.Stop() // SIGTERM while the stream is in flight; must exit 0
		res := <-done
		if res.err != nil {
			t.Fatalf("in-flight stream broken by SIGTERM: %v (DECISIONS 2: in-flight requests finish)", res.err)
		}
		evs := testkit.ParseSSE(t, string(res.r.Body))
		if len(evs) == 0 || evs[len(evs)-1].Data != "[DONE]" || testkit.Content(t, evs) != "slow stream of words" {
			t.Errorf("in-flight stream after SIGTERM: %s, want it complete with [DONE] (DECISIONS 2)", truncate(string(res.r.Body), 300))
		}
		logs := g.stderr.String()
		for _, secret := range []string{tokAdmin, "SECRET-CONTENT-XYZZY", "sk-clouda-secret-key"} {
			if strings.Contains(logs, secret) {
				t.Errorf("gatewayd's log contains %q (issue 2 item 9: tokens and message contents never appear in logs)", secret)
			}
		}
		if !strings.Contains(logs, `"status":200`) && !strings.Contains(logs, `"status": 200`) {
			t.Errorf("no JSON request log line with the status (issue 2 item 9)")
		}
	})
	t.Run("in-flight c1 turn is stored", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.Local.Reply = upstreamtest.Reply{Latency: 800 * time.Millisecond} })
		done := inFlight(g, "/c1/chat", tokMember, "s1", map[string]any{"message": "slow", "stream": false, "model": "lm-4-scout-local"})
		time.Sleep(300 * time.Millisecond)
		g.Stop() // SIGTERM while the turn is in flight; must exit 0
		res := <-done
		if res.err != nil || res.r.Status != 200 {
			t.Fatalf("in-flight /c1 turn during SIGTERM: %v %v, want 200 (DECISIONS 2: in-flight requests finish)", res.err, res.r)
		}
		id := res.r.Header.Get("gw-conversation-id")
		g.Restart()
		if hr, msgs := history(t, g, tokMember, "s1", id); hr.Status != 200 || len(msgs) != 2 {
			t.Errorf("%s\n  a turn finished during shutdown is not stored: %d messages, want 2 (DECISIONS 2)", hr, len(msgs))
		}
	})
}

func TestBadTokenFileRefusesToStart(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file string
		line       int
	}{
		{"unknown field", "{\n  \"tenants\": [{\"id\": \"acme\"}],\n  \"tokens\": [\n    {\"token\": \"a\", \"tenant\": \"acme\", \"colour\": \"red\"}\n  ]\n}\n", 4},
		{"unknown tenant", "{\n  \"tenants\": [{\"id\": \"acme\"}],\n  \"tokens\": [\n    {\"token\": \"a\", \"tenant\": \"acme\"},\n    {\"token\": \"b\", \"tenant\": \"ghost\"}\n  ]\n}\n", 5},
		{"duplicate token", "{\n  \"tenants\": [{\"id\": \"acme\"}],\n  \"tokens\": [\n    {\"token\": \"a\", \"tenant\": \"acme\"},\n    {\"token\": \"b\", \"tenant\": \"acme\"},\n    {\"token\": \"a\", \"tenant\": \"acme\"}\n  ]\n}\n", 6},
		{"duplicate via sha256", "{\n  \"tenants\": [{\"id\": \"acme\"}],\n  \"tokens\": [\n    {\"token\": \"a\", \"tenant\": \"acme\"},\n    {\"sha256\": \"" + sha256Hex("a") + "\", \"tenant\": \"acme\"}\n  ]\n}\n", 5},
		{"unknown tenant field", "{\n  \"tenants\": [\n    {\"id\": \"acme\", \"moodels\": []}\n  ],\n  \"tokens\": []\n}\n", 3},
		{"invalid json", "{\n  \"tenants\": [\n    {\"id\": \"acme\",}\n  ]\n}\n", 3},
		{"unknown field of the second token", "{\n  \"tenants\": [{\"id\": \"acme\"}],\n  \"tokens\": [\n    {\"token\": \"a\", \"tenant\": \"acme\"},\n    {\"token\": \"b\", \"tenant\": \"acme\", \"colour\": \"red\"}\n  ]\n}\n", 5},
		{"unknown tenant field on its own line", "{\n  \"tenants\": [\n    {\"id\": \"acme\",\n     \"modles\": [\"lm-4-scout\"]}\n  ],\n  \"tokens\": []\n}\n", 4},
		{"both token and sha256", "{\n  \"tenants\": [{\"id\": \"acme\"}],\n  \"tokens\": [\n    {\"token\": \"a\", \"tenant\": \"acme\"},\n    {\"token\": \"b\", \"sha256\": \"" + sha256Hex("b") + "\", \"tenant\": \"acme\"}\n  ]\n}\n", 5},
		{"neither token nor sha256", "{\n  \"tenants\": [{\"id\": \"acme\"}],\n  \"tokens\": [\n    {\"tenant\": \"acme\", \"role\": \"member\"}\n  ]\n}\n", 4},
		{"invalid json in a token", "{\n  \"tenants\": [{\"id\": \"acme\"}],\n  \"tokens\": [\n    {\"token\": \"a\", \"tenant\": \"acme\",}\n  ]\n}\n", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "tokens.json")
			writeFile(t, path, c.file)
			code, out := runToExit(t, map[string]string{"GATEWAY_TOKENS_FILE": path, "GATEWAY_LOCAL_URL": ""})
			if code <= 0 {
				t.Errorf("gatewayd with a bad token file (%s): exit %d, want a refusal to start (DECISIONS 3)\n%s", c.name, code, tail(out, 500))
				return
			}
			l := strconv.Itoa(c.line)
			if !strings.Contains(out, "tokens.json:"+l) && !regexp.MustCompile(`line[ :]+`+l+`\b`).MatchString(out) {
				t.Errorf("refusal for %s does not name line %d (DECISIONS 3: names the line):\n%s", c.name, c.line, tail(out, 500))
			}
		})
	}
	t.Run("no token file", func(t *testing.T) {
		t.Parallel()
		code, out := runToExit(t, map[string]string{"GATEWAY_LOCAL_URL": ""})
		if code <= 0 {
			t.Errorf("gatewayd without GATEWAY_TOKENS_FILE: exit %d, want a refusal (DECISIONS 2)\n%s", code, tail(out, 300))
		}
	})
	t.Run("missing token file", func(t *testing.T) {
		t.Parallel()
		code, out := runToExit(t, map[string]string{"GATEWAY_LOCAL_URL": "", "GATEWAY_TOKENS_FILE": filepath.Join(t.TempDir(), "absent.json")})
		if code <= 0 {
			t.Errorf("gatewayd with an absent token file: exit %d, want a refusal\n%s", code, tail(out, 300))
		}
	})
	t.Run("flag wins over env", func(t *testing.T) {
		t.Parallel()
		good := filepath.Join(t.TempDir(), "good.json")
		writeFile(t, good, defaultTokens())
		bad := filepath.Join(t.TempDir(), "bad.json")
		writeFile(t, bad, "{")
		code, _ := runToExit(t, map[string]string{"GATEWAY_TOKENS_FILE": good, "GATEWAY_LOCAL_URL": ""}, "-tokens-file", bad)
		if code <= 0 {
			t.Errorf("-tokens-file <bad> with GATEWAY_TOKENS_FILE=<good>: exit %d, want a refusal (DECISIONS 2: a flag wins over the variable)", code)
		}
	})
}

func TestDevMode(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) {
		s.Tokens = noTokens
		s.Args = []string{"-dev"}
		s.LocalURL = refused(t)
		s.CloudAURL, s.CloudBURL = unset, unset
	})
	out := g.stderr.String()
	token := ""
	for _, w := range regexp.MustCompile(`[A-Za-z0-9_\-\.]{16,}`).FindAllString(out, -1) {
		if strings.Contains(w, "127.0.0.1") {
			continue
		}
		if g.get(t, "/v1/models", w, "").Status == 200 {
			token = w
			break
		}
	}
	if token == "" {
		t.Fatalf("gatewayd -dev printed no working token on stderr (DECISIONS 2):\n%s", tail(out, 1000))
	}
	if n := strings.Count(out, token); n != 1 {
		t.Errorf("gatewayd -dev printed its token %d times, want once (DECISIONS 2)", n)
	}
	if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(token) + `\s*$`).MatchString(out) {
		t.Errorf("gatewayd -dev does not print its token alone on an indented line (DECISIONS 2):\n%s", tail(out, 1000))
	}
	if !strings.Contains(out, "/playground") {
		t.Errorf("gatewayd -dev does not print the /playground URL (DECISIONS 2)")
	}
	if !strings.Contains(out, strings.TrimPrefix(g.Base, "http://")) {
		t.Errorf("gatewayd -dev does not print the address it serves (DECISIONS 2)")
	}
	// the token is a tenant admin of tenant dev
	r := g.do(t, "GET", "/v1/tenant/config", token, "", nil, H{"GW-Tenant-Id": "dev"})
	if wantStatus(t, r, 200, "DECISIONS 2: tenant-admin token for tenant dev") && r.JSON()["tenant_id"] != "dev" {
		t.Errorf("-dev token's tenant config names tenant %v, want dev (DECISIONS 2)", r.JSON()["tenant_id"])
	}
	wantStatus(t, g.do(t, "PUT", "/v1/tenant/config", token, "", map[string]any{"key": "compact_keep_last_n", "value": 5}, nil), 200, "DECISIONS 2: tenant_admin")
	r = g.post(t, "/v1/chat/completions", token, "", chatBody("lm-4-scout", "Hello"))
	if wantStatus(t, r, 200, "DECISIONS 2: demo backend answers when no backend answers") {
		ch := listOf(r.JSON()["choices"])
		var msg map[string]any
		if len(ch) > 0 {
			msg, _ = ch[0]["message"].(map[string]any)
		}
		if textOf(msg) == "" {
			t.Errorf("demo answer %s: want a non-empty message content", truncate(string(r.Body), 300))
		}
		if len(ch) == 0 || !strings.Contains(strings.ToLower(mustJSON(ch[0])), "demo") {
			t.Errorf("demo answer %s, want an answer that says it is the demo backend (README)", truncate(string(r.Body), 300))
		}
	}
	sb := chatBody("lm-4-scout", "Hello stream")
	sb["stream"] = true
	r = g.post(t, "/v1/chat/completions", token, "", sb)
	if evs := testkit.ParseSSE(t, string(r.Body)); r.Status != 200 || len(evs) == 0 || evs[len(evs)-1].Data != "[DONE]" || testkit.Content(t, evs) == "" {
		t.Errorf("demo stream: %s", truncate(string(r.Body), 300))
	}
	r = c1(t, g, token, "newcomer", map[string]any{"message": "hi", "stream": false})
	wantStatus(t, r, 200, "demo backend on /c1")
	if info := g.get(t, "/v1/info", token, ""); !strings.Contains(strings.ToLower(str(info.JSON()["notes"])), "demo") {
		t.Errorf("/v1/info notes %q do not label the demo backend (issue 3 item 9)", str(info.JSON()["notes"]))
	}
}

func TestNoDemoOutsideDev(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) { s.LocalURL = refused(t); s.CloudAURL, s.CloudBURL = unset, unset })
	wantErr(t, g.post(t, "/v1/chat/completions", tokAdmin, "", chatBody("lm-4-scout", "hi")), 503, "overloaded_error", "upstream_unavailable", anyParam,
		"issue 3 item 9: outside -dev the demo never answers in place of a real backend")
}

func TestFlagsAndSIGINT(t *testing.T) {
	t.Parallel()
	flagDir := t.TempDir()
	g := start(t, func(s *setup) {
		s.Env["GATEWAY_BODY_LIMIT_BYTES"] = "1000000"
		s.Args = []string{"-body-limit-bytes", "512", "-rate-burst", "100000", "-data-dir", flagDir}
	})
	r := g.post(t, "/v1/chat/completions", tokAdmin, "", chatBody("lm-4-scout", strings.Repeat("x", 1000)))
	wantErr(t, r, 413, "request_too_large", "body_too_large", anyParam, "DECISIONS 2: -body-limit-bytes flag wins over GATEWAY_BODY_LIMIT_BYTES")
	wantStatus(t, c1(t, g, tokMember, "f", map[string]any{"message": "x", "stream": false}), 200, "a stored turn")
	g.stopSignal(syscall.SIGINT) // must exit 0 (DECISIONS 2)
	if _, err := os.Stat(filepath.Join(flagDir, "gateway.db")); err != nil {
		t.Errorf("-data-dir flag did not win over GATEWAY_DATA_DIR (DECISIONS 2): %v", err)
	}
	if _, err := os.Stat(filepath.Join(g.DataDir, "gateway.db")); err == nil {
		t.Errorf("GATEWAY_DATA_DIR used although -data-dir was given (DECISIONS 2: a flag wins over the variable)")
	}
}

// TestHelpAndBadEnvironment: `gatewayd -h` (and -help, --help) prints the
// usage and exits 0; a bad environment value stops start-up with exit 1 and
// an error naming the variable, not the Go field behind it (issue 16 item 8).
func TestHelpAndBadEnvironment(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		code, out := runToExit(t, map[string]string{"GATEWAY_CLOUDA_API_KEY": "sk-e2e-secret"}, arg)
		if code != 0 || !strings.Contains(out, "Usage: gatewayd") || !strings.Contains(out, "-rate-per-second") {
			t.Errorf("gatewayd %s: exit %d, want 0 and the usage:\n%s", arg, code, tail(out, 20))
		}
		if strings.Contains(out, "sk-e2e-secret") {
			t.Errorf("gatewayd %s prints the value of GATEWAY_CLOUDA_API_KEY", arg)
		}
	}
	for name, value := range map[string]string{
		"GATEWAY_RATE_PER_SECOND":  "fast",
		"GATEWAY_BODY_LIMIT_BYTES": "32MB",
		"GATEWAY_UPSTREAM_TIMEOUT": "600",
	} {
		code, out := runToExit(t, map[string]string{name: value})
		if code != 1 || !strings.Contains(out, name+": ") {
			t.Errorf("%s=%q: exit %d, want 1 and an error naming %s:\n%s", name, value, code, name, tail(out, 10))
		}
	}
}
