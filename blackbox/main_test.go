// Package blackbox_test runs the built gatewayd binary as a subprocess against
// recording fake upstreams and checks it against the interface spec
// (/work/shared/spec/interface.md) and the product decisions
// (/work/shared/DECISIONS.md). Every test states one rule of those documents.
package blackbox_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

var gatewayBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "blackbox-gatewayd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	gatewayBin = filepath.Join(dir, "gatewayd")
	cmd := exec.Command("go", "build", "-o", gatewayBin, "github.com/chatgw/gateway/cmd/gatewayd")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building gatewayd:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// ---------------------------------------------------------------------------
// Tokens

const (
	tokAdmin     = "tok-acme-admin"
	tokMember    = "tok-acme-member"
	tokLimited   = "tok-acme-limited" // member, extra scopes, deny chat:write
	tokRate      = "tok-acme-rate"    // member, rate 1/s burst 2
	tokSHA       = "tok-acme-sha"     // member, stored only as sha256
	tokBetaAdmin = "tok-beta-admin"
	tokBetaMem   = "tok-beta-member"
	tokNewReload = "tok-acme-reloaded"
)

func sha(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// acmeModels is tenant acme's allowlist (lm-image, lm-transcribe are left out).
var acmeModels = []string{"lm-4-scout", "lm-4-scout-local", "lm-4-scout-cloudA", "lm-4-scout-cloudB",
	"lm-vision", "lm-text-8k", "lm-reasoner", "lm-embed"}

func defaultTokens() map[string]any {
	return map[string]any{
		"tenants": []any{
			map[string]any{
				"id":          "acme",
				"models":      acmeModels,
				"settings":    map[string]any{"c1_cloud_doc_consent": true},
				"config_caps": map[string]any{"image_gen_rate_per_hour": 500},
				"quotas":      map[string]any{"lm-4-scout-cloudB": map[string]any{"tokens_per_day": 100000, "requests_per_day": 500}},
			},
			map[string]any{"id": "beta"},
		},
		"tokens": []any{
			map[string]any{"token": tokAdmin, "tenant": "acme", "role": "tenant_admin"},
			map[string]any{"token": tokMember, "tenant": "acme", "role": "member"},
			map[string]any{"token": tokLimited, "tenant": "acme", "role": "member",
				"scopes": []string{"tenant_config:write", "system_prompts:write:scope"},
				"deny":   []string{"chat:write", "memory:read"}},
			map[string]any{"token": tokRate, "tenant": "acme", "role": "member",
				"rate": map[string]any{"per_second": 1, "burst": 2}},
			map[string]any{"sha256": sha(tokSHA), "tenant": "acme", "role": "member"},
			map[string]any{"token": tokBetaAdmin, "tenant": "beta", "role": "tenant_admin"},
			map[string]any{"token": tokBetaMem, "tenant": "beta", "role": "member"},
		},
	}
}

// ---------------------------------------------------------------------------
// gatewayd process

type gwOpts struct {
	tokens   any    // marshalled to the token file; nil: defaultTokens()
	rawTok   string // raw token file content (wins over tokens)
	local    string // GATEWAY_LOCAL_URL; "" means a refused URL
	localSet bool   // local given explicitly (even empty)
	cloudA   string
	cloudB   string
	env      map[string]string
	args     []string
	dataDir  string
}

type gw struct {
	t       *testing.T
	URL     string
	addr    string
	cmd     *exec.Cmd
	stderr  *syncBuf
	opts    gwOpts
	tokFile string
	done    chan struct{}
	exitErr error
	stopped bool
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuf) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

func writeTokens(t *testing.T, path string, o gwOpts) {
	t.Helper()
	data := []byte(o.rawTok)
	if o.rawTok == "" {
		v := o.tokens
		if v == nil {
			v = defaultTokens()
		}
		var err error
		data, err = json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// command prepares a gatewayd process without starting it.
func command(t *testing.T, o *gwOpts) (*exec.Cmd, string, string) {
	t.Helper()
	if o.dataDir == "" {
		o.dataDir = t.TempDir()
	}
	tokFile := filepath.Join(t.TempDir(), "tokens.json")
	writeTokens(t, tokFile, *o)
	addr := freeAddr(t)
	local := o.local
	if local == "" && !o.localSet {
		local = upstreamtest.RefusedURL(t)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"GATEWAY_ADDR=" + addr,
		"GATEWAY_DATA_DIR=" + o.dataDir,
		"GATEWAY_TOKENS_FILE=" + tokFile,
		"GATEWAY_LOCAL_URL=" + local,
		"GATEWAY_RATE_PER_SECOND=200",
		"GATEWAY_RATE_BURST=1000",
	}
	if o.cloudA != "" {
		env = append(env, "GATEWAY_CLOUDA_URL="+o.cloudA)
	}
	if o.cloudB != "" {
		env = append(env, "GATEWAY_CLOUDB_URL="+o.cloudB)
	}
	for k, v := range o.env {
		env = append(env, k+"="+v)
	}
	cmd := exec.Command(gatewayBin, o.args...)
	cmd.Env = env
	return cmd, addr, tokFile
}

// startGW starts gatewayd and waits for /healthz; it is stopped with SIGTERM at
// cleanup, and must exit 0.
func startGW(t *testing.T, o gwOpts) *gw {
	t.Helper()
	cmd, addr, tokFile := command(t, &o)
	g := &gw{t: t, URL: "http://" + addr, addr: addr, cmd: cmd, stderr: &syncBuf{}, opts: o, tokFile: tokFile, done: make(chan struct{})}
	cmd.Stderr = g.stderr
	cmd.Stdout = g.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.exitErr = cmd.Wait(); close(g.done) }()
	t.Cleanup(func() { g.stop() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-g.done:
			t.Fatalf("gatewayd exited early: %v\n%s", g.exitErr, g.stderr.String())
		default:
		}
		resp, err := http.Get(g.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return g
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gatewayd not healthy after 10s\n%s", g.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and checks a clean exit (status 0) within 10 s.
func (g *gw) stop() {
	if g.stopped {
		return
	}
	g.stopped = true
	g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
		if g.exitErr != nil {
			g.t.Errorf("gatewayd did not exit 0 on SIGTERM: %v\n%s", g.exitErr, tail(g.stderr.String(), 2000))
		}
	case <-time.After(10 * time.Second):
		g.cmd.Process.Kill()
		<-g.done
		g.t.Errorf("gatewayd did not exit within 10s of SIGTERM")
	}
}

// restart stops g and starts a new gatewayd on the same data dir and options.
func (g *gw) restart() *gw {
	g.t.Helper()
	g.stop()
	return startGW(g.t, g.opts)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// ---------------------------------------------------------------------------
// HTTP

type resp struct {
	Status int
	Header http.Header
	Body   []byte
	JSON   map[string]any
}

var client = &http.Client{Timeout: 30 * time.Second}

// req is one request: hdr holds extra headers ("Authorization" set from token
// unless hdr sets it); body is marshalled unless it is a string or []byte.
type req struct {
	method, path, token string
	hdr                 map[string]string
	body                any
}

func (g *gw) do(t *testing.T, r req) *resp {
	t.Helper()
	var rd io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	hr, err := http.NewRequest(r.method, g.URL+r.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.hdr {
		hr.Header.Set(k, v)
	}
	hresp, err := client.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer hresp.Body.Close()
	body, _ := io.ReadAll(hresp.Body)
	out := &resp{Status: hresp.StatusCode, Header: hresp.Header, Body: body}
	if strings.HasPrefix(hresp.Header.Get("Content-Type"), "application/json") {
		json.Unmarshal(body, &out.JSON)
	}
	return out
}

func (g *gw) get(t *testing.T, path, token string, hdr map[string]string) *resp {
	t.Helper()
	return g.do(t, req{method: "GET", path: path, token: token, hdr: hdr})
}

func (g *gw) post(t *testing.T, path, token string, hdr map[string]string, body any) *resp {
	t.Helper()
	return g.do(t, req{method: "POST", path: path, token: token, hdr: hdr, body: body})
}

func user(u string) map[string]string { return map[string]string{"GW-User-Id": u} }

// anyParam means the error's param is not checked; noParam means it must be null or absent.
const (
	anyParam = "\x00any"
	noParam  = ""
)

// wantErr checks status, envelope and the common headers of an error answer.
func wantErr(t *testing.T, what string, r *resp, status int, typ, code, param string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: status %d, want %d; body %s", what, r.Status, status, trunc(r.Body))
		return
	}
	checkJSONCT(t, what, r)
	checkReqID(t, what, r)
	e, _ := r.JSON["error"].(map[string]any)
	if e == nil {
		t.Errorf("%s: no error envelope: %s", what, trunc(r.Body))
		return
	}
	if got, _ := e["type"].(string); got != typ {
		t.Errorf("%s: error.type %q, want %q; body %s", what, got, typ, trunc(r.Body))
	}
	if got, _ := e["code"].(string); got != code {
		t.Errorf("%s: error.code %q, want %q; body %s", what, got, code, trunc(r.Body))
	}
	if _, ok := e["message"].(string); !ok {
		t.Errorf("%s: error.message missing: %s", what, trunc(r.Body))
	}
	if param != anyParam {
		got, _ := e["param"].(string)
		if got != param {
			t.Errorf("%s: error.param %v, want %q; body %s", what, e["param"], param, trunc(r.Body))
		}
	}
	if gc, ok := r.JSON["gw_code"]; ok && gc != code {
		t.Errorf("%s: gw_code %v, want %q", what, gc, code)
	}
}

func wantStatus(t *testing.T, what string, r *resp, status int) bool {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: status %d, want %d; body %s", what, r.Status, status, trunc(r.Body))
		return false
	}
	return true
}

func checkJSONCT(t *testing.T, what string, r *resp) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json (DECISIONS 8.30)", what, ct)
	}
}

func checkReqID(t *testing.T, what string, r *resp) {
	t.Helper()
	if r.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s: no x-request-id header (DECISIONS 5)", what)
	}
}

func trunc(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}

// ---------------------------------------------------------------------------
// SSE

type sseEvent struct {
	Event string
	Data  string
}

func parseSSE(body []byte) []sseEvent {
	var out []sseEvent
	var cur sseEvent
	var data []string
	has := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if has {
				cur.Data = strings.Join(data, "\n")
				out = append(out, cur)
			}
			cur, data, has = sseEvent{}, nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "event":
			cur.Event = v
			has = true
		case "data":
			data = append(data, v)
			has = true
		}
	}
	if has {
		cur.Data = strings.Join(data, "\n")
		out = append(out, cur)
	}
	return out
}

// ---------------------------------------------------------------------------
// fakes

// chatCalls are the fake's POST /chat/completions calls.
func chatCalls(s *upstreamtest.Server) []upstreamtest.Call {
	var out []upstreamtest.Call
	for _, c := range s.Calls() {
		if c.Method == "POST" && strings.HasSuffix(c.Path, "/chat/completions") {
			out = append(out, c)
		}
	}
	return out
}

// upstreamMessages decodes the messages of a recorded chat call.
func upstreamMessages(t *testing.T, c upstreamtest.Call) []map[string]any {
	t.Helper()
	var b struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(c.Body, &b); err != nil {
		t.Fatalf("upstream body: %v: %s", err, c.Body)
	}
	return b.Messages
}

func bodyMap(t *testing.T, c upstreamtest.Call) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.Body, &m); err != nil {
		t.Fatalf("upstream body: %v", err)
	}
	return m
}

func chatBody(model string, extra ...any) map[string]any {
	m := map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": "Hello"}}}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}
