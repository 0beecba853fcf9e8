package runs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/runs"
)

// TestStoredProc: a running run's record names its command (pid, process
// group, start time, boot), which is what a restart needs to find it.
func TestStoredProc(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "tree")})
	r := e.create("", "alice", appRepo, "W-1")
	if p, err := runs.StoredProc(e.st, "acme", r.ID); err != nil || p != nil {
		t.Errorf("queued run: stored command %+v, %v; want none", p, err)
	}
	got := e.waitReady("alice", r.ID)
	leader, _ := treePids(t, *got.Output)
	p, err := runs.StoredProc(e.st, "acme", r.ID)
	if err != nil {
		t.Fatal(err)
	}
	pgid, start := procStat(t, leader)
	testkit.Diff(t, "stored command", &runs.Proc{PID: leader, PGID: pgid, Start: start, Boot: bootID(t)}, p)
	if pgid != leader {
		t.Errorf("process group %d, want the command's own (%d)", pgid, leader)
	}
	e.cancel("", "alice", r.ID)
}

// TestMarkRunningFails: a command whose run cannot be stored as running is
// killed at once, since a restart could not find it.
func TestMarkRunningFails(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "sleep")})
	updates := 0
	e.st.FailWith(func(op string) error {
		if op != "Update" {
			return nil
		}
		updates++
		if updates > 1 && updates <= 5 { // not the insert, every try of the running write
			return errors.New("disk on fire")
		}
		return nil
	})
	r := e.create("", "alice", appRepo, "W-1")
	got := e.waitDone("alice", r.ID) // "sleep" would run for an hour
	e.st.FailWith(nil)
	want := run{ID: r.ID, Runtime: "coding-agent", Repo: appRepo, WorkItem: "W-1", Status: runs.StatusFailed,
		CreatedAt: t0, FinishedAt: &t0, Reason: runs.ReasonStorageAtStart, UserID: "alice",
		Output: got.Output, OutputTruncated: ptr(false)}
	testkit.Diff(t, "run", want, got)
	e.cancel("", "alice", e.create("", "alice", appRepo, "W-1").ID) // the work item is free
}

// treePids returns the pids the "tree" helper printed: its own and its
// child's.
func treePids(t *testing.T, output string) (leader, child int) {
	t.Helper()
	if _, err := fmt.Sscanf(output, "leader %d\nchild %d\n", &leader, &child); err != nil {
		t.Fatalf("output %q: no pids: %v", output, err)
	}
	return leader, child
}

// procStat returns the process group and the start time (fields 5 and 22 of
// /proc/<pid>/stat) of process pid.
func procStat(t *testing.T, pid int) (pgid int, start uint64) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	pgid, _ = strconv.Atoi(f[2])
	start, _ = strconv.ParseUint(f[19], 10, 64)
	return pgid, start
}

// bootID returns the kernel's boot id.
func bootID(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
