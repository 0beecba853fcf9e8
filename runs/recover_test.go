package runs_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/runs"
)

// TestRecoverLeftovers: what New kills of the runs a dead gateway process
// left active, depending on what the store says of their command and what
// runs. Each case starts a real "tree" (a command and its child in a process
// group of their own), stores the run as the dead process would have, and
// starts a Service over the store.
func TestRecoverLeftovers(t *testing.T) {
	for i, tt := range []struct {
		name       string
		withRunID  bool   // the tree carries the run's GW_RUN_ID
		leaderDead bool   // the command died with the gateway (Pdeathsig); its child lives on
		stored     string // the command stored: "command", "recycled" (its pid, another start time), "no start", "other boot", "none" (queued)
		killed     bool
		reason     string
	}{
		{"command runs", false, false, "command", true, runs.ReasonRestartedRunning},
		{"command runs, the tree carries the run id", true, false, "command", true, runs.ReasonRestartedRunning},
		{"command died, its child carries the run id", true, true, "command", true, runs.ReasonRestartedRunning},
		{"command died, its child without the run id", false, true, "command", false, runs.ReasonRestartedRunning},
		{"recycled pid", false, false, "recycled", false, runs.ReasonRestartedRunning},
		{"start time unknown", false, false, "no start", false, runs.ReasonRestartedRunning},
		{"another boot", true, false, "other boot", false, runs.ReasonRestartedRunning},
		{"died before stored running, child carries the run id", true, true, "none", true, runs.ReasonRestartedRunning},
		{"queued, nothing of it runs", false, false, "none", false, runs.ReasonRestartedQueued},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("run_%032x", i+1)
			runID := ""
			if tt.withRunID {
				runID = id
			}
			tr := startTree(t, runID)
			p := tr.proc(t)
			switch tt.stored {
			case "recycled":
				p.Start++
			case "no start":
				p.Start = 0
			case "other boot":
				p.Boot = "another-boot"
			case "none":
				p = nil
			}
			if tt.leaderDead {
				tr.killLeader(t)
			}
			st := testkit.MemStore(t)
			if err := runs.StoreRun(st, "acme", "alice", appRepo, "W-1", id, p); err != nil {
				t.Fatal(err)
			}

			e := newEnvOver(t, st, runs.Config{Command: helperCmd(t, "exit", "0")})
			for _, pr := range []struct {
				pid  int
				what string
				runs bool
			}{
				{tr.leader, "command", !tt.killed && !tt.leaderDead},
				{tr.child, "child", !tt.killed},
			} {
				if got := alive(pr.pid); got != pr.runs { // New waits until what it killed has ended
					t.Errorf("%s (pid %d) alive %v after New, want %v", pr.what, pr.pid, got, pr.runs)
				}
			}
			got := e.get("", "alice", id)
			if got.Status != runs.StatusFailed || got.Reason != tt.reason || got.FinishedAt == nil {
				t.Errorf("run after the restart: %+v; want failed, %q", got, tt.reason)
			}
			if again := e.waitDone("alice", e.create("", "alice", appRepo, "W-1").ID); again.Status != runs.StatusSucceeded {
				t.Errorf("new run of the work item: %+v", again)
			}
		})
	}
}

// TestCancelStaleKills: cancelling an active run that no process of this
// Service runs (one left by an earlier process, which New did not end) kills
// what it still runs before the work item is freed.
func TestCancelStaleKills(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "exit", "0")})
	const id = "run_0123456789abcdef0123456789abcdef"
	tr := startTree(t, id)
	p := tr.proc(t)
	tr.killLeader(t) // the command died with its gateway; its child lives on
	if err := runs.StoreRun(e.st, "acme", "alice", appRepo, "W-1", id, p); err != nil {
		t.Fatal(err)
	}
	got := e.cancel("", "alice", id)
	if got.Status != runs.StatusCancelled || got.Reason != runs.ReasonCancelled {
		t.Errorf("cancel answered %+v, want cancelled (%s)", got, runs.ReasonCancelled)
	}
	if alive(tr.child) { // the answer comes once it has ended
		t.Errorf("child of the stale run's command (pid %d) still runs after the cancel", tr.child)
	}
	e.waitDone("alice", e.create("", "alice", appRepo, "W-1").ID)
}

// tree is a "tree" helper started by a test: a command in a process group of
// its own, and its child.
type tree struct {
	cmd           *exec.Cmd
	leader, child int
}

// startTree starts a tree, with GW_RUN_ID=runID in its environment unless
// runID is "". Its process group is killed at cleanup.
func startTree(t *testing.T, runID string) tree {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tr := tree{cmd: exec.Command(exe, helperArg, "tree")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, runs.EnvRunID+"=") {
			tr.cmd.Env = append(tr.cmd.Env, kv)
		}
	}
	if runID != "" {
		tr.cmd.Env = append(tr.cmd.Env, runs.EnvRunID+"="+runID)
	}
	tr.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr strings.Builder
	tr.cmd.Stderr = &stderr
	out, err := tr.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-tr.cmd.Process.Pid, syscall.SIGKILL)
		_ = tr.cmd.Wait()
	})
	tr.leader, tr.child = treePids(t, strings.Join(readUntil(t, out, "ready", &stderr), "\n")+"\n")
	return tr
}

// proc is the identity of the tree's command as a run record holds it.
func (tr tree) proc(t *testing.T) *runs.Proc {
	t.Helper()
	pgid, start := procStat(t, tr.leader)
	return &runs.Proc{PID: tr.leader, PGID: pgid, Start: start, Boot: bootID(t)}
}

// killLeader kills and reaps the tree's command, as Pdeathsig does when the
// gateway dies; its child lives on in the group.
func (tr tree) killLeader(t *testing.T) {
	t.Helper()
	if err := tr.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = tr.cmd.Wait()
	if !alive(tr.child) {
		t.Fatal("the child ended with the command")
	}
}
