package runs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/runs"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/pgstore"
)

// Two Services over one store stand for two gateway replicas sharing a
// database; they share one fake clock, by which leases expire. Their loops
// wait an hour (newEnvAt) unless a test says otherwise: the tests run
// heartbeats and polls by hand with runs.Heartbeat and runs.Poll.

// replicaTimings are the lease timings of the replicas of these tests.
var replicaTimings = runs.Config{LeaseDuration: 30 * time.Second, HeartbeatInterval: 10 * time.Second, PollInterval: time.Hour}

// replicaConfig is replicaTimings with the command of the helper behaviour
// args.
func replicaConfig(t *testing.T, args ...string) runs.Config {
	cfg := replicaTimings
	cfg.Command = helperCmd(t, args...)
	return cfg
}

// TestClaimOnce: many queued runs and two replicas claiming them at once
// (two slots each, and a command that holds its slot a while): every run is
// started exactly once, and both replicas start some.
func TestClaimOnce(t *testing.T) {
	st := testkit.MemStore(t)
	testClaimOnce(t, st, st)
}

// TestClaimOncePostgres is TestClaimOnce on PostgreSQL, each replica with a
// connection pool of its own (skipped without PostgreSQL).
func TestClaimOncePostgres(t *testing.T) {
	url := pgtest.New(t).NewDatabase(t)
	open := func() store.Store {
		db, err := pgstore.Open(context.Background(), url)
		if err != nil {
			t.Fatalf("pgstore.Open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	testClaimOnce(t, open(), open())
}

func testClaimOnce(t *testing.T, stA, stB store.Store) {
	const n = 12
	var ids []string
	for i := range n {
		id := fmt.Sprintf("run_%032x", i+1)
		tenant := []string{"acme", "globex"}[i%2]
		if err := runs.StoreQueued(stA, tenant, "alice", appRepo, fmt.Sprintf("W-%d", i), id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	marks := filepath.Join(t.TempDir(), "marks")
	clk := clock.NewFake(t0)
	cfg := replicaConfig(t, "mark", marks, "200")
	cfg.MaxRunning, cfg.PollInterval = 2, 5*time.Millisecond
	a := newEnvAt(t, stA, clk, cfg) // claims two at New
	b := newEnvAt(t, stB, clk, cfg) // and so does b, while a's run
	perHolder := map[string]int{}
	for i, id := range ids {
		tenant := []string{"acme", "globex"}[i%2]
		if r := a.waitDoneIn(tenant, "alice", id); r.Status != runs.StatusSucceeded {
			t.Errorf("run %s: %+v, want succeeded", id, r)
		}
		holder, _, err := runs.StoredOwner(stA, tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		perHolder[holder]++
	}
	b.waitDoneIn("acme", "alice", ids[0]) // b reads the same store
	raw, err := os.ReadFile(marks)
	if err != nil {
		t.Fatal(err)
	}
	started := strings.Fields(string(raw))
	slices.Sort(started)
	testkit.Diff(t, "runs started", ids, started)
	if perHolder[runs.Holder(a.svc)] == 0 || perHolder[runs.Holder(b.svc)] == 0 || len(perHolder) != 2 {
		t.Errorf("runs per replica %v; want some by each of %s and %s", perHolder, runs.Holder(a.svc), runs.Holder(b.svc))
	}
}

// TestQueuedRunOnOtherReplica: a run queued on a replica without a free
// slot is started by another replica's poll, also once its creator died;
// the oldest queued run first, whatever its tenant.
func TestQueuedRunOnOtherReplica(t *testing.T) {
	st := testkit.MemStore(t)
	cs := &testkit.CutStore{Store: st}
	clk := clock.NewFake(t0)
	cfgA := replicaConfig(t, "sleep")
	cfgA.MaxRunning = 1
	a := newEnvAt(t, cs, clk, cfgA)
	busy := a.create("", "alice", appRepo, "W-1")
	a.waitReady("alice", busy.ID)
	first := a.create("globex", "carol", appRepo, "W-2")
	second := a.create("", "alice", appRepo, "W-3")
	cs.Cut.Store(true) // a dies: its own run stays running until its lease expires

	cfgB := replicaConfig(t, "sleep")
	cfgB.MaxRunning = 1
	b := newEnvAt(t, st, clk, cfgB) // claims the oldest queued run at New
	b.waitForIn("globex", "carol", first.ID, "ready", func(r run) bool {
		return r.Status == runs.StatusRunning && strings.Contains(deref(r.Output), "ready\n")
	})
	if r := b.get("", "alice", second.ID); r.Status != runs.StatusQueued {
		t.Errorf("younger queued run: %s, want queued (b's one slot is taken)", r.Status)
	}
	b.cancel("globex", "carol", first.ID) // frees b's slot: the next queued run starts
	b.waitReady("alice", second.ID)
	b.cancel("", "alice", second.ID)
	cs.Cut.Store(false)
	if err := a.svc.Close(); err != nil { // before b's cleanup looks for goroutines left
		t.Fatal(err)
	}
}

// TestDeadReplica: the run of a replica that stopped renewing its lease (its
// store cut, as when it dies) is failed by another replica once the lease has
// expired, and not before; what it left running on this machine is killed
// first, and its work item is free again. The dead replica, back, changes
// nothing.
func TestDeadReplica(t *testing.T) {
	st := testkit.MemStore(t)
	cs := &testkit.CutStore{Store: st}
	clk := clock.NewFake(t0)
	a := newEnvAt(t, cs, clk, replicaConfig(t, "sleep"))
	b := newEnvAt(t, st, clk, replicaConfig(t, "exit", "0"))
	r := a.create("", "alice", appRepo, "W-1")
	a.waitReady("alice", r.ID)
	pid := commandPid(t, st, "acme", r.ID)
	_, until, err := runs.StoredOwner(st, "acme", r.ID)
	if err != nil || !until.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("lease until %v, %v; want %v", until, err, t0.Add(30*time.Second))
	}
	cs.Cut.Store(true) // a dies

	clk.Set(until.Add(-time.Nanosecond))
	runs.Poll(b.svc)
	if got := b.get("", "alice", r.ID); got.Status != runs.StatusRunning || !alive(pid) {
		t.Fatalf("before the lease expired: %+v, command alive %v; want running", got, alive(pid))
	}
	clk.Set(until)
	runs.Poll(b.svc)
	if alive(pid) { // the poll returns once what it killed has ended
		t.Errorf("command of the dead replica's run (pid %d) still runs", pid)
	}
	got := b.get("", "alice", r.ID)
	if got.Status != runs.StatusFailed || got.Reason != runs.ReasonLostRunning || got.FinishedAt == nil {
		t.Errorf("run of the dead replica: %+v; want failed (%s)", got, runs.ReasonLostRunning)
	}
	b.waitDone("alice", b.create("", "alice", appRepo, "W-1").ID) // the work item is free

	cs.Cut.Store(false)
	if err := a.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if again := b.get("", "alice", r.ID); again.Reason != runs.ReasonLostRunning {
		t.Errorf("after the dead replica closed: %+v, want %s", again, runs.ReasonLostRunning)
	}
}

// TestReplicaCutOff: a replica on another machine that could not reach the
// store for longer than its lease finds, at its next heartbeat, that another
// replica failed its run, and stops the command itself (the other replica
// cannot see it).
func TestReplicaCutOff(t *testing.T) {
	st := testkit.MemStore(t)
	cs := &testkit.CutStore{Store: st}
	clk := clock.NewFake(t0)
	a := newEnvAt(t, cs, clk, replicaConfig(t, "sleep"))
	runs.ActAsOtherMachine(a.svc)
	b := newEnvAt(t, st, clk, replicaConfig(t, "exit", "0"))
	r := a.create("", "alice", appRepo, "W-1")
	a.waitReady("alice", r.ID)
	pid := commandPid(t, st, "acme", r.ID)

	cs.Cut.Store(true)
	runs.Heartbeat(a.svc) // fails: the lease is not renewed
	clk.Advance(30 * time.Second)
	runs.Poll(b.svc)
	if got := b.get("", "alice", r.ID); got.Status != runs.StatusFailed || got.Reason != runs.ReasonLostRunning {
		t.Fatalf("run of the cut-off replica: %+v; want failed (%s)", got, runs.ReasonLostRunning)
	}
	if !alive(pid) {
		t.Fatal("b killed the command of a replica on another machine")
	}
	cs.Cut.Store(false)
	runs.Heartbeat(a.svc)
	waitGone(t, pid, "command of a run the replica lost")
	a.waitDone("alice", r.ID)
	if got := b.get("", "alice", r.ID); got.Reason != runs.ReasonLostRunning {
		t.Errorf("after the cut-off replica stopped its command: %+v, want %s", got, runs.ReasonLostRunning)
	}
}

// TestCancelOnOtherReplica: a cancel received by a replica that does not run
// the run stops its command on the replica that does, and answers, as a
// local cancel does, once the command has ended; a queued run is cancelled
// at once by whichever replica receives the cancel.
func TestCancelOnOtherReplica(t *testing.T) {
	st := testkit.MemStore(t)
	clk := clock.NewFake(t0)
	cfg := replicaConfig(t, "sleep")
	cfg.MaxRunning, cfg.PollInterval, cfg.KillGrace = 1, 5*time.Millisecond, time.Minute
	a := newEnvAt(t, st, clk, cfg)
	b := newEnvAt(t, st, clk, cfg)
	runs.ActAsOtherMachine(b.svc) // b cannot signal a's commands

	r := a.create("", "alice", appRepo, "W-1")
	a.waitReady("alice", r.ID)
	pid := commandPid(t, st, "acme", r.ID)
	got := b.cancel("", "alice", r.ID)
	want := run{ID: r.ID, Runtime: "coding-agent", Repo: appRepo, WorkItem: "W-1", Status: runs.StatusCancelled,
		CreatedAt: t0, StartedAt: &t0, FinishedAt: &t0, Reason: runs.ReasonCancelled + ": killed by signal 15 (terminated)",
		UserID: "alice"}
	testkit.Diff(t, "cancel answer from the other replica", want, got)
	waitGone(t, pid, "command of the run cancelled on the other replica")
	testkit.Diff(t, "second cancel", want, b.cancel("", "alice", r.ID))

	// A queued run, while both replicas' one slot is taken.
	busyA := a.create("", "alice", appRepo, "W-2")
	a.waitReady("alice", busyA.ID)
	busyB := b.create("", "bob", appRepo, "W-3")
	b.waitReady("bob", busyB.ID)
	queued := a.create("", "alice", appRepo, "W-4")
	want = run{ID: queued.ID, Runtime: "coding-agent", Repo: appRepo, WorkItem: "W-4", Status: runs.StatusCancelled,
		CreatedAt: t0, FinishedAt: &t0, Reason: runs.ReasonCancelledQueued, UserID: "alice"}
	testkit.Diff(t, "queued run cancelled on the other replica", want, b.cancel("", "alice", queued.ID))
	b.cancel("", "alice", busyA.ID)
	a.cancel("", "bob", busyB.ID)
}

// TestOutputOnOtherReplica: a replica that does not run a running run shows
// the output tail its owner stored at its last heartbeat, and the final
// output once it ended.
func TestOutputOnOtherReplica(t *testing.T) {
	st := testkit.MemStore(t)
	clk := clock.NewFake(t0)
	a := newEnvAt(t, st, clk, replicaConfig(t, "trap-term"))
	b := newEnvAt(t, st, clk, replicaConfig(t, "exit", "0"))
	r := a.create("", "alice", appRepo, "W-1")
	a.waitReady("alice", r.ID)
	if got := b.get("", "alice", r.ID); got.Status != runs.StatusRunning || deref(got.Output) != "" {
		t.Errorf("before a heartbeat: %+v, want running without output", got)
	}
	clk.Advance(10 * time.Second)
	runs.Heartbeat(a.svc)
	got := b.get("", "alice", r.ID)
	if got.Status != runs.StatusRunning || deref(got.Output) != "ready\n" || got.OutputTruncated == nil || *got.OutputTruncated {
		t.Errorf("after a heartbeat: %+v, want running with output %q", got, "ready\n")
	}
	if _, until, _ := runs.StoredOwner(st, "acme", r.ID); !until.Equal(t0.Add(40 * time.Second)) {
		t.Errorf("lease until %v after the heartbeat, want %v", until, t0.Add(40*time.Second))
	}
	a.cancel("", "alice", r.ID)
	if got := b.get("", "alice", r.ID); got.Status != runs.StatusCancelled || deref(got.Output) != "ready\ngot SIGTERM\n" {
		t.Errorf("after the end: %+v, want cancelled with the whole output", got)
	}
}

// TestRecoveryLeavesLiveReplicas: a Service starting over a store where live
// replicas run runs (one in this process, one on another machine) kills
// nothing and fails nothing of them.
func TestRecoveryLeavesLiveReplicas(t *testing.T) {
	st := testkit.MemStore(t)
	clk := clock.NewFake(t0)
	local := newEnvAt(t, st, clk, replicaConfig(t, "sleep"))
	remote := newEnvAt(t, st, clk, replicaConfig(t, "sleep"))
	runs.ActAsOtherMachine(remote.svc)
	r1 := local.create("", "alice", appRepo, "W-1")
	r2 := remote.create("", "alice", appRepo, "W-2")
	local.waitReady("alice", r1.ID)
	remote.waitReady("alice", r2.ID)
	pids := []int{commandPid(t, st, "acme", r1.ID), commandPid(t, st, "acme", r2.ID)}

	restarted := newEnvAt(t, st, clk, replicaConfig(t, "exit", "0"))
	for i, id := range []string{r1.ID, r2.ID} {
		if got := restarted.get("", "alice", id); got.Status != runs.StatusRunning || !alive(pids[i]) {
			t.Errorf("run %s of a live replica after another started: %+v, command alive %v; want running", id, got, alive(pids[i]))
		}
	}
	local.cancel("", "alice", r1.ID)
	remote.cancel("", "alice", r2.ID)
}

// TestTimings: the defaults of the lease timings, and a lease too short for
// its heartbeat refused.
func TestTimings(t *testing.T) {
	st := testkit.MemStore(t)
	svc, err := runs.New(runs.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	hb, lease, poll := runs.Timings(svc)
	testkit.Diff(t, "default timings", []time.Duration{5 * time.Second, 30 * time.Second, time.Second}, []time.Duration{hb, lease, poll})
	_, err = runs.New(runs.Config{Store: st, HeartbeatInterval: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "LeaseDuration") {
		t.Errorf("New with a 30 s lease and a 20 s heartbeat: %v, want an error naming LeaseDuration", err)
	}
}

// TestSweepClaimedNotStarted: a run claimed by a replica that died before
// its command started is failed by another replica's poll with
// ReasonLostQueued.
func TestSweepClaimedNotStarted(t *testing.T) {
	e := newEnv(t, replicaConfig(t, "exit", "0"))
	const id = "run_0123456789abcdef0123456789abcdef"
	if err := runs.StoreRun(e.st, "acme", "alice", appRepo, "W-1", id, nil); err != nil { // lease long expired
		t.Fatal(err)
	}
	runs.Poll(e.svc)
	if got := e.get("", "alice", id); got.Status != runs.StatusFailed || got.Reason != runs.ReasonLostQueued || got.StartedAt != nil {
		t.Errorf("run claimed by a dead replica: %+v; want failed (%s)", got, runs.ReasonLostQueued)
	}
}
