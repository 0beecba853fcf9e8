package apidocs_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lintDir is the npm package that pins the Redocly CLI and its rules
// (docs/lint/redocly.yaml).
const lintDir = "../../docs/lint"

// TestRedoclyLint validates assets/openapi.json with the Redocly CLI's
// recommended rules and fails on any error or warning. It needs node and
// docs/lint/node_modules (npm ci --prefix docs/lint, which .ci/run does).
func TestRedoclyLint(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the Redocly lint of openapi.json needs node and `npm ci --prefix docs/lint`")
	}
	cli := filepath.Join(lintDir, "node_modules", "@redocly", "cli", "bin", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		t.Skip("docs/lint/node_modules is missing: run `npm ci --prefix docs/lint` to enable the Redocly lint of openapi.json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "lint", "--format=json",
		"--config", filepath.Join(lintDir, "redocly.yaml"), filepath.Join("assets", "openapi.json"))
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var report struct {
		Totals struct {
			Errors, Warnings, Ignored int
		}
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string
			Message  string
			Location []struct {
				Pointer string
			}
		}
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("redocly lint: %v (exit: %v)\nstdout: %s\nstderr: %s", err, runErr, out, stderr.String())
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		t.Errorf("%s %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
	}
	if report.Totals.Errors+report.Totals.Warnings+report.Totals.Ignored != 0 {
		t.Errorf("redocly lint: %d errors, %d warnings, %d ignored; want none", report.Totals.Errors, report.Totals.Warnings, report.Totals.Ignored)
	}
	if runErr != nil && !t.Failed() {
		t.Errorf("redocly lint exited with %v\nstderr: %s", runErr, stderr.String())
	}
}
