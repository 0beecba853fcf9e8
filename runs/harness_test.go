package runs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/runs"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/google/go-cmp/cmp"
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
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
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

// req is one request. tenant "" means acme; admin gives the principal the
// tenant_admin role.
type req struct {
	method, path string
	tenant, user string
	admin        bool
	body         any // string sent verbatim, anything else as JSON
}

// newRequest builds q as the root's middleware hands it to a handler.
func newRequest(q req) (*http.Request, error) {
	var body []byte
	switch b := q.body.(type) {
	case nil:
	case string:
		body = []byte(b)
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			return nil, fmt.Errorf("body of %s %s: %w", q.method, q.path, err)
		}
	}
	r := httptest.NewRequest(q.method, q.path, bytes.NewReader(body))
	if q.user != "" {
		r.Header.Set(httpx.HeaderUserID, q.user)
	}
	tenant := q.tenant
	if tenant == "" {
		tenant = "acme"
	}
	role := auth.RoleMember
	if q.admin {
		role = auth.RoleTenantAdmin
	}
	p := &auth.Principal{Tenant: tenants[tenant], Role: role}
	return r.WithContext(auth.NewContext(r.Context(), p)), nil
}

// do sends q and returns the status and the raw body.
func (e *env) do(q req) (int, []byte) {
	e.t.Helper()
	r, err := newRequest(q)
	if err != nil {
		e.t.Fatal(err)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		e.t.Fatalf("%s %s: Content-Type %q, body %s", q.method, q.path, ct, w.Body)
	}
	return w.Code, w.Body.Bytes()
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

// decodeStrict decodes b into v, failing on fields v lacks.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// okInto sends q, wants status and decodes the body into v.
func (e *env) okInto(q req, status int, v any) {
	e.t.Helper()
	got, body := e.do(q)
	if got != status {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", q.method, q.path, got, status, body)
	}
	if err := decodeStrict(body, v); err != nil {
		e.t.Fatalf("%s %s: body %s: %v", q.method, q.path, body, err)
	}
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

// waitDoneIn is waitDone in tenant.
func (e *env) waitDoneIn(tenant, user, id string) run {
	e.t.Helper()
	return e.waitForIn(tenant, user, id, "a final status", func(r run) bool {
		return r.Status != runs.StatusQueued && r.Status != runs.StatusRunning
	})
}

// apiErr is the part of an error envelope the tests compare.
type apiErr struct {
	Status      int
	Code, Param string
}

// errOf returns the error of an answer, or the status alone for a success.
func errOf(status int, body []byte) apiErr {
	var env struct {
		Error struct {
			Code  string  `json:"code"`
			Param *string `json:"param"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &env)
	e := apiErr{Status: status, Code: env.Error.Code}
	if env.Error.Param != nil {
		e.Param = *env.Error.Param
	}
	return e
}

// wantErr is the expected apiErr of code, with the catalog's status.
func wantErr(code errcat.Code, param string) apiErr {
	return apiErr{Status: errcat.Lookup(code).HTTPStatus, Code: string(code), Param: param}
}

// fails sends q and compares its error with want.
func (e *env) fails(q req, want apiErr) {
	e.t.Helper()
	status, body := e.do(q)
	if diff := cmp.Diff(want, errOf(status, body)); diff != "" {
		e.t.Errorf("%s %s error mismatch (-want +got):\n%s", q.method, q.path, diff)
	}
}

// failStorage sends q with the store failing its next transaction and wants
// storage_error.
func (e *env) failStorage(q req) {
	e.t.Helper()
	e.st.FailNext(errors.New("disk on fire"))
	e.fails(q, wantErr(errcat.StorageError, ""))
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

func diffT(t *testing.T, what string, want, got any, opts ...cmp.Option) {
	t.Helper()
	if diff := cmp.Diff(want, got, opts...); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, diff)
	}
}

// cutStore is a store a test can cut off from the Service that uses it, as
// it is from a process that died: after cut, its writes fail.
type cutStore struct {
	store.Store
	cut atomic.Bool
}

var errCut = errors.New("cut off: the process is dead")

func (c *cutStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	if c.cut.Load() {
		return errCut
	}
	return c.Store.Update(ctx, fn)
}

func (c *cutStore) Batch(ctx context.Context, fn func(store.Tx) error) error {
	if c.cut.Load() {
		return errCut
	}
	return c.Store.Batch(ctx, fn)
}
