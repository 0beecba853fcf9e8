package runs_test

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/runs"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/julienschmidt/httprouter"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// The tenants of the tests: acme allows two repositories (one written in a
// non-canonical form), globex allows acme's app too, and empty allows none.
var tenants = map[string]*auth.Tenant{
	"acme": {ID: "acme", Settings: auth.Settings{CodingAgentRepos: []string{
		"HTTPS://GitHub.com/Acme/App.git/", "https://github.com/acme/other", "not a url"}}},
	"globex": {ID: "globex", Settings: auth.Settings{CodingAgentRepos: []string{"https://github.com/acme/app"}}},
	"empty":  {ID: "empty"},
}

const appRepo = "https://github.com/acme/app"

// env is a runs Service behind the routes the root wires, with a stand-in for
// the root's auth middleware.
type env struct {
	t   *testing.T
	st  *memstore.Store
	clk *clock.Fake
	svc *runs.Service
	h   http.Handler
}

// newEnv builds a Service over a fresh store with cfg (Store and Clock are
// filled in); it is closed, and checked for leaked goroutines, at cleanup.
func newEnv(t *testing.T, cfg runs.Config) *env {
	t.Helper()
	st := testkit.MemStore(t)
	return newEnvOver(t, st, cfg)
}

// newEnvOver builds a Service over st (a restart keeps the store). Only a
// *memstore.Store can fail on request (env.st).
func newEnvOver(t *testing.T, st store.Store, cfg runs.Config) *env {
	t.Helper()
	return newEnvAt(t, st, clock.NewFake(t0), cfg)
}

// newEnvAt builds a Service over st with the clock clk, which replicas over
// one store share. The loop's heartbeat and poll wait an hour unless cfg says
// otherwise (a test drives them with runs.Heartbeat and runs.Poll), so that
// their transactions take no failure a test injects.
func newEnvAt(t *testing.T, st store.Store, clk *clock.Fake, cfg runs.Config) *env {
	t.Helper()
	e := &env{t: t, clk: clk}
	e.st, _ = st.(*memstore.Store)
	cfg.Store, cfg.Clock = st, e.clk
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = time.Hour
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = time.Hour
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = 2 * cfg.HeartbeatInterval
	}
	if os.Getenv("RUNS_TEST_LOG") != "" { // RUNS_TEST_LOG=1 go test shows the Service's log
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	svc, err := runs.New(cfg)
	if err != nil {
		t.Fatalf("runs.New: %v", err)
	}
	e.svc = svc
	t.Cleanup(func() {
		if err := svc.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		checkNoLeaks(t)
	})
	e.h = routes(svc)
	return e
}

// routes serves the handlers of svc under the paths the root wires.
func routes(svc *runs.Service) http.Handler {
	r := httprouter.New()
	for _, rt := range []struct {
		method, path string
		h            http.HandlerFunc
	}{
		// The route list of the report, as the root wires it.
		{"GET", "/a1/runtimes", svc.Runtimes},
		{"POST", "/a1/runs", svc.Create},
		{"GET", "/a1/runs", svc.List},
		{"GET", "/a1/runs/:id", svc.Get},
		{"POST", "/a1/runs/:id/cancel", svc.Cancel},
	} {
		r.Handler(rt.method, rt.path, rt.h)
	}
	return r
}

// checkNoLeaks fails t when goroutines of package runs outlive Close. The
// loop of a Service (started by New) is left out: Close returns only once
// its loop has, and other Services of the test may still run theirs.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		left = left[:0]
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "chatgw/gateway/runs.") && !strings.Contains(g, "created by github.com/chatgw/gateway/runs.New") {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return
		}
	}
	t.Errorf("goroutines of package runs left after Close:\n%s", strings.Join(left, "\n\n"))
}

// req is one request in the words of the runs tests: tenant "" means acme;
// admin gives the principal the tenant_admin role instead of member.
type req struct {
	method, path string
	tenant, user string
	admin        bool
	body         any // string sent verbatim, anything else as JSON
}

// kit returns q as the testkit.Request the root's middleware would hand a
// handler, with the principal of q's tenant and role.
func (q req) kit() testkit.Request {
	tenant := q.tenant
	if tenant == "" {
		tenant = "acme"
	}
	p := testkit.Member(tenants[tenant])
	if q.admin {
		p.Role = auth.RoleTenantAdmin
	}
	return testkit.Request{Method: q.method, Target: q.path, User: q.user, Body: q.body, Principal: p}
}

// serve sends q through the routes.
func (e *env) serve(q req) *httptest.ResponseRecorder {
	e.t.Helper()
	return testkit.Serve(e.t, e.h, q.kit())
}

// run is a run as the API answers it.
type run struct {
	ID              string     `json:"id"`
	Runtime         string     `json:"runtime"`
	Repo            string     `json:"repo"`
	WorkItem        string     `json:"work_item"`
	Status          string     `json:"status"`
	CreatedAt       time.Time  `json:"created_at"`
	StartedAt       *time.Time `json:"started_at"`
	FinishedAt      *time.Time `json:"finished_at"`
	ExitCode        *int       `json:"exit_code"`
	Reason          string     `json:"reason"`
	UserID          string     `json:"user_id"`
	Output          *string    `json:"output"`
	OutputTruncated *bool      `json:"output_truncated"`
}

// runList is the answer of GET /a1/runs.
type runList struct {
	Object  string `json:"object"`
	Data    []run  `json:"data"`
	Limit   int    `json:"limit"`
	Offset  int    `json:"offset"`
	HasMore bool   `json:"has_more"`
}

// okInto sends q, wants status and decodes the body into v, failing on a
// member v lacks: the tests pin every member of a run.
func (e *env) okInto(q req, status int, v any) {
	e.t.Helper()
	testkit.DecodeStrict(e.t, e.serve(q), status, v)
}

// create starts a run of the coding agent for user of tenant ("" acme) and
// returns it.
func (e *env) create(tenant, user, repo, workItem string) run {
	e.t.Helper()
	var r run
	e.okInto(req{method: "POST", path: "/a1/runs", tenant: tenant, user: user,
		body: map[string]string{"runtime": "coding-agent", "repo": repo, "work_item": workItem}}, http.StatusCreated, &r)
	return r
}

// get reads a run.
func (e *env) get(tenant, user, id string) run {
	e.t.Helper()
	var r run
	e.okInto(req{method: "GET", path: "/a1/runs/" + id, tenant: tenant, user: user}, http.StatusOK, &r)
	return r
}

// cancel cancels a run and returns the answer.
func (e *env) cancel(tenant, user, id string) run {
	e.t.Helper()
	var r run
	e.okInto(req{method: "POST", path: "/a1/runs/" + id + "/cancel", tenant: tenant, user: user}, http.StatusOK, &r)
	return r
}

// list reads GET /a1/runs?query.
func (e *env) list(q req) runList {
	e.t.Helper()
	var l runList
	q.method = "GET"
	e.okInto(q, http.StatusOK, &l)
	return l
}

// waitFor polls GET /a1/runs/{id} (acme) until cond holds, and returns the run.
func (e *env) waitFor(user, id string, what string, cond func(run) bool) run {
	e.t.Helper()
	return e.waitForIn("", user, id, what, cond)
}

// waitForIn is waitFor in tenant.
func (e *env) waitForIn(tenant, user, id string, what string, cond func(run) bool) run {
	e.t.Helper()
	var r run
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if r = e.get(tenant, user, id); cond(r) {
			return r
		}
	}
	e.t.Fatalf("run %s: timed out waiting for %s; last %+v", id, what, r)
	return r
}

// waitReady waits until the run's command printed "ready" (it then handles
// signals as its behaviour says).
func (e *env) waitReady(user, id string) run {
	e.t.Helper()
	return e.waitFor(user, id, "ready", func(r run) bool {
		return r.Status == runs.StatusRunning && r.Output != nil && strings.Contains(*r.Output, "ready\n")
	})
}

// waitDone waits until the run is final.
func (e *env) waitDone(user, id string) run {
	e.t.Helper()
	return e.waitDoneIn("", user, id)
}

// waitSucceeded waits until the run is final and fails the test unless it
// succeeded.
func (e *env) waitSucceeded(user, id string) run {
	e.t.Helper()
	r := e.waitDone(user, id)
	if r.Status != runs.StatusSucceeded {
		e.t.Fatalf("run %+v, want succeeded", r)
	}
	return r
}

// waitDoneIn is waitDone in tenant.
func (e *env) waitDoneIn(tenant, user, id string) run {
	e.t.Helper()
	return e.waitForIn(tenant, user, id, "a final status", func(r run) bool {
		return r.Status != runs.StatusQueued && r.Status != runs.StatusRunning
	})
}

// fails sends q and compares its error with want.
func (e *env) fails(q req, want testkit.Error) {
	e.t.Helper()
	testkit.CheckError(e.t, e.serve(q), want)
}

// failStorage sends q with the store failing its next transaction and wants
// storage_error.
func (e *env) failStorage(q req) {
	e.t.Helper()
	e.st.FailNext(errors.New("disk on fire"))
	e.fails(q, testkit.WantError(errcat.StorageError, ""))
}

// helperCmd is the command line that runs the test binary as the helper
// program with args (see helper_test.go).
func helperCmd(t *testing.T, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(exe, " \t\n") {
		t.Skipf("test binary path %q has spaces; the command is split on them", exe)
	}
	return strings.Join(append([]string{exe, helperArg}, args...), " ")
}

func ptr[T any](v T) *T { return &v }
