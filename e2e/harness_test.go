// Package e2e_test is chatgw's end-to-end suite: it builds the gatewayd binary
// once, runs it as a subprocess on 127.0.0.1 against recording fake upstreams
// (upstream/upstreamtest) and checks every rule of ../shared/spec/interface.md and
// ../shared/DECISIONS.md from the outside, as a client sees it. A failing test
// here names the spec or DECISIONS line it enforces.
package e2e_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// gatewaydBin is the gatewayd binary built by TestMain.
var gatewaydBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chatgw-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	gatewaydBin = filepath.Join(dir, "gatewayd")
	if prebuilt := os.Getenv("E2E_GATEWAYD"); prebuilt != "" {
		// run against a given binary (a release build, another revision)
		gatewaydBin = prebuilt
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	build := exec.Command("go", "build", "-o", gatewaydBin, "./cmd/gatewayd")
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: go build ./cmd/gatewayd:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Tokens of the default token file (see defaultTokens).
const (
	tokAdmin     = "acme-admin-token-0001"   // tenant_admin of acme
	tokMember    = "acme-member-token-0002"  // member of acme
	tokRestrict  = "acme-restrict-token-003" // member of acme, deny chat:write and models:read, extra tenant_config:write and system_prompts:write:scope
	tokSlow      = "acme-slow-token-0004"    // member of acme, rate 0.1/s burst 2
	tokHashed    = "acme-hashed-token-0005"  // member of acme, given as sha256 in the file
	tokNoPrompt  = "acme-noprompt-token-06"  // member of acme, deny system_prompts:write (no qualifier)
	tokGlobex    = "globex-admin-token-0007" // tenant_admin of globex (no models list: every alias)
	tokGlobexMem = "globex-member-token-008" // member of globex
	tokTiny      = "tiny-member-token-0009"  // member of tiny (models: lm-4-scout-local only)
	tokQuota     = "quota-member-token-0010" // member of quota (daily quotas)
	tokNoConsent = "plain-admin-token-0011"  // tenant_admin of plain (no c1_cloud_doc_consent)
)

// acmeModels is acme's allowlist: every catalog alias except lm-transcribe.
var acmeModels = []string{"lm-4-scout", "lm-4-scout-local", "lm-4-scout-cloudA", "lm-4-scout-cloudB",
	"lm-vision", "lm-text-8k", "lm-reasoner", "lm-embed", "lm-image"}

// allAliases is every alias of the built-in catalog (DECISIONS section 4).
var allAliases = append(append([]string{}, acmeModels...), "lm-transcribe")

func sha256Hex(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// defaultTokens is the token file most tests run with.
func defaultTokens() string {
	file := map[string]any{
		"tenants": []any{
			map[string]any{"id": "acme", "models": acmeModels,
				"settings":    map[string]any{"c1_cloud_doc_consent": true},
				"config_caps": map[string]any{"image_gen_rate_per_hour": 500}},
			map[string]any{"id": "globex"},
			map[string]any{"id": "tiny", "models": []string{"lm-4-scout-local"}},
			map[string]any{"id": "quota", "quotas": map[string]any{
				"lm-4-scout-local":  map[string]any{"requests_per_day": 2},
				"lm-4-scout-cloudB": map[string]any{"requests_per_day": 1}}},
			map[string]any{"id": "plain"},
		},
		"tokens": []any{
			map[string]any{"token": tokAdmin, "tenant": "acme", "role": "tenant_admin"},
			map[string]any{"token": tokMember, "tenant": "acme", "role": "member"},
			map[string]any{"token": tokRestrict, "tenant": "acme", "role": "member",
				"deny": []string{"chat:write", "models:read"}, "scopes": []string{"tenant_config:write", "system_prompts:write:scope"}},
			map[string]any{"token": tokSlow, "tenant": "acme", "role": "member", "rate": map[string]any{"per_second": 0.1, "burst": 2}},
			map[string]any{"sha256": sha256Hex(tokHashed), "tenant": "acme", "role": "member"},
			map[string]any{"token": tokNoPrompt, "tenant": "acme", "role": "member", "deny": []string{"system_prompts:write"}},
			map[string]any{"token": tokGlobex, "tenant": "globex", "role": "tenant_admin"},
			map[string]any{"token": tokGlobexMem, "tenant": "globex", "role": "member"},
			map[string]any{"token": tokTiny, "tenant": "tiny", "role": "member"},
			map[string]any{"token": tokQuota, "tenant": "quota", "role": "member"},
			map[string]any{"token": tokNoConsent, "tenant": "plain", "role": "tenant_admin"},
		},
	}
	b, _ := json.MarshalIndent(file, "", "  ")
	return string(b)
}

// setup says how to start one gatewayd.
type setup struct {
	Tokens  string            // token file content; "" = defaultTokens(); noTokens = no file
	Env     map[string]string // GATEWAY_* variables (defaults prefilled); a key set to unset is left out
	Args    []string          // extra flags
	DataDir string            // "" = a new temp dir
	// Backend URLs: "" = the fake's URL; unset = variable not set; any other value as is
	// (refused() gives a URL where connections are refused, "\x00empty" an empty value).
	LocalURL, CloudAURL, CloudBURL string
	// Configurations of the three fakes.
	Local, CloudA, CloudB upstreamtest.Config
}

const (
	unset    = "\x00unset"
	emptyURL = "\x00empty"
)

const noTokens = "\x00none"

// gw is one running gatewayd with its three fake upstreams.
type gw struct {
	t                     *testing.T
	Base                  string
	DataDir               string
	TokensPath            string
	Local, CloudA, CloudB *upstreamtest.Server
	cmd                   *exec.Cmd
	stderr                *syncBuffer
	exited                chan struct{}
	exitErr               error
	stopped               bool
	env                   map[string]string
	args                  []string
}

// syncBuffer collects gatewayd's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freePort returns a free loopback port.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs gatewayd for t with three fakes (local, cloudA, cloudB) and the
// default token file, after mod changes the setup. It is stopped with SIGTERM when
// t ends, and must then exit 0.
func start(t *testing.T, mod func(s *setup)) *gw {
	t.Helper()
	s := &setup{Env: map[string]string{
		"GATEWAY_RATE_PER_SECOND":    "1000",
		"GATEWAY_RATE_BURST":         "100000",
		"GATEWAY_CLOUDA_API_KEY":     "sk-clouda-secret-key",
		"GATEWAY_CLOUDB_API_KEY":     "sk-cloudb-secret-key",
		"GATEWAY_FIRST_BYTE_TIMEOUT": "10s",
	}}
	if mod != nil {
		mod(s)
	}
	g := &gw{t: t}
	g.Local = upstreamtest.New(t, upstreamtest.WithConfig(withID(s.Local, "chatcmpl-local")))
	g.CloudA = upstreamtest.New(t, upstreamtest.WithConfig(withID(s.CloudA, "chatcmpl-clouda")))
	g.CloudB = upstreamtest.New(t, upstreamtest.WithConfig(withID(s.CloudB, "chatcmpl-cloudb")))
	env := map[string]string{}
	for k, v := range s.Env {
		if v != unset {
			env[k] = v
		}
	}
	for _, b := range []struct {
		name, val string
		fake      *upstreamtest.Server
	}{{"GATEWAY_LOCAL_URL", s.LocalURL, g.Local}, {"GATEWAY_CLOUDA_URL", s.CloudAURL, g.CloudA}, {"GATEWAY_CLOUDB_URL", s.CloudBURL, g.CloudB}} {
		switch b.val {
		case "":
			env[b.name] = b.fake.URL
		case unset:
		case emptyURL:
			env[b.name] = ""
		default:
			env[b.name] = b.val
		}
	}
	g.DataDir = s.DataDir
	if g.DataDir == "" {
		g.DataDir = t.TempDir()
	}
	env["GATEWAY_DATA_DIR"] = g.DataDir
	tokens := s.Tokens
	if tokens == "" {
		tokens = defaultTokens()
	}
	if tokens != noTokens {
		g.TokensPath = filepath.Join(t.TempDir(), "tokens.json")
		if err := os.WriteFile(g.TokensPath, []byte(tokens), 0o600); err != nil {
			t.Fatal(err)
		}
		env["GATEWAY_TOKENS_FILE"] = g.TokensPath
	}
	_, fixedAddr := env["GATEWAY_ADDR"]
	for attempt := 0; ; attempt++ {
		if !fixedAddr {
			env["GATEWAY_ADDR"] = "127.0.0.1:" + strconv.Itoa(freePort(t))
		}
		g.Base = "http://" + env["GATEWAY_ADDR"]
		g.env, g.args = env, s.Args
		g.launch(env, s.Args)
		// a port taken between freePort and gatewayd's listen: try another
		if !fixedAddr && attempt < 3 && g.exitedWith("address already in use", 500*time.Millisecond) {
			continue
		}
		break
	}
	t.Cleanup(func() {
		if !g.stopped {
			g.Stop()
		}
	})
	g.waitHealthy()
	return g
}

// exitedWith reports whether gatewayd exited within d with msg on stderr.
func (g *gw) exitedWith(msg string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		select {
		case <-g.exited:
			return strings.Contains(g.stderr.String(), msg)
		default:
		}
		if resp, err := http.Get(g.Base + "/healthz"); err == nil {
			resp.Body.Close()
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// refused returns a URL on which connections are refused.
func refused(t *testing.T) string { return upstreamtest.RefusedURL(t) }

// Restart stops gatewayd (SIGTERM, exit 0) and starts it again with the same
// environment, data dir and token file.
func (g *gw) Restart() {
	g.t.Helper()
	g.Stop()
	g.stopped = false
	g.launch(g.env, g.args)
	g.waitHealthy()
}

func withID(c upstreamtest.Config, id string) upstreamtest.Config {
	if c.ID == "" {
		c.ID = id
	}
	return c
}

// launch starts the process with exactly env as its GATEWAY_* environment.
func (g *gw) launch(env map[string]string, args []string) {
	g.t.Helper()
	cmd := exec.Command(gatewaydBin, args...)
	cmd.Env = gatewayEnv(env)
	g.stderr = &syncBuffer{}
	cmd.Stderr = g.stderr
	cmd.Stdout = g.stderr
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	g.cmd = cmd
	g.exited = make(chan struct{})
	go func() {
		g.exitErr = cmd.Wait()
		close(g.exited)
	}()
}

// gatewayEnv is the test process's environment without GATEWAY_* plus env.
func gatewayEnv(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GATEWAY_") {
			out = append(out, kv)
		}
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// waitHealthy waits until /healthz answers 200 (10 s at most).
func (g *gw) waitHealthy() {
	g.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-g.exited:
			g.t.Fatalf("gatewayd exited at start: %v\nstderr:\n%s", g.exitErr, g.stderr)
		default:
		}
		resp, err := http.Get(g.Base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.t.Fatalf("gatewayd did not become healthy in 10 s\nstderr:\n%s", g.stderr)
}

// Stop sends SIGTERM and checks that gatewayd exits 0 within 10 s.
func (g *gw) Stop() {
	g.t.Helper()
	g.stopped = true
	g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(10 * time.Second):
		g.cmd.Process.Kill()
		<-g.exited
		g.t.Errorf("gatewayd did not exit within 10 s of SIGTERM (DECISIONS 2: stops cleanly on SIGTERM)\nstderr tail:\n%s", tail(g.stderr.String(), 2000))
		return
	}
	if g.exitErr != nil {
		g.t.Errorf("gatewayd exited with %v after SIGTERM, want exit 0 (DECISIONS 2)\nstderr tail:\n%s", g.exitErr, tail(g.stderr.String(), 2000))
	}
}

// Signal sends sig to gatewayd.
func (g *gw) Signal(sig os.Signal) {
	if err := g.cmd.Process.Signal(sig); err != nil {
		g.t.Fatal(err)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// ---- HTTP ----

// H is a set of request headers.
type H map[string]string

// resp is a complete answer.
type resp struct {
	Status int
	Header http.Header
	Body   []byte
	req    string // "METHOD path" for messages
}

// JSON decodes the body into a generic value (nil when it is not JSON).
func (r *resp) JSON() map[string]any {
	var m map[string]any
	json.Unmarshal(r.Body, &m)
	return m
}

func (r *resp) String() string {
	return fmt.Sprintf("%s -> %d %s", r.req, r.Status, truncate(string(r.Body), 600))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

var client = &http.Client{Timeout: 30 * time.Second}

// do sends one request. body is a string, []byte, nil, or a value sent as JSON.
// token "" sends no Authorization header; user "" no GW-User-Id.
func (g *gw) do(t *testing.T, method, path, token, user string, body any, hdr H) *resp {
	t.Helper()
	return doURL(t, client, method, g.Base+path, token, user, body, hdr)
}

func doURL(t *testing.T, c *http.Client, method, url, token, user string, body any, hdr H) *resp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
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
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if user != "" {
		req.Header.Set("GW-User-Id", user)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("%s %s: reading body: %v", method, url, err)
	}
	path := req.URL.Path
	if req.URL.RawQuery != "" {
		path += "?" + req.URL.RawQuery
	}
	return &resp{Status: res.StatusCode, Header: res.Header, Body: data, req: method + " " + path}
}

// Shorthands.
func (g *gw) get(t *testing.T, path, token, user string) *resp {
	t.Helper()
	return g.do(t, "GET", path, token, user, nil, nil)
}

func (g *gw) post(t *testing.T, path, token, user string, body any) *resp {
	t.Helper()
	return g.do(t, "POST", path, token, user, body, nil)
}

// ---- error envelope ----

// Param expectations besides an exact string.
const (
	anyParam = "\x00any"  // param not checked
	noParam  = "\x00null" // param null or absent
)

// wantErr checks an error answer: status, the envelope's type, code and param,
// a non-empty message, gw_code equal to the code, Content-Type application/json
// and an x-request-id header. ref names the spec or DECISIONS line.
func wantErr(t *testing.T, r *resp, status int, typ, code, param, ref string) bool {
	t.Helper()
	var env struct {
		Error *struct {
			Type    *string `json:"type"`
			Code    *string `json:"code"`
			Message *string `json:"message"`
			Param   any     `json:"param"`
		} `json:"error"`
		GWCode *string `json:"gw_code"`
	}
	var problems []string
	if r.Status != status {
		problems = append(problems, fmt.Sprintf("status %d, want %d", r.Status, status))
	}
	if err := json.Unmarshal(r.Body, &env); err != nil || env.Error == nil {
		problems = append(problems, "body is not an error envelope {\"error\":{...}}")
	} else {
		e := env.Error
		if e.Type == nil || *e.Type != typ {
			problems = append(problems, fmt.Sprintf("error.type %s, want %q", strp(e.Type), typ))
		}
		if e.Code == nil || *e.Code != code {
			problems = append(problems, fmt.Sprintf("error.code %s, want %q", strp(e.Code), code))
		}
		if e.Message == nil || *e.Message == "" {
			problems = append(problems, "error.message empty")
		}
		switch param {
		case anyParam:
		case noParam:
			if e.Param != nil {
				problems = append(problems, fmt.Sprintf("error.param %v, want null", e.Param))
			}
		default:
			if p, ok := e.Param.(string); !ok || p != param {
				problems = append(problems, fmt.Sprintf("error.param %#v, want %q", e.Param, param))
			}
		}
		if env.GWCode == nil || *env.GWCode != code {
			problems = append(problems, fmt.Sprintf("gw_code %s, want %q", strp(env.GWCode), code))
		}
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		problems = append(problems, fmt.Sprintf("Content-Type %q, want application/json (DECISIONS 8.30)", ct))
	}
	if r.Header.Get("X-Request-Id") == "" {
		problems = append(problems, "no x-request-id header (DECISIONS 5)")
	}
	if len(problems) > 0 {
		t.Errorf("%s\n  want %d %s/%s param=%q [%s]\n  problems: %s", r, status, typ, code, printable(param), ref, strings.Join(problems, "; "))
		return false
	}
	return true
}

func printable(p string) string {
	switch p {
	case anyParam:
		return "(any)"
	case noParam:
		return "(null)"
	}
	return p
}

func strp(s *string) string {
	if s == nil {
		return "(absent)"
	}
	return strconv.Quote(*s)
}

// wantStatus checks the status of a successful answer.
func wantStatus(t *testing.T, r *resp, status int, ref string) bool {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s\n  want status %d [%s]", r, status, ref)
		return false
	}
	return true
}

// errCase is one row of an error table.
type errCase struct {
	name    string
	method  string
	path    string
	token   string
	user    string
	body    any
	hdr     H
	status  int
	typ     string
	code    string
	param   string
	ref     string
	prepare func(t *testing.T)
}

func runErrCases(t *testing.T, g *gw, cases []errCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.prepare != nil {
				c.prepare(t)
			}
			r := g.do(t, c.method, c.path, c.token, c.user, c.body, c.hdr)
			wantErr(t, r, c.status, c.typ, c.code, c.param, c.ref)
		})
	}
}

// ---- SSE ----

// sseEvent is one server-sent event.
type sseEvent struct {
	Event string
	Data  string
}

// parseSSE splits an SSE body into events (comments dropped).
func parseSSE(body []byte) []sseEvent {
	var out []sseEvent
	text := strings.ReplaceAll(string(body), "\r\n", "\n")
	for _, block := range strings.Split(text, "\n\n") {
		var ev sseEvent
		var data []string
		has := false
		for _, line := range strings.Split(block, "\n") {
			switch {
			case line == "" || strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "event:"):
				ev.Event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
				has = true
			case strings.HasPrefix(line, "data:"):
				d := strings.TrimPrefix(line, "data:")
				d = strings.TrimPrefix(d, " ")
				data = append(data, d)
				has = true
			}
		}
		if has {
			ev.Data = strings.Join(data, "\n")
			out = append(out, ev)
		}
	}
	return out
}

// contentOf concatenates the delta contents of the unnamed chunk events.
func contentOf(events []sseEvent) string {
	var b strings.Builder
	for _, e := range events {
		if e.Event != "" || e.Data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		json.Unmarshal([]byte(e.Data), &c)
		for _, ch := range c.Choices {
			b.WriteString(ch.Delta.Content)
		}
	}
	return b.String()
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

// chatBody is a minimal /v1 chat request.
func chatBody(model, content string) map[string]any {
	return map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": content}}}
}

// waitFor polls cond every 20 ms until it is true or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// ctxTimeout is a context for waits on fakes.
func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// mustJSON marshals v.
func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
