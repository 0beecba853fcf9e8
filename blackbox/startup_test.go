package blackbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// Group 5: gatewayd start-up.

// runBad runs gatewayd with a token file and expects it to refuse to start.
func runBad(t *testing.T, content string, env ...string) string {
	t.Helper()
	dir := t.TempDir()
	tf := filepath.Join(dir, "tokens.json")
	os.WriteFile(tf, []byte(content), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, gatewayBin)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "GATEWAY_ADDR=" + freeAddr(t), "GATEWAY_DATA_DIR=" + dir,
		"GATEWAY_TOKENS_FILE=" + tf, "GATEWAY_LOCAL_URL=" + upstreamtest.RefusedURL(t)}, env...)
	var out bytes.Buffer
	cmd.Stderr, cmd.Stdout = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Errorf("gatewayd still running 3s after start with a bad configuration (token file below, env %v):\n%s", env, content)
		return out.String()
	}
	if err == nil {
		t.Errorf("gatewayd exited 0 with a bad configuration")
	}
	return out.String()
}

func TestStartupBadTokenFile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file string
		line       int
	}{
		{"unknown token field", `{
  "tenants": [{"id": "acme"}],
  "tokens": [
    {"token": "a", "tenant": "acme"},
    {"token": "b", "tenant": "acme", "colour": "red"}
  ]
}`, 5},
		{"unknown tenant", `{
  "tenants": [{"id": "acme"}],
  "tokens": [
    {"token": "a", "tenant": "acme"},
    {"token": "b", "tenant": "nosuch"}
  ]
}`, 5},
		{"duplicate token", `{
  "tenants": [{"id": "acme"}],
  "tokens": [
    {"token": "a", "tenant": "acme"},
    {"token": "b", "tenant": "acme"},
    {"token": "a", "tenant": "acme"}
  ]
}`, 6},
		{"duplicate token via sha256", `{
  "tenants": [{"id": "acme"}],
  "tokens": [
    {"token": "a", "tenant": "acme"},
    {"sha256": "` + sha("a") + `", "tenant": "acme"}
  ]
}`, 5},
		{"unknown tenant field", `{
  "tenants": [
    {"id": "acme",
     "modles": ["lm-4-scout"]}
  ],
  "tokens": []
}`, 4},
		{"invalid json", `{
  "tenants": [{"id": "acme"}],
  "tokens": [
    {"token": "a", "tenant": "acme",}
  ]
}`, 4},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := runBad(t, c.file)
			re := regexp.MustCompile(`(:|line )` + regexp.QuoteMeta(itoa(c.line)) + `\b`)
			if !re.MatchString(out) {
				t.Errorf("gatewayd's refusal does not name line %d:\n%s", c.line, out)
			}
		})
	}
	t.Run("no token file", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, gatewayBin)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GATEWAY_ADDR=" + freeAddr(t), "GATEWAY_DATA_DIR=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		if err == nil || ctx.Err() != nil {
			t.Errorf("gatewayd without GATEWAY_TOKENS_FILE and -dev: err %v ctx %v\n%s", err, ctx.Err(), out)
		}
	})
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestStartupDev(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	cmd := exec.Command(gatewayBin, "-dev")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GATEWAY_ADDR=" + addr, "GATEWAY_DATA_DIR=" + t.TempDir(),
		"GATEWAY_LOCAL_URL=" + upstreamtest.RefusedURL(t)}
	out := &syncBuf{}
	cmd.Stderr, cmd.Stdout = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("-dev gatewayd exit: %v", err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("-dev gatewayd did not stop on SIGTERM")
		}
	}()
	tokRE := regexp.MustCompile(`(?m)^\s+(\S{16,})\s*$`)
	var token string
	for i := 0; i < 250 && token == ""; i++ {
		if m := tokRE.FindStringSubmatch(out.String()); m != nil {
			token = m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	if token == "" {
		t.Fatalf("-dev printed no token:\n%s", out.String())
	}
	g := &gw{t: t, URL: "http://" + addr}
	for i := 0; i < 250; i++ {
		if r, err := http.Get(g.URL + "/healthz"); err == nil {
			r.Body.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Count(out.String(), token) != 1 {
		t.Errorf("dev token printed %d times, want once", strings.Count(out.String(), token))
	}
	if !strings.Contains(out.String(), "/playground") || !strings.Contains(out.String(), addr) {
		t.Errorf("-dev does not print its address and the playground URL:\n%s", out.String())
	}
	r := g.post(t, "/v1/chat/completions", token, nil, chatBody("lm-4-scout"))
	if wantStatus(t, "-dev chat (demo backend)", r, 200) {
		var cc struct {
			Choices []struct {
				Message struct{ Content string }
			}
		}
		json.Unmarshal(r.Body, &cc)
		if len(cc.Choices) == 0 || cc.Choices[0].Message.Content == "" {
			t.Errorf("-dev demo answer empty: %s", trunc(r.Body))
		}
	}
	r = g.post(t, "/v1/chat/completions", token, nil, chatBody("lm-4-scout", "stream", true))
	if wantStatus(t, "-dev streaming chat", r, 200) && !strings.Contains(string(r.Body), "data: [DONE]") {
		t.Errorf("-dev stream: %s", trunc(r.Body))
	}
	r = g.post(t, "/c1/chat", token, user("dev-user"), map[string]any{"message": "hi", "stream": false})
	wantStatus(t, "-dev /c1 chat", r, 200)
	r = g.get(t, "/v1/info", token, nil)
	if wantStatus(t, "-dev info", r, 200) && !strings.Contains(strings.ToLower(string(r.Body)), "demo") {
		t.Errorf("-dev /v1/info notes do not mention the demo backend")
	}
	r = g.get(t, "/v1/tenant/config", token, nil)
	if wantStatus(t, "-dev token is tenant_admin of dev", r, 200) && r.JSON["tenant_id"] != "dev" {
		t.Errorf("-dev tenant %v", r.JSON["tenant_id"])
	}
}

// Paths the spec names as authenticated and whose family is built must exist
// (not route_not_found). The /a1 family (agents, RAG, runs) is not built yet
// and stays unregistered until it is.
func TestSpecPathsExist(t *testing.T) {
	t.Parallel()
	g := startGW(t, gwOpts{})
	for _, p := range []struct{ m, p string }{
		{"GET", "/v1/images"},
		{"GET", "/v1/memory/usage?visibility=private"},
	} {
		r := g.do(t, req{method: p.m, path: p.p, token: tokAdmin, hdr: user("u1")})
		if r.Status == 404 {
			t.Errorf("%s %s: 404 %s; the spec names this path", p.m, p.p, trunc(r.Body))
		}
	}
}

func TestEmbeddingsLimits(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: local.URL})
	in := func(n, size int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = strings.Repeat("a", size)
		}
		return s
	}
	post := func(input any) *resp {
		return g.post(t, "/v1/embeddings", tokMember, nil, map[string]any{"model": "lm-embed", "input": input})
	}
	wantStatus(t, "256 elements of 8192 bytes", post(in(256, 8192)), 200)
	wantErr(t, "257 elements", post(in(257, 1)), 400, "invalid_request_error", "embedding_input_too_large", "input")
	wantErr(t, "8193 bytes", post(in(1, 8193)), 400, "invalid_request_error", "embedding_input_too_large", "input")
	wantErr(t, "single string 8193 bytes", post(strings.Repeat("a", 8193)), 400, "invalid_request_error", "embedding_input_too_large", "input")
	wantErr(t, "chat model", g.post(t, "/v1/embeddings", tokMember, nil, map[string]any{"model": "lm-image", "input": "x"}), 400, "invalid_request_error", "model_not_in_allowlist", "model")
}
