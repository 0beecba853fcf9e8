package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/pgtest"
)

// TestMain lets the test binary stand in for gwbench: run re-executes
// os.Executable, here the test binary, with a serve-* subcommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && isServeCommand(os.Args[1]) {
		if err := serve(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString("gwbench: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, c config)
	}{
		{name: "defaults", check: func(t *testing.T, c config) {
			if c.rate != 2000 || c.duration != 10*time.Second || c.chunks != 16 || len(c.scenarios) != 5 || len(c.targets) != 3 {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{name: "quick keeps given flags", args: []string{"-quick", "-rate", "300"}, check: func(t *testing.T, c config) {
			if c.rate != 300 || c.duration != 300*time.Millisecond || c.rounds != 1 {
				t.Errorf("-quick -rate 300: rate %v duration %v rounds %d, want 300, 300ms, 1", c.rate, c.duration, c.rounds)
			}
		}},
		{name: "lists", args: []string{"-scenarios", "peak, v1-json", "-targets", "gateway"}, check: func(t *testing.T, c config) {
			if strings.Join(c.scenarios, "|") != "peak|v1-json" || strings.Join(c.targets, "|") != "gateway" {
				t.Errorf("lists: %q %q", c.scenarios, c.targets)
			}
		}},
		{name: "unknown scenario", args: []string{"-scenarios", "v2-json"}, wantErr: `unknown scenario "v2-json"`},
		{name: "unknown target", args: []string{"-targets", "nginx"}, wantErr: `unknown target "nginx"`},
		{name: "odd history", args: []string{"-c1-history", "7"}, wantErr: "-c1-history even"},
		{name: "rounds too short", args: []string{"-duration", "20ms", "-rounds", "5"}, wantErr: "at least 10ms"},
		{name: "argument", args: []string{"serve"}, wantErr: "unexpected argument"},
		{name: "bbolt by default", check: func(t *testing.T, c config) {
			if c.storeURL != "" || c.replicas != 1 {
				t.Errorf("store %q, %d replicas; want bbolt (\"\"), 1", c.storeURL, c.replicas)
			}
		}},
		{name: "pgtest replicas", args: []string{"-store-url", "pgtest", "-gateway-replicas", "3"}, check: func(t *testing.T, c config) {
			if c.storeURL != "pgtest" || c.replicas != 3 {
				t.Errorf("store %q, %d replicas; want pgtest, 3", c.storeURL, c.replicas)
			}
		}},
		{name: "pgtest with parameters", args: []string{"-store-url", "pgtest?pool_max_conns=16"}, check: func(t *testing.T, c config) {
			if c.storeURL != "pgtest?pool_max_conns=16" {
				t.Errorf("store %q, want pgtest?pool_max_conns=16", c.storeURL)
			}
		}},
		{name: "postgres URL replicas", args: []string{"-store-url", "postgresql://db.example/chatgw", "-gateway-replicas", "2"}, check: func(t *testing.T, c config) {
			if c.storeURL != "postgresql://db.example/chatgw" || c.replicas != 2 {
				t.Errorf("store %q, %d replicas; want the URL, 2", c.storeURL, c.replicas)
			}
		}},
		{name: "password not in the report's command", args: []string{"-store-url=postgres://u:s3cret@db.example/chatgw?password=s3cret"}, check: func(t *testing.T, c config) {
			if strings.Contains(c.command, "s3cret") {
				t.Errorf("command %q holds the password", c.command)
			}
		}},
		{name: "replicas on bbolt", args: []string{"-gateway-replicas", "2"}, wantErr: "-gateway-replicas 2 needs a PostgreSQL -store-url"},
		{name: "no replica", args: []string{"-store-url", "pgtest", "-gateway-replicas", "0"}, wantErr: "-gateway-replicas must be at least 1"},
		{name: "unknown store", args: []string{"-store-url", "mysql://u:s3cret@db/x"}, wantErr: "-store-url: want postgres://"},
		{name: "bolt store URL", args: []string{"-store-url", "bolt:gateway.db"}, wantErr: "-store-url: want postgres://"},
		{name: "pgtest with bad parameters", args: []string{"-store-url", "pgtest?a=%zz"}, wantErr: "-store-url pgtest?"},
		{name: "data dir with PostgreSQL", args: []string{"-store-url", "pgtest", "-data-dir", "/tmp/x"}, wantErr: "-data-dir is the bbolt store's directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.args, &bytes.Buffer{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseFlags(%q) error = %v, want one with %q", tc.args, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("parseFlags(%q) error = %v: holds the password", tc.args, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tc.args, err)
			}
			tc.check(t, c)
		})
	}
}

// TestQuickRun runs a short gwbench end to end: three server processes, every
// scenario. Direct and proxy must answer everything; the gateway may skip a
// scenario whose route is not wired yet, but must not fail requests otherwise.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three server processes: not in -short")
	}
	out := filepath.Join(t.TempDir(), "out.json")
	logPath := filepath.Join(t.TempDir(), "gateway.log")
	cfg, err := parseFlags([]string{"-quick", "-duration", "200ms", "-warmup", "50ms", "-json", out, "-gateway-log", logPath}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer checkGatewayLog(t, logPath)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, cfg, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	md := stdout.String()
	for _, want := range []string{"## Latency (ms)", "## Added over direct", "## Server processes", "| peak | direct |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown report lacks %q:\n%s", want, md)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("-json output: %v", err)
	}
	if len(rep.Scenarios) != len(scenarios) {
		t.Fatalf("%d scenarios in the JSON report, want %d", len(rep.Scenarios), len(scenarios))
	}
	for _, s := range rep.Scenarios {
		for _, tr := range s.Targets {
			switch {
			case tr.Skipped != "" && tr.Target == targetGateway:
				t.Logf("%s: gateway skipped: %s", s.Name, tr.Skipped)
			case tr.Skipped != "":
				t.Errorf("%s: %s skipped: %s", s.Name, tr.Target, tr.Skipped)
			case tr.OK == 0 || tr.Errors > 0 || tr.Truncated > 0:
				t.Errorf("%s, %s: %d ok, %d errors (%v), %d truncated; want no error", s.Name, tr.Target, tr.OK, tr.Errors, tr.ErrorKinds, tr.Truncated)
			case tr.P50 <= 0 || tr.Max < tr.P99 || tr.Rate <= 0:
				t.Errorf("%s, %s: p50 %v p99 %v max %v rate %v: not a measure", s.Name, tr.Target, tr.P50, tr.P99, tr.Max, tr.Rate)
			case strings.HasSuffix(s.Name, "-sse") && tr.TTFBP50 <= 0:
				t.Errorf("%s, %s: no time to first byte", s.Name, tr.Target)
			}
		}
	}
}

// checkGatewayLog checks that the gateway logged at path as gatewayd does: a
// JSON line for each request and for each upstream attempt.
func checkGatewayLog(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("-gateway-log: %v", err)
	}
	msgs := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var rec struct {
			Msg       string `json:"msg"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if (rec.Msg == "request" || rec.Msg == "upstream attempt") && rec.RequestID == "" {
			t.Errorf("log line %q: no request_id", l)
		}
		msgs[rec.Msg]++
	}
	if msgs["request"] == 0 || msgs["upstream attempt"] < msgs["request"]/2 {
		t.Errorf("log lines by message %v: want a request line per request and an upstream attempt line per model call", msgs)
	}
}

// TestQuickRunPostgresReplicas runs a short gwbench with the gateway as two
// replicas on a throw-away PostgreSQL cluster that gwbench starts itself:
// every request must succeed, /c1 conversations among them being continued
// through the replica their previous turn did not go through, and the report
// must name the store and the replicas. It skips, as internal/pgtest does,
// when PostgreSQL is not installed.
func TestQuickRunPostgresReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and four server processes: not in -short")
	}
	out := filepath.Join(t.TempDir(), "out.json")
	cfg, err := parseFlags([]string{"-quick", "-duration", "200ms", "-warmup", "50ms", "-json", out,
		"-store-url", "pgtest", "-gateway-replicas", "2", "-targets", "direct,gateway", "-scenarios", "v1-json,c1-json,c1-sse"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err = run(ctx, cfg, &stdout, &stderr)
	if errors.Is(err, pgtest.ErrUnavailable) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("-json output: %v", err)
	}
	if rep.Store != "postgresql" || rep.StoreVersion == "" || rep.GatewayReplicas != 2 {
		t.Errorf("JSON report: store %q version %q, %d replicas; want postgresql, a version, 2", rep.Store, rep.StoreVersion, rep.GatewayReplicas)
	}
	if md := stdout.String(); !strings.Contains(md, "Gateway: 2 replicas") || !strings.Contains(md, "Store: PostgreSQL "+rep.StoreVersion+",") {
		t.Errorf("markdown report does not name 2 replicas and PostgreSQL %s:\n%s", rep.StoreVersion, md)
	}
	if len(rep.Scenarios) != 3 {
		t.Fatalf("%d scenarios in the JSON report, want 3", len(rep.Scenarios))
	}
	for _, s := range rep.Scenarios {
		for _, tr := range s.Targets {
			if tr.Skipped != "" || tr.OK == 0 || tr.Errors > 0 || tr.PeakRSSMB <= 0 {
				t.Errorf("%s, %s: skipped %q, %d ok, %d errors (%v), peak RSS %v MiB; want every request answered and measured",
					s.Name, tr.Target, tr.Skipped, tr.OK, tr.Errors, tr.ErrorKinds, tr.PeakRSSMB)
			}
		}
	}
}
