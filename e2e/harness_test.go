// Package e2e_test is chatgw's end-to-end suite: it builds the gatewayd binary
// once, runs it as a subprocess on 127.0.0.1 against recording fake upstreams
// (upstream/upstreamtest) and checks every rule of ../shared/spec/interface.md and
// ../shared/DECISIONS.md from the outside, as a client sees it. A failing test
// here names the spec or DECISIONS line it enforces.
//
// The harness is in three files: harness_test.go starts and stops gatewayd,
// http_test.go sends requests and checks answers (error envelopes, error
// tables), stream_test.go reads SSE answers and what the fakes received.
package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

	"github.com/chatgw/gateway/internal/testkit"
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

// Tokens of the default token file (see defaultTokenFile).
const (
	tokAdmin     = "acme-admin-token-0001"   // tenant_admin of acme
	tokMember    = "acme-member-token-0002"  // member of acme
	tokRestrict  = "acme-restrict-token-003" // member of acme, deny chat:write, models:read and memory:read, extra tenant_config:write and system_prompts:write:scope
	tokSlow      = "acme-slow-token-0004"    // member of acme, rate 0.1/s burst 2
	tokHashed    = "acme-hashed-token-0005"  // member of acme, given as sha256 in the file
	tokNoPrompt  = "acme-noprompt-token-06"  // member of acme, deny system_prompts:write (no qualifier)
	tokGlobex    = "globex-admin-token-0007" // tenant_admin of globex (no models list: every alias)
	tokGlobexMem = "globex-member-token-008" // member of globex
	tokTiny      = "tiny-member-token-0009"  // member of tiny (models: lm-4-scout-local only)
	tokQuota     = "quota-member-token-0010" // member of quota (daily quotas)
	tokNoConsent = "plain-admin-token-0011"  // tenant_admin of plain (no c1_cloud_doc_consent)
	tokRate      = "acme-rate-token-0012"    // member of acme, rate 1/s burst 2
	tokNoCfgRead = "acme-nocfgread-tok-0013" // member of acme, deny tenant_config:read
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

// defaultTokenFile is the token file most tests run with, as a value that a
// test may change before writing it.
func defaultTokenFile() map[string]any {
	return map[string]any{
		"tenants": []any{
			map[string]any{"id": "acme", "models": acmeModels,
				"settings":    map[string]any{"c1_cloud_doc_consent": true},
				"config_caps": map[string]any{"image_gen_rate_per_hour": 500}},
			map[string]any{"id": "globex"},
			map[string]any{"id": "tiny", "models": []string{"lm-4-scout-local"}},
			map[string]any{"id": "quota", "quotas": map[string]any{
				"lm-4-scout-local":  map[string]any{"requests_per_day": 2},
				"lm-4-scout-cloudB": map[string]any{"requests_per_day": 1},
				"lm-4-scout-cloudA": map[string]any{"tokens_per_day": 1000}}},
			map[string]any{"id": "plain"},
		},
		"tokens": []any{
			map[string]any{"token": tokAdmin, "tenant": "acme", "role": "tenant_admin"},
			map[string]any{"token": tokMember, "tenant": "acme", "role": "member"},
			map[string]any{"token": tokRestrict, "tenant": "acme", "role": "member",
				"deny": []string{"chat:write", "models:read", "memory:read"}, "scopes": []string{"tenant_config:write", "system_prompts:write:scope"}},
			map[string]any{"token": tokSlow, "tenant": "acme", "role": "member", "rate": map[string]any{"per_second": 0.1, "burst": 2}},
			map[string]any{"sha256": sha256Hex(tokHashed), "tenant": "acme", "role": "member"},
			map[string]any{"token": tokNoPrompt, "tenant": "acme", "role": "member", "deny": []string{"system_prompts:write"}},
			map[string]any{"token": tokGlobex, "tenant": "globex", "role": "tenant_admin"},
			map[string]any{"token": tokGlobexMem, "tenant": "globex", "role": "member"},
			map[string]any{"token": tokTiny, "tenant": "tiny", "role": "member"},
			map[string]any{"token": tokQuota, "tenant": "quota", "role": "member"},
			map[string]any{"token": tokNoConsent, "tenant": "plain", "role": "tenant_admin"},
			map[string]any{"token": tokRate, "tenant": "acme", "role": "member", "rate": map[string]any{"per_second": 1, "burst": 2}},
			map[string]any{"token": tokNoCfgRead, "tenant": "acme", "role": "member", "deny": []string{"tenant_config:read"}},
		},
	}
}

// defaultTokens is the default token file's content.
func defaultTokens() string { return tokenFileJSON(defaultTokenFile()) }

// tokenFileJSON is a token file's content, indented (one entry a line, so that
// gatewayd's refusals can name lines).
func tokenFileJSON(file map[string]any) string {
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
	// (refused() gives a URL where connections are refused, emptyURL an empty value).
	LocalURL, CloudAURL, CloudBURL string
	// Configurations of the three fakes.
	Local, CloudA, CloudB upstreamtest.Config
	// FileLimit, when > 0, is gatewayd's open-file limit (soft and hard, so
	// that the Go runtime cannot raise it), set by sh's ulimit.
	FileLimit int
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
	stderr                *testkit.Buffer
	exited                chan struct{}
	exitErr               error
	stopped               bool
	env                   map[string]string
	args                  []string
	fileLimit             int
}

// handedOut are the ports freePort returned: the kernel may give a port
// just released to the next caller, and two parallel tests whose gatewayd
// listened on one port would talk to each other's.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a free loopback port that no other test of this process
// was given.
func freePort(t *testing.T) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
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
	g := &gw{t: t, fileLimit: s.FileLimit}
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
		writeFile(t, g.TokensPath, tokens)
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

// Restart stops gatewayd (SIGTERM, exit 0) unless it is stopped already, and
// starts it again with the same environment, address, data dir and token file.
func (g *gw) Restart() {
	g.t.Helper()
	if !g.stopped {
		g.Stop()
	}
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
	if g.fileLimit > 0 {
		// exec: the shell becomes gatewayd, so signals reach it.
		cmd = exec.Command("sh", append([]string{"-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(g.fileLimit), gatewaydBin}, args...)...)
	}
	cmd.Env = gatewayEnv(env)
	g.stderr = &testkit.Buffer{}
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
	g.stopSignal(syscall.SIGTERM)
}

// stopSignal sends sig and checks that gatewayd exits 0 within 10 s.
func (g *gw) stopSignal(sig os.Signal) {
	g.t.Helper()
	g.stopped = true
	g.cmd.Process.Signal(sig)
	select {
	case <-g.exited:
	case <-time.After(10 * time.Second):
		g.cmd.Process.Kill()
		<-g.exited
		g.t.Errorf("gatewayd did not exit within 10 s of %v (DECISIONS 2: stops cleanly on SIGTERM and SIGINT)\nstderr tail:\n%s", sig, tail(g.stderr.String(), 2000))
		return
	}
	if g.exitErr != nil {
		g.t.Errorf("gatewayd exited with %v after %v, want exit 0 (DECISIONS 2)\nstderr tail:\n%s", g.exitErr, sig, tail(g.stderr.String(), 2000))
	}
}

// Kill ends gatewayd with SIGKILL, as a crash or an OOM kill would, and
// waits for it to exit.
func (g *gw) Kill() {
	g.t.Helper()
	g.stopped = true
	g.cmd.Process.Kill()
	<-g.exited
}

// Signal sends sig to gatewayd.
func (g *gw) Signal(sig os.Signal) {
	if err := g.cmd.Process.Signal(sig); err != nil {
		g.t.Fatal(err)
	}
}

// runToExit runs gatewayd with env and args, without waiting for it to be
// healthy, and waits (5 s) for it to exit; a gatewayd still running then is
// stopped and reported with exit code -1.
func runToExit(t *testing.T, env map[string]string, args ...string) (exitCode int, stderr string) {
	t.Helper()
	if _, ok := env["GATEWAY_ADDR"]; !ok {
		env["GATEWAY_ADDR"] = "127.0.0.1:" + strconv.Itoa(freePort(t))
	}
	if _, ok := env["GATEWAY_DATA_DIR"]; !ok {
		env["GATEWAY_DATA_DIR"] = t.TempDir()
	}
	cmd := exec.Command(gatewaydBin, args...)
	cmd.Env = gatewayEnv(env)
	var buf testkit.Buffer
	cmd.Stderr, cmd.Stdout = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), buf.String()
		}
		return 0, buf.String()
	case <-time.After(5 * time.Second):
		cmd.Process.Signal(syscall.SIGTERM)
		<-done
		return -1, buf.String()
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
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
