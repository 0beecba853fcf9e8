package runs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/runs"
)

// TestCancelRunning covers the ways a running command ends on cancel: SIGTERM
// ends it, it exits by itself on SIGTERM, or it ignores SIGTERM until the
// SIGKILL after the grace.
func TestCancelRunning(t *testing.T) {
	for _, tt := range []struct {
		behaviour  string
		grace      time.Duration
		reason     string
		exitCode   *int
		output     string
		minElapsed time.Duration
		maxElapsed time.Duration
	}{
		{behaviour: "sleep", grace: time.Minute, reason: runs.ReasonCancelled + ": killed by signal 15 (terminated)",
			output: "ready\n", maxElapsed: 30 * time.Second},
		{behaviour: "trap-term", grace: time.Minute, reason: runs.ReasonCancelled + ": exit code 0", exitCode: ptr(0),
			output: "ready\ngot SIGTERM\n", maxElapsed: 30 * time.Second},
		{behaviour: "ignore-term", grace: 300 * time.Millisecond, reason: runs.ReasonCancelled + ": killed by signal 9 (killed)",
			output: "ready\n", minElapsed: 300 * time.Millisecond, maxElapsed: 30 * time.Second},
	} {
		t.Run(tt.behaviour, func(t *testing.T) {
			e := newEnv(t, runs.Config{Command: helperCmd(t, tt.behaviour), KillGrace: tt.grace})
			r := e.create("", "alice", appRepo, "W-1")
			e.waitReady("alice", r.ID)
			start := time.Now()
			got := e.cancel("", "alice", r.ID)
			elapsed := time.Since(start)
			if elapsed < tt.minElapsed || elapsed > tt.maxElapsed {
				t.Errorf("cancel took %v, want %v to %v", elapsed, tt.minElapsed, tt.maxElapsed)
			}
			want := run{ID: r.ID, Runtime: "coding-agent", Repo: appRepo, WorkItem: "W-1", Status: runs.StatusCancelled,
				CreatedAt: t0, StartedAt: &t0, FinishedAt: &t0, ExitCode: tt.exitCode, Reason: tt.reason, UserID: "alice"}
			testkit.Diff(t, "cancel answer", want, got)
			want.Output, want.OutputTruncated = ptr(tt.output), ptr(false)
			testkit.Diff(t, "run after cancel", want, e.get("", "alice", r.ID))
			// Cancelling again answers the run as it is.
			want.Output, want.OutputTruncated = nil, nil
			testkit.Diff(t, "second cancel", want, e.cancel("", "alice", r.ID))
		})
	}
}

// TestCancelQueued: a queued run is cancelled at once and never starts; the
// queue goes on in order.
func TestCancelQueued(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "sleep"), MaxRunning: 1})
	first := e.create("", "alice", appRepo, "W-1")
	e.waitReady("alice", first.ID)
	second := e.create("", "alice", appRepo, "W-2")
	third := e.create("", "alice", appRepo, "W-3")

	got := e.cancel("", "alice", second.ID)
	want := run{ID: second.ID, Runtime: "coding-agent", Repo: appRepo, WorkItem: "W-2", Status: runs.StatusCancelled,
		CreatedAt: t0, FinishedAt: &t0, Reason: runs.ReasonCancelledQueued, UserID: "alice"}
	testkit.Diff(t, "cancel answer", want, got)
	if r := e.get("", "alice", first.ID); r.Status != runs.StatusRunning {
		t.Errorf("first run %s, want running", r.Status)
	}
	if r := e.get("", "alice", third.ID); r.Status != runs.StatusQueued {
		t.Errorf("third run %s, want queued", r.Status)
	}
	e.cancel("", "alice", first.ID)
	e.waitReady("alice", third.ID) // the third starts, the second never does
	want.Output, want.OutputTruncated = ptr(""), ptr(false)
	testkit.Diff(t, "cancelled queued run", want, e.get("", "alice", second.ID))
	e.cancel("", "alice", third.ID)
}

// TestCancelFinished: a final run is answered unchanged with 200.
func TestCancelFinished(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "exit", "3")})
	r := e.create("", "alice", appRepo, "W-1")
	done := e.waitDone("alice", r.ID)
	done.Output, done.OutputTruncated = nil, nil
	testkit.Diff(t, "cancel of a failed run", done, e.cancel("", "alice", r.ID))
	if got := e.get("", "alice", r.ID); got.Status != runs.StatusFailed {
		t.Errorf("status %s after cancel, want failed", got.Status)
	}
}

// TestCancelKillsProcessGroup: the command's children go with it.
func TestCancelKillsProcessGroup(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "grandchild"), KillGrace: time.Minute})
	r := e.create("", "alice", appRepo, "W-1")
	got := e.waitFor("alice", r.ID, "the child's pid", func(r run) bool {
		return r.Output != nil && strings.Contains(*r.Output, "ready\n")
	})
	var pid int
	if _, err := fmt.Sscanf(*got.Output, "child %d\n", &pid); err != nil || pid <= 0 {
		t.Fatalf("output %q: no child pid: %v", *got.Output, err)
	}
	if c := e.cancel("", "alice", r.ID); c.Status != runs.StatusCancelled {
		t.Errorf("status %s, want cancelled", c.Status)
	}
	waitGone(t, pid, "child of the cancelled command")
}

// TestGroupKilledOnExit: when the command exits, what it left in its process
// group is killed.
func TestGroupKilledOnExit(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "orphan")})
	r := e.create("", "alice", appRepo, "W-1")
	got := e.waitSucceeded("alice", r.ID)
	var pid int
	if _, err := fmt.Sscanf(*got.Output, "child %d\n", &pid); err != nil || pid <= 0 {
		t.Fatalf("output %q: no child pid: %v", *got.Output, err)
	}
	waitGone(t, pid, "child of the finished command")
}

// waitGone waits until process pid (what) has ended; it fails t, and kills
// the process, when it still runs after 10 s. Signals are delivered
// asynchronously: a process killed a moment ago may still be there.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s (pid %d) still runs", what, pid)
		}
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func TestCancelStorageError(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "sleep"), MaxRunning: 1})
	first := e.create("", "alice", appRepo, "W-1")
	e.waitReady("alice", first.ID)
	queued := e.create("", "alice", appRepo, "W-2")
	q := req{method: "POST", path: "/a1/runs/" + queued.ID + "/cancel", user: "alice"}

	// The failing read before the write.
	e.failStorage(q)
	// The failing write: the read passes, the Update fails.
	var n int
	e.st.FailWith(func(op string) error {
		if op == "View" {
			return nil
		}
		n++
		return errors.New("disk on fire")
	})
	e.fails(q, testkit.WantError(errcat.StorageError, ""))
	e.st.FailWith(nil)
	if n != 1 {
		t.Errorf("%d writes tried, want 1", n)
	}
	if r := e.get("", "alice", queued.ID); r.Status != runs.StatusQueued || r.FinishedAt != nil {
		t.Errorf("run after failed cancel: %+v, want queued", r)
	}
	if r := e.cancel("", "alice", queued.ID); r.Status != runs.StatusCancelled {
		t.Errorf("second cancel: status %s, want cancelled", r.Status)
	}
	e.cancel("", "alice", first.ID)
}

// TestFinalWriteFails: a run whose final state could not be stored stays
// active in the store; a cancel ends it.
func TestFinalWriteFails(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "sleep-ms", "200")})
	r := e.create("", "alice", appRepo, "W-1")
	e.waitReady("alice", r.ID)
	fails := make(chan struct{}, 16)
	e.st.FailWith(func(op string) error {
		if op == "View" {
			return nil
		}
		fails <- struct{}{}
		return errors.New("disk on fire")
	})
	for range 4 { // every attempt of the supervisor fails
		select {
		case <-fails:
		case <-time.After(20 * time.Second):
			t.Fatal("no final write attempted")
		}
	}
	// Once the supervisor gave up, the output comes from the store (none).
	stale := e.waitFor("alice", r.ID, "the supervisor's end", func(r run) bool { return deref(r.Output) == "" })
	e.st.FailWith(nil)
	if stale.Status != runs.StatusRunning {
		t.Fatalf("status %s, want running (stale)", stale.Status)
	}
	e.fails(req{method: "POST", path: "/a1/runs", user: "alice",
		body: map[string]string{"runtime": "coding-agent", "repo": appRepo, "work_item": "W-1"}}, testkit.WantError(errcat.AgentBusy, ""))
	got := e.cancel("", "alice", r.ID)
	if got.Status != runs.StatusCancelled || got.Reason != runs.ReasonCancelled {
		t.Errorf("cancel of a stale run: %+v", got)
	}
	e.create("", "alice", appRepo, "W-1")
}
