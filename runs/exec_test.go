package runs_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/runs"
)

// TestExitStatus: exit 0 succeeds, any other ending fails with a reason.
func TestExitStatus(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-agent")
	for _, tt := range []struct {
		name       string
		command    string
		want       run
		notStarted bool // the command never ran: no started_at
	}{
		{"exit 0", helperCmd(t, "exit", "0"), run{Status: runs.StatusSucceeded, ExitCode: ptr(0),
			Output: ptr("out line\nerr line\n")}, false},
		{"exit 3", helperCmd(t, "exit", "3"), run{Status: runs.StatusFailed, ExitCode: ptr(3), Reason: "exit code 3",
			Output: ptr("out line\nerr line\n")}, false},
		{"exit 255", helperCmd(t, "exit", "255"), run{Status: runs.StatusFailed, ExitCode: ptr(255), Reason: "exit code 255",
			Output: ptr("out line\nerr line\n")}, false},
		{"missing program", missing + " arg", run{Status: runs.StatusFailed, Reason: runs.ReasonStartFailed, Output: ptr("")}, true},
		{"missing program in PATH", "no-such-agent-in-path-4711", run{Status: runs.StatusFailed, Reason: runs.ReasonStartFailed,
			Output: ptr("")}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, runs.Config{Command: tt.command})
			r := e.create("", "alice", appRepo, "W-1")
			got := e.waitDone("alice", r.ID)
			want := tt.want
			want.ID, want.Runtime, want.Repo, want.WorkItem, want.UserID = r.ID, "coding-agent", appRepo, "W-1", "alice"
			want.CreatedAt, want.StartedAt, want.FinishedAt, want.OutputTruncated = t0, &t0, &t0, ptr(false)
			if tt.notStarted {
				want.StartedAt = nil
			}
			testkit.Diff(t, "run", want, got)
		})
	}
}

// TestRunEnvironment: the command gets the run's variables, the gateway's
// environment without GATEWAY_*, and a temporary working directory.
func TestRunEnvironment(t *testing.T) {
	t.Setenv("GATEWAY_TEST_SECRET", "sk-do-not-leak")
	t.Setenv("RUNS_TEST_INHERITED", "kept")
	t.Setenv("GW_RUN_ID", "spoofed")
	e := newEnv(t, runs.Config{Command: helperCmd(t, "env")})
	r := e.create("", "alice", "https://GitHub.com/acme/app.git", "ISSUE 7: fix ünïcode")
	got := e.waitSucceeded("alice", r.ID)
	var vars map[string]any
	if err := json.Unmarshal([]byte(*got.Output), &vars); err != nil {
		t.Fatalf("output %q: %v", *got.Output, err)
	}
	cwd, _ := vars["cwd"].(string)
	if !strings.HasPrefix(filepath.Base(cwd), "gw-run-") {
		t.Errorf("working directory %q, want a gw-run-* temporary directory", cwd)
	}
	if _, err := os.Stat(cwd); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("working directory %q not removed: %v", cwd, err)
	}
	testkit.Diff(t, "environment", map[string]any{
		"cwd":                 cwd,
		"has_path":            true,
		"PWD":                 cwd,
		"GW_RUN_ID":           r.ID,
		"GW_RUN_REPO":         appRepo,
		"GW_RUN_WORK_ITEM":    "ISSUE 7: fix ünïcode",
		"GW_TENANT_ID":        "acme",
		"GW_USER_ID":          "alice",
		"RUNS_TEST_INHERITED": "kept",
	}, vars)
}

// TestWorkDirRemoved: the working directory goes even when the command left
// read-only files and directories in it.
func TestWorkDirRemoved(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "files")})
	r := e.create("", "alice", appRepo, "W-1")
	got := e.waitSucceeded("alice", r.ID)
	dir := strings.TrimSpace(*got.Output)
	if dir == "" {
		t.Fatal("no directory printed")
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("working directory %q not removed: %v", dir, err)
	}
}

// TestOutputTail: only the last OutputTailBytes are kept, and stored.
func TestOutputTail(t *testing.T) {
	for _, tt := range []struct {
		n         int
		truncated bool
	}{
		{0, false},
		{runs.OutputTailBytes, false},
		{runs.OutputTailBytes + 1, true},
		{5*runs.OutputTailBytes + 12345, true},
	} {
		e := newEnv(t, runs.Config{Command: helperCmd(t, "spam", itoa(tt.n))})
		r := e.create("", "alice", appRepo, "W-1")
		got := e.waitDone("alice", r.ID)
		all := spamBytes(tt.n)
		want := string(all[max(0, len(all)-runs.OutputTailBytes):])
		if got.Output == nil || *got.Output != want {
			t.Errorf("spam %d: output of %d bytes, want the last %d", tt.n, len(deref(got.Output)), len(want))
		}
		if got.OutputTruncated == nil || *got.OutputTruncated != tt.truncated {
			t.Errorf("spam %d: output_truncated %v, want %v", tt.n, got.OutputTruncated, tt.truncated)
		}
		// A new Service over the store reads the stored tail.
		e2 := newEnvOver(t, e.st, runs.Config{})
		if again := e2.get("", "alice", r.ID); deref(again.Output) != want || *again.OutputTruncated != tt.truncated {
			t.Errorf("spam %d: stored output of %d bytes (truncated %v), want %d", tt.n, len(deref(again.Output)),
				*again.OutputTruncated, len(want))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
