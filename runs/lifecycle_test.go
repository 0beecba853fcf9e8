package runs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/runs"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/boltstore"
	"github.com/chatgw/gateway/store/memstore"
)

// TestConcurrencyLimit: at most MaxRunning commands run; the others start in
// creation order as slots free up.
func TestConcurrencyLimit(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "sleep"), MaxRunning: 2})
	var rs []run
	for i := range 5 {
		rs = append(rs, e.create("", "alice", appRepo, fmt.Sprintf("W-%d", i)))
	}
	statuses := func() []string {
		var out []string
		for _, r := range rs {
			out = append(out, e.get("", "alice", r.ID).Status)
		}
		return out
	}
	e.waitReady("alice", rs[0].ID)
	e.waitReady("alice", rs[1].ID)
	testkit.Diff(t, "statuses", []string{"running", "running", "queued", "queued", "queued"}, statuses())

	e.cancel("", "alice", rs[1].ID)
	e.waitReady("alice", rs[2].ID)
	testkit.Diff(t, "statuses after one cancel", []string{"running", "cancelled", "running", "queued", "queued"}, statuses())

	e.cancel("", "alice", rs[3].ID) // queued: frees no slot
	testkit.Diff(t, "statuses after a queued cancel", []string{"running", "cancelled", "running", "cancelled", "queued"}, statuses())

	e.cancel("", "alice", rs[0].ID)
	e.waitReady("alice", rs[4].ID)
	testkit.Diff(t, "final statuses", []string{"cancelled", "cancelled", "running", "cancelled", "running"}, statuses())
}

// TestRestart: a run that was running when a process ended is failed by the
// next Service over the store, and the old process cannot overwrite that; a
// run that waited in the queue is started by the next Service.
//
// The old process "dies" by losing its store (its Service lives on, and so
// does its running command, as when Pdeathsig is not there to kill it): the
// new Service must kill that command. The old Service claims its runs as a
// process that has ended (runs.ActAsEndedProcess), for the new one to tell
// it from a live replica. The store comes back before the old Service ends,
// to show its late writes change nothing.
func TestRestart(t *testing.T) {
	st := testkit.MemStore(t)
	cs := &testkit.CutStore{Store: st}
	first := newEnvOver(t, cs, runs.Config{Command: helperCmd(t, "sleep"), MaxRunning: 1})
	runs.ActAsEndedProcess(first.svc)
	running := first.create("", "alice", appRepo, "W-1")
	first.waitReady("alice", running.ID)
	queued := first.create("", "bob", appRepo, "W-2")
	done := first.create("globex", "carol", appRepo, "W-3") // queued, then cancelled: final
	first.cancel("globex", "carol", done.ID)
	pid := commandPid(t, st, "acme", running.ID)

	cs.Cut.Store(true)
	second := newEnvOver(t, st, runs.Config{Command: helperCmd(t, "exit", "0")})
	if alive(pid) {
		t.Errorf("command of the dead process (pid %d) still runs after New", pid)
	}
	second.waitDone("bob", queued.ID) // the queued run starts in the new process
	for _, tt := range []struct {
		tenant, user, id string
		status, reason   string
		started          bool
	}{
		{"acme", "alice", running.ID, runs.StatusFailed, runs.ReasonRestartedRunning, true},
		{"acme", "bob", queued.ID, runs.StatusSucceeded, "", true},
		{"globex", "carol", done.ID, runs.StatusCancelled, runs.ReasonCancelledQueued, false},
	} {
		got := second.get(tt.tenant, tt.user, tt.id)
		if got.Status != tt.status || got.Reason != tt.reason || (got.StartedAt != nil) != tt.started || got.FinishedAt == nil {
			t.Errorf("run of %s after restart: %+v; want %s (%q)", tt.user, got, tt.status, tt.reason)
		}
	}
	// Their work items are free in the new process.
	again := second.create("", "alice", appRepo, "W-1")
	second.waitDone("alice", again.ID)

	// The old process ends: its final write leaves the recovered state.
	cs.Cut.Store(false)
	if err := first.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if got := second.get("", "alice", running.ID); got.Reason != runs.ReasonRestartedRunning {
		t.Errorf("after the old Service closed: %+v, want the restart's reason", got)
	}
	if got := second.get("", "bob", queued.ID); got.Status != runs.StatusSucceeded {
		t.Errorf("queued run after the old Service closed: %+v", got)
	}
}

// TestRestartBolt: recovery over the bbolt store, and what it stored read
// back after the file is reopened. The old process dies as in TestRestart.
func TestRestartBolt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.db")
	db, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	cs := &testkit.CutStore{Store: db}
	first := newEnvOver(t, cs, runs.Config{Command: helperCmd(t, "sleep"), MaxRunning: 1})
	runs.ActAsEndedProcess(first.svc)
	running := first.create("", "alice", appRepo, "W-1")
	first.waitReady("alice", running.ID)
	queued := first.create("", "alice", appRepo, "W-2")
	done := first.create("", "alice", appRepo, "W-3")
	first.cancel("", "alice", done.ID)

	want := map[string]string{
		running.ID: runs.ReasonRestartedRunning,
		queued.ID:  "", // started by the new process: succeeded
		done.ID:    runs.ReasonCancelledQueued,
	}
	check := func(e *env, when string) {
		t.Helper()
		for id, reason := range want {
			if r := e.get("", "alice", id); r.Reason != reason || r.FinishedAt == nil {
				t.Errorf("run %s %s: %+v, want reason %q", id, when, r, reason)
			}
		}
		testkit.Diff(t, "runs "+when, []string{done.ID, queued.ID, running.ID}, ids(e.list(req{path: "/a1/runs", user: "alice"}))[1:])
	}
	pid := commandPid(t, db, "acme", running.ID)
	cs.Cut.Store(true)
	second := newEnvOver(t, db, runs.Config{Command: helperCmd(t, "exit", "0")})
	if alive(pid) {
		t.Errorf("command of the dead process (pid %d) still runs after New", pid)
	}
	again := second.create("", "alice", appRepo, "W-1")
	if r := second.waitDone("alice", again.ID); r.Status != runs.StatusSucceeded {
		t.Errorf("new run over bbolt: %+v", r)
	}
	second.waitDone("alice", queued.ID)
	check(second, "after the restart")
	cs.Cut.Store(false)
	if err := first.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := second.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	check(newEnvOver(t, db, runs.Config{}), "after reopening the file")
}

// commandPid returns the pid of the command of the running run id of
// tenant, as stored.
func commandPid(t *testing.T, st store.Store, tenant, id string) int {
	t.Helper()
	p, err := runs.StoredProc(st, tenant, id)
	if err != nil || p == nil {
		t.Fatalf("command of run %s: %+v, %v", id, p, err)
	}
	return p.PID
}

func TestNewStorageError(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	st.FailNext(errors.New("disk on fire"))
	if _, err := runs.New(runs.Config{Store: st}); err == nil {
		t.Fatal("New with a failing store: no error")
	}
	if _, err := runs.New(runs.Config{}); err == nil {
		t.Fatal("New without a store: no error")
	}
}

// TestClose: Close kills what runs, leaves what waits in the queue (for
// another replica, or the next start) and refuses new runs.
func TestClose(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "grandchild"), MaxRunning: 1, KillGrace: time.Minute})
	running := e.create("", "alice", appRepo, "W-1")
	got := e.waitReady("alice", running.ID)
	var child int
	if _, err := fmt.Sscanf(*got.Output, "child %d\n", &child); err != nil {
		t.Fatal(err)
	}
	queued := e.create("", "alice", appRepo, "W-2")

	start := time.Now()
	if err := e.svc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %v", d)
	}
	checkNoLeaks(t)
	waitGone(t, child, "child of the command running at Close")
	if err := e.svc.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	for _, tt := range []struct {
		id, status, reason string
	}{
		{running.ID, runs.StatusFailed, runs.ReasonShutdown + ": killed by signal 9 (killed)"},
		{queued.ID, runs.StatusQueued, ""},
	} {
		if r := e.get("", "alice", tt.id); r.Status != tt.status || r.Reason != tt.reason {
			t.Errorf("run after Close: %+v; want %s (%q)", r, tt.status, tt.reason)
		}
	}
	e.fails(req{method: "POST", path: "/a1/runs", user: "alice",
		body: map[string]string{"runtime": "coding-agent", "repo": appRepo, "work_item": "W-3"}}, testkit.WantError(errcat.InternalError, ""))
	// A restart finds nothing to recover; without a command it runs nothing.
	after := newEnvOver(t, e.st, runs.Config{})
	if r := after.get("", "alice", running.ID); r.Reason != runs.ReasonShutdown+": killed by signal 9 (killed)" {
		t.Errorf("after restart: %+v", r)
	}
	if r := after.get("", "alice", queued.ID); r.Status != runs.StatusQueued {
		t.Errorf("queued run on a Service without a command: %+v, want queued", r)
	}
	// One with a command starts the queued run.
	again := newEnvOver(t, e.st, runs.Config{Command: helperCmd(t, "exit", "0")})
	if r := again.waitDone("alice", queued.ID); r.Status != runs.StatusSucceeded {
		t.Errorf("queued run after a restart: %+v, want succeeded", r)
	}
}

// TestCloseRequeues: a run claimed while Close begins (by a Create in
// flight) is not started but put back in the queue, for another replica or
// the next start.
func TestCloseRequeues(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "exit", "0")})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.st.FailWith(func(op string) error { // holds the Create's transaction until released
		if op == "Update" {
			once.Do(func() {
				close(entered)
				<-release
			})
		}
		return nil
	})
	body := map[string]string{"runtime": "coding-agent", "repo": appRepo, "work_item": "W-1"}
	created := make(chan []byte, 1)
	go func() {
		r, _ := req{method: "POST", path: "/a1/runs", user: "alice", body: body}.kit().Build()
		created <- testkit.Record(e.h.ServeHTTP, r).Body.Bytes()
	}()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- e.svc.Close() }()
	for !runs.Closing(e.svc) {
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	var r run
	if err := json.Unmarshal(<-created, &r); err != nil || r.ID == "" {
		t.Fatalf("Create during Close: %v, %+v", err, r)
	}
	e.st.FailWith(nil)
	if got := e.get("", "alice", r.ID); got.Status != runs.StatusQueued || got.StartedAt != nil {
		t.Errorf("run claimed as Close began: %+v, want queued", got)
	}
	if holder, _, err := runs.StoredOwner(e.st, "acme", r.ID); err != nil || holder != "" {
		t.Errorf("run claimed as Close began: owner %q, %v; want none", holder, err)
	}
	again := newEnvOver(t, e.st, runs.Config{Command: helperCmd(t, "exit", "0")})
	if got := again.waitDone("alice", r.ID); got.Status != runs.StatusSucceeded {
		t.Errorf("requeued run after a restart: %+v, want succeeded", got)
	}
}

// TestCloseIdle: Close of a Service that never ran anything.
func TestCloseIdle(t *testing.T) {
	e := newEnv(t, runs.Config{})
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestList covers pagination, ordering and the tenant-wide view.
func TestList(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "exit", "0")})
	var alice, all []string // newest first
	for i := range 7 {
		user := "alice"
		if i%3 == 2 {
			user = "bob"
		}
		r := e.create("", user, appRepo, fmt.Sprintf("W-%d", i))
		e.waitDone(user, r.ID)
		if user == "alice" {
			alice = append([]string{r.ID}, alice...)
		}
		all = append([]string{r.ID}, all...)
	}
	other := e.create("globex", "alice", appRepo, "W-0")
	e.waitDoneIn("globex", "alice", other.ID)

	for _, tt := range []struct {
		query   string
		user    string
		admin   bool
		tenant  string
		want    []string
		limit   int
		offset  int
		hasMore bool
	}{
		{query: "", user: "alice", want: alice, limit: 50},
		{query: "?limit=2", user: "alice", want: alice[:2], limit: 2, hasMore: true},
		{query: "?limit=2&offset=2", user: "alice", want: alice[2:4], limit: 2, offset: 2, hasMore: true},
		{query: "?limit=2&offset=4", user: "alice", want: alice[4:], limit: 2, offset: 4},
		{query: "?limit=500&offset=5", user: "alice", want: []string{}, limit: 500, offset: 5},
		{query: "?offset=99", user: "alice", want: []string{}, limit: 50, offset: 99},
		{query: "", user: "bob", want: []string{all[1], all[4]}, limit: 50},
		{query: "", user: "carol", want: []string{}, limit: 50},
		{query: "", user: "alice", tenant: "globex", want: []string{other.ID}, limit: 50},
		{query: "", admin: true, want: all, limit: 50},
		{query: "?limit=3&offset=1", admin: true, want: all[1:4], limit: 3, offset: 1, hasMore: true},
		{query: "", user: "bob", admin: true, want: []string{all[1], all[4]}, limit: 50},
		{query: "", admin: true, tenant: "globex", want: []string{other.ID}, limit: 50},
		{query: "", admin: true, tenant: "empty", want: []string{}, limit: 50},
	} {
		name := fmt.Sprintf("%s user=%q admin=%v tenant=%q", tt.query, tt.user, tt.admin, tt.tenant)
		l := e.list(req{path: "/a1/runs" + tt.query, user: tt.user, admin: tt.admin, tenant: tt.tenant})
		got := struct {
			Object        string
			IDs           []string
			Limit, Offset int
			HasMore       bool
		}{l.Object, ids(l), l.Limit, l.Offset, l.HasMore}
		want := got
		want.Object, want.IDs, want.Limit, want.Offset, want.HasMore = "list", tt.want, tt.limit, tt.offset, tt.hasMore
		testkit.Diff(t, "list "+name, want, got)
	}

	for _, tt := range []struct {
		query string
		param string
	}{
		{"?limit=0", "query.limit"},
		{"?limit=501", "query.limit"},
		{"?limit=-1", "query.limit"},
		{"?limit=x", "query.limit"},
		{"?limit=", "query.limit"},
		{"?offset=-1", "query.offset"},
		{"?offset=1.5", "query.offset"},
		{"?limit=2&offset=-1", "query.offset"},
	} {
		e.fails(req{method: "GET", path: "/a1/runs" + tt.query, user: "alice"}, testkit.WantError(errcat.InvalidField, tt.param))
	}
	// Without GW-User-Id a member has no tenant-wide view.
	e.fails(req{method: "GET", path: "/a1/runs"}, testkit.WantError(errcat.MissingField, "headers.gw-user-id"))
	e.failStorage(req{method: "GET", path: "/a1/runs", user: "alice"})
}

// TestIsolation: a run is visible to its user, and to a tenant admin reading
// tenant-wide, and to no one else.
func TestIsolation(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "sleep")})
	r := e.create("", "alice", appRepo, "W-1")
	e.waitReady("alice", r.ID) // no store writes from here on
	notFound := testkit.WantError(errcat.CodingAgentRunNotFound, "run_id")
	for _, tt := range []struct {
		name, tenant, user string
		admin              bool
		want               testkit.Error // zero: visible
	}{
		{name: "owner", user: "alice"},
		{name: "admin tenant-wide", admin: true},
		{name: "admin as owner", admin: true, user: "alice"},
		{name: "other user", user: "bob", want: notFound},
		{name: "admin as other user", admin: true, user: "bob", want: notFound},
		{name: "user prefix", user: "alic", want: notFound},
		{name: "other tenant, same user", tenant: "globex", user: "alice", want: notFound},
		{name: "other tenant admin", tenant: "globex", admin: true, want: notFound},
		{name: "member without user", want: testkit.WantError(errcat.MissingField, "headers.gw-user-id")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			w := e.serve(req{method: "GET", path: "/a1/runs/" + r.ID, tenant: tt.tenant, user: tt.user, admin: tt.admin})
			testkit.CheckError(t, w, tt.want) // a 200 is the zero Error
			if tt.want == (testkit.Error{}) {
				if !strings.Contains(w.Body.String(), r.ID) {
					t.Errorf("body %s; want the run", w.Body)
				}
				return
			}
			if tt.want != notFound {
				return
			}
			// Nor can they cancel it (with a user: cancel needs one).
			if tt.user != "" {
				e.fails(req{method: "POST", path: "/a1/runs/" + r.ID + "/cancel", tenant: tt.tenant, user: tt.user, admin: tt.admin}, notFound)
			}
		})
	}
	e.t = t
	// Unknown ids.
	for _, id := range []string{"run_00000000000000000000000000000000", "x", strings.Repeat("y", 300)} {
		e.fails(req{method: "GET", path: "/a1/runs/" + id, user: "alice"}, notFound)
		e.fails(req{method: "POST", path: "/a1/runs/" + id + "/cancel", user: "alice"}, notFound)
		e.fails(req{method: "GET", path: "/a1/runs/" + id, admin: true}, notFound)
	}
	// Cancel needs a user, even an admin's.
	e.fails(req{method: "POST", path: "/a1/runs/" + r.ID + "/cancel", admin: true}, testkit.WantError(errcat.MissingField, "headers.gw-user-id"))
	e.failStorage(req{method: "GET", path: "/a1/runs/" + r.ID, user: "alice"})
	if got := e.get("", "alice", r.ID); got.Status != runs.StatusQueued && got.Status != runs.StatusRunning {
		t.Errorf("run after the others' attempts: %s, want active", got.Status)
	}
	e.cancel("", "alice", r.ID)
}
