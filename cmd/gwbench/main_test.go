package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for gwbench: run re-executes
// os.Executable, here the test binary, with a serve-* subcommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && isServeCommand(os.Args[1]) {
		if err := serve(context.Background(), os.Args[1:], os.Stdin, os.Stdout); err != nil {
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.args, &bytes.Buffer{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseFlags(%q) error = %v, want one with %q", tc.args, err, tc.wantErr)
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
	cfg, err := parseFlags([]string{"-quick", "-duration", "200ms", "-warmup", "50ms", "-json", out}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
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
