package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadConfigFlagWinsOverEnv(t *testing.T) {
	env := envOf(map[string]string{"GATEWAY_ADDR": "127.0.0.1:9", "GATEWAY_DATA_DIR": "/env", "GATEWAY_RATE_BURST": "7", "GATEWAY_LOCAL_URL": ""})
	c, err := loadConfig(context.Background(), []string{"-data-dir", "/flag", "-first-byte-timeout", "3s", "-dev"}, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	got := []any{c.Addr, c.DataDir, c.RateBurst, c.LocalURL, c.FirstByteTimeout, c.UpstreamTimeout, c.Dev, c.BodyLimitBytes}
	want := []any{"127.0.0.1:9", "/flag", 7, "", 3 * time.Second, 600 * time.Second, true, int64(33554432)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config mismatch (-want +got):\n%s", diff)
	}
}

func TestBackendsFromEnvironment(t *testing.T) {
	env := envOf(map[string]string{
		"GATEWAY_LOCAL_URL": "http://local:1/v1", "GATEWAY_LOCAL_API_KEY": "lk",
		"GATEWAY_CLOUDA_URL": "https://a/v1", "GATEWAY_CLOUDA_API_KEY": "ak",
		"GATEWAY_CLOUDB_URL": "https://b/v1", "GATEWAY_CLOUDB_API_KEY": "bk",
		"GATEWAY_ROUTER_URL": "http://router/v1", "GATEWAY_ROUTER_API_KEY": "rk",
		"GATEWAY_UPSTREAM_TIMEOUT": "9s", "GATEWAY_FIRST_BYTE_TIMEOUT": "2s",
	})
	c, err := loadConfig(context.Background(), []string{"-router-api-key", "rk2"}, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := upstream.Backends{
		LocalURL: "http://local:1/v1", LocalAPIKey: "lk",
		CloudAURL: "https://a/v1", CloudAAPIKey: "ak",
		CloudBURL: "https://b/v1", CloudBAPIKey: "bk",
		RouterURL: "http://router/v1", RouterAPIKey: "rk2",
		TotalTimeout: 9 * time.Second, FirstByteTimeout: 2 * time.Second,
	}
	if diff := cmp.Diff(want, backendsOf(c)); diff != "" {
		t.Errorf("backends mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	c, err := loadConfig(context.Background(), nil, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	got := []any{c.Addr, c.DataDir, c.LocalURL, c.RatePerSecond, c.RateBurst}
	want := []any{"127.0.0.1:8080", "./data", "http://127.0.0.1:11434/v1", 1.0, 30}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults mismatch (-want +got):\n%s", diff)
	}
}

func TestRunRefusesWithoutTokens(t *testing.T) {
	err := run(context.Background(), []string{"-data-dir", t.TempDir()}, envOf(nil), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "GATEWAY_TOKENS_FILE") {
		t.Fatalf("run = %v, want refusal naming GATEWAY_TOKENS_FILE", err)
	}
}

func TestRunRefusesBadTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	os.WriteFile(path, []byte("{\n\"tenants\": [],\n\"tokens\": [{\"token\": \"a\", \"tenant\": \"nope\"}]\n}"), 0o600)
	err := run(context.Background(), []string{"-data-dir", t.TempDir(), "-tokens-file", path}, envOf(nil), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "tokens.json:3") {
		t.Fatalf("run = %v, want an error naming tokens.json:3", err)
	}
}

func TestRunRefusesBadAgentFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "good.json"), []byte(`{"name":"good","model":"lm-4-scout","tools":[]}`), 0o600)
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"name":"broken",`), 0o600)
	err := run(context.Background(), []string{"-dev", "-data-dir", t.TempDir(), "-local-url", "", "-agents-dir", dir}, envOf(nil), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "broken.json") {
		t.Fatalf("run = %v, want a refusal naming broken.json", err)
	}
}

func TestDevModeServesAgentsFromTheDirectory(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "helper.json"), []byte(`{"name":"helper","description":"Helps.","model":"lm-4-scout","tools":["current_time","no_such_tool"]}`), 0o600)
	base, token, stop := startDev(t, "-agents-dir", dir)
	defer stop()
	req, _ := http.NewRequest("GET", base+"/a1/agents", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Data []struct {
			Name  string   `json:"name"`
			Tools []string `json:"tools"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /a1/agents = %d, %v", resp.StatusCode, err)
	}
	if len(got.Data) != 1 || got.Data[0].Name != "helper" {
		t.Errorf("agents = %+v, want helper alone", got.Data)
	}
}

// startDev runs gatewayd -dev on a free port and returns its base URL and token.
func startDev(t *testing.T, args ...string) (base, token string, stop func() error) {
	t.Helper()
	base, token, _, stop = startDevOutput(t, args...)
	return base, token, stop
}

// startDevOutput is startDev that also returns what gatewayd prints.
func startDevOutput(t *testing.T, args ...string) (base, token string, out *testkit.Buffer, stop func() error) {
	t.Helper()
	return startDevEnv(t, nil, args...)
}

// startDevEnv is startDevOutput with the environment env.
func startDevEnv(t *testing.T, env map[string]string, args ...string) (base, token string, out *testkit.Buffer, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &testkit.Buffer{}
	done := make(chan error, 1)
	args = append([]string{"-dev", "-addr", "127.0.0.1:0", "-data-dir", t.TempDir(), "-local-url", ""}, args...)
	go func() { done <- run(ctx, args, envOf(env), out) }()
	addrRE := regexp.MustCompile(`listening on (http://\S+) `)
	tokRE := regexp.MustCompile(`\n  (dev-[0-9a-f]+)\n`)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		s := out.String()
		if m := addrRE.FindStringSubmatch(s); m != nil {
			tm := tokRE.FindStringSubmatch(s)
			if tm == nil {
				t.Fatalf("no token printed: %s", s)
			}
			return m[1], tm[1], out, func() error { cancel(); return <-done }
		}
		select {
		case err := <-done:
			t.Fatalf("run ended: %v\n%s", err, s)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("gatewayd did not start: %s", out.String())
	return "", "", nil, nil
}

func TestDevModeServesAndStopsCleanly(t *testing.T) {
	base, token, stop := startDev(t)
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz = %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", base+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 200 || body["object"] != "list" {
		t.Errorf("/v1/models with the dev token = %d %v", resp.StatusCode, body)
	}
	req, _ = http.NewRequest("POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"lm-4-scout","messages":[{"role":"user","content":"hello demo"}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "chatgw demo backend") || !strings.Contains(string(b), "hello demo") {
		t.Errorf("demo chat = %d %s", resp.StatusCode, b)
	}
	if err := stop(); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestLogLevel: GATEWAY_LOG_LEVEL (or -log-level) is the least level written;
// at the default, info, a request that went well has its request line, at
// warn it has none, while a failed one still has its lines.
func TestLogLevel(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		wantOK    bool // a line for the request that went well
		wantError bool // a line for the request refused (401, at info)
	}{
		{name: "default", wantOK: true, wantError: true},
		{name: "warn", env: map[string]string{"GATEWAY_LOG_LEVEL": "warn"}},
		{name: "flag over variable", env: map[string]string{"GATEWAY_LOG_LEVEL": "error"}, args: []string{"-log-level", "DEBUG"}, wantOK: true, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, token, out, stop := startDevEnv(t, tt.env, tt.args...)
			for _, bearer := range []string{token, "wrong"} {
				req, _ := http.NewRequest("GET", base+"/v1/models", nil)
				req.Header.Set("Authorization", "Bearer "+bearer)
				req.Header.Set("X-Request-Id", "req-"+bearer[:5])
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			logged := out.String()
			if got := strings.Contains(logged, `"request_id":"req-`+token[:5]+`"`); got != tt.wantOK {
				t.Errorf("line of the request that went well: %v, want %v\n%s", got, tt.wantOK, logged)
			}
			if got := strings.Contains(logged, `"request_id":"req-wrong"`); got != tt.wantError {
				t.Errorf("line of the 401: %v, want %v\n%s", got, tt.wantError, logged)
			}
		})
	}
}

// TestMetricsListener: GATEWAY_METRICS_ADDR serves the gateway's metrics,
// the Go runtime's and the process's at /metrics on a listener of its own,
// without a bearer; the API's listener does not serve them.
func TestMetricsListener(t *testing.T) {
	base, token, out, stop := startDevOutput(t, "-metrics-addr", "127.0.0.1:0")
	defer stop()
	req, _ := http.NewRequest("GET", base+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	url := regexp.MustCompile(`chatgw metrics on (http://\S+)\n`).FindStringSubmatch(out.String())
	if url == nil {
		t.Fatalf("no metrics address printed:\n%s", out)
	}
	resp, err = http.Get(url[1])
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`chatgw_requests_total{error_type="",http_request_method="GET",http_response_status_code="200",http_route="/v1/models",tenant="dev"} 1`,
		`chatgw_build_info{`, `go_goroutines `, `process_open_fds `,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the API's listener answers /metrics with %d, want 404", resp.StatusCode)
	}
}

// TestMetricsAddrTaken: a metrics address that cannot be listened on stops
// start-up, naming the variable.
func TestMetricsAddrTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = run(context.Background(), []string{"-dev", "-addr", "127.0.0.1:0", "-data-dir", t.TempDir(), "-local-url", "",
		"-metrics-addr", ln.Addr().String()}, envOf(nil), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "GATEWAY_METRICS_ADDR") {
		t.Fatalf("run = %v, want a refusal naming GATEWAY_METRICS_ADDR", err)
	}
}

// TestHelp: -h, -help and --help print the usage and succeed (run returns
// nil, so gatewayd exits 0), without the values of secret variables.
func TestHelp(t *testing.T) {
	env := envOf(map[string]string{
		"GATEWAY_CLOUDA_API_KEY": "sk-secret-a",
		"GATEWAY_STORE_URL":      "postgres://u:pw-secret@db/chatgw",
		"GATEWAY_RATE_BURST":     "7",
	})
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}, {"-dev", "-h"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out bytes.Buffer
			if err := run(context.Background(), args, env, &out); err != nil {
				t.Fatalf("run(%q) = %v, want nil", args, err)
			}
			got := out.String()
			for _, want := range []string{"Usage: gatewayd [flags]", "-rate-per-second", "(GATEWAY_RATE_PER_SECOND)", "(default 7)"} {
				if !strings.Contains(got, want) {
					t.Errorf("usage lacks %q:\n%s", want, got)
				}
			}
			for _, secret := range []string{"sk-secret-a", "pw-secret"} {
				if strings.Contains(got, secret) {
					t.Errorf("usage shows the secret %q:\n%s", secret, got)
				}
			}
		})
	}
}

// TestBadFlag: a flag gatewayd does not have is an error, not help.
func TestBadFlag(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-no-such-flag"}, envOf(nil), &out)
	if err == nil || !strings.Contains(err.Error(), "no-such-flag") {
		t.Errorf("run(-no-such-flag) = %v, want an error naming the flag", err)
	}
}
