package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestSlowStreamsRun runs a small slow-streams scenario end to end, over
// HTTP/1.1 and over h2c: every stream must complete, and the report must give
// the servers' memory.
func TestSlowStreamsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes: not in -short")
	}
	for _, h2c := range []bool{false, true} {
		args := []string{"-scenarios", "slow-streams", "-targets", "proxy,gateway", "-streams", "40",
			"-slow-chunks", "3", "-slow-interval", "50ms", "-slow-ramp", "400"}
		if h2c {
			args = append(args, "-slow-h2c")
		}
		cfg, err := parseFlags(args, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var stdout, stderr bytes.Buffer
		err = run(ctx, cfg, &stdout, &stderr)
		cancel()
		if err != nil {
			t.Fatalf("run(%q): %v\nstderr:\n%s", args, err, stderr.String())
		}
		md := stdout.String()
		if !strings.Contains(md, "## Slow streams (memory)") || strings.Contains(md, "## Latency") {
			t.Errorf("report of a slow-streams run:\n%s", md)
		}
		for _, want := range []string{"| proxy |", "| gateway |"} {
			if !strings.Contains(md, want) {
				t.Errorf("report lacks %q:\n%s", want, md)
			}
		}
		// The bare proxy may cut a stream (it does not read the request body
		// first); the gateway must not.
		if strings.Contains(md, "skipped") || strings.Contains(md, "- gateway:") {
			t.Errorf("h2c %v: a target was skipped or the gateway had errors:\n%s\nstderr:\n%s", h2c, md, stderr.String())
		}
	}
}
