package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// Page-size limits of GET /a1/runs (those of GET /c1/conversations).
const (
	DefaultLimit = httpx.DefaultPageLimit
	MaxLimit     = httpx.MaxPageLimit
)

// runtimeJSON is one entry of GET /a1/runtimes.
type runtimeJSON struct {
	Name string `json:"name"`
	Runs bool   `json:"runs"`
}

// runJSON is a run on the wire. Output and OutputTruncated are set on
// GET /a1/runs/{id} only.
type runJSON struct {
	ID              string     `json:"id"`
	Runtime         string     `json:"runtime"`
	Repo            string     `json:"repo"`
	WorkItem        string     `json:"work_item"`
	Status          string     `json:"status"`
	CreatedAt       time.Time  `json:"created_at"`
	StartedAt       *time.Time `json:"started_at,omitempty"`
	FinishedAt      *time.Time `json:"finished_at,omitempty"`
	ExitCode        *int       `json:"exit_code,omitempty"`
	Reason          string     `json:"reason,omitempty"`
	UserID          string     `json:"user_id"`
	Output          *string    `json:"output,omitempty"`
	OutputTruncated *bool      `json:"output_truncated,omitempty"`
}

func wire(rec record) runJSON {
	return runJSON{
		ID: rec.ID, Runtime: rec.Runtime, Repo: rec.Repo, WorkItem: rec.WorkItem,
		Status: rec.Status, CreatedAt: rec.CreatedAt, StartedAt: rec.StartedAt,
		FinishedAt: rec.FinishedAt, ExitCode: rec.ExitCode, Reason: rec.Reason, UserID: rec.User,
	}
}

// withOutput is wire(rec) with the output fields.
func withOutput(rec record, output []byte, truncated bool) runJSON {
	j := wire(rec)
	s := string(output)
	j.Output, j.OutputTruncated = &s, &truncated
	return j
}

// createRequest is the body of POST /a1/runs.
type createRequest struct {
	Runtime  *string `json:"runtime"`
	Repo     *string `json:"repo"`
	WorkItem *string `json:"work_item"`
}

// caller is who a request acts for.
type caller struct {
	tenant *auth.Tenant
	user   string // "" only for a tenant-wide read
}

// callerOf returns the tenant and user of r. Without GW-User-Id, only a
// tenant_admin's read (write false) is allowed: a tenant-wide view. The route
// table already enforces this; the check here keeps the handlers safe alone.
func callerOf(r *http.Request, write bool) (caller, error) {
	c, err := httpx.CallerOf(r, httpx.UserOrAdminRead, !write)
	if err != nil {
		return caller{}, err
	}
	return caller{tenant: c.Tenant, user: c.User}, nil
}

// sees reports whether the caller may see rec.
func (c caller) sees(rec record) bool {
	return rec.Tenant == c.tenant.ID && (c.user == "" || rec.User == c.user)
}

// errNotFound is coding_agent_run_not_found.
func errNotFound() *errcat.Error {
	return errcat.New(errcat.CodingAgentRunNotFound, "run_id", "No such run.")
}

// Runtimes handles GET /a1/runtimes (scope runs:read):
// {"object":"list","data":[{"name":"coding-agent","runs":bool},{"name":"chat","runs":false}]}.
func (s *Service) Runtimes(w http.ResponseWriter, r *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, struct {
		Object string        `json:"object"`
		Data   []runtimeJSON `json:"data"`
	}{"list", []runtimeJSON{{RuntimeCodingAgent, s.enabled()}, {RuntimeChat, false}}})
}

// Create handles POST /a1/runs (scope runs:write, GW-User-Id required) with
// {"runtime","repo","work_item"}: 201 with the queued run. The order of checks
// is in the package documentation.
func (s *Service) Create(w http.ResponseWriter, r *http.Request) {
	c, err := callerOf(r, true)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	rec, err := s.decodeCreate(r, c)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		httpx.WriteError(w, r, errcat.Internal(errors.New("runs: service closed")))
		return
	}
	s.creates.Add(1)
	s.mu.Unlock()
	defer s.creates.Done()
	if rec, err = s.insert(r.Context(), rec); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	s.enqueue(rec)
	httpx.WriteJSON(w, http.StatusCreated, wire(rec))
}

// decodeCreate reads and checks the body of POST /a1/runs and returns the
// queued run it asks for (without its sequence number).
func (s *Service) decodeCreate(r *http.Request, c caller) (record, error) {
	var req createRequest
	if err := httpx.Decode(r, &req); err != nil {
		return record{}, err
	}
	switch {
	case req.Runtime == nil:
		return record{}, errcat.New(errcat.MissingField, "body.runtime", "runtime is required.")
	case *req.Runtime == RuntimeChat:
		return record{}, errcat.New(errcat.RuntimeNotRunnable, "body.runtime", "Runtime chat does not run work items.")
	case *req.Runtime != RuntimeCodingAgent:
		return record{}, errcat.New(errcat.InvalidField, "body.runtime", "runtime must be coding-agent or chat.")
	}
	if req.Repo == nil {
		return record{}, errcat.New(errcat.MissingField, "body.repo", "repo is required.")
	}
	repo, ok := CanonicalRepo(*req.Repo)
	if !ok {
		return record{}, errcat.New(errcat.InvalidField, "body.repo",
			"repo must be an http(s) repository URL such as https://github.com/acme/app.")
	}
	if req.WorkItem == nil {
		return record{}, errcat.New(errcat.MissingField, "body.work_item", "work_item is required.")
	}
	if !validWorkItem(*req.WorkItem) {
		return record{}, errcat.Newf(errcat.InvalidField, "body.work_item",
			"work_item must be 1 to %d bytes of UTF-8 text without control characters.", MaxWorkItemBytes)
	}
	if !s.enabled() {
		return record{}, errcat.New(errcat.CodingAgentDisabled, "", "The coding-agent runtime is not enabled on this gateway.")
	}
	if !allowedRepo(c.tenant.Settings.CodingAgentRepos, repo) {
		return record{}, errcat.New(errcat.CodingAgentRepoNotAllowed, "body.repo", "Repository not on the tenant's allowlist.")
	}
	return record{
		ID: newID(), Tenant: c.tenant.ID, User: c.user, Runtime: RuntimeCodingAgent,
		Repo: repo, WorkItem: *req.WorkItem, Status: StatusQueued, CreatedAt: s.clk.Now().UTC(),
	}, nil
}

// validWorkItem reports whether w is 1 to MaxWorkItemBytes of UTF-8 text
// without control characters (it travels in an environment variable).
func validWorkItem(w string) bool {
	if w == "" || len(w) > MaxWorkItemBytes || !utf8.ValidString(w) {
		return false
	}
	for _, r := range w {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// newID returns a new run id: "run_" and 32 hex digits.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "run_" + hex.EncodeToString(b[:])
}

// List handles GET /a1/runs?limit=&offset= (scope runs:read): the caller's
// runs, or the tenant's for a tenant_admin without GW-User-Id, newest first,
// as {"object":"list","data":[run...],"limit","offset","has_more"}.
func (s *Service) List(w http.ResponseWriter, r *http.Request) {
	c, err := callerOf(r, false)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	pg, err := httpx.ParsePage(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	page, more, err := s.list(r.Context(), c.tenant.ID, c.user, c.user == "", pg.Limit, pg.Offset)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	data := make([]runJSON, len(page))
	for i, rec := range page {
		data[i] = wire(rec)
	}
	httpx.WriteList(w, pg, data, more)
}

// Get handles GET /a1/runs/:id (scope runs:read): 200 with the run and its
// output tail; 404 coding_agent_run_not_found (param run_id) for an unknown
// id or a run the caller may not see.
func (s *Service) Get(w http.ResponseWriter, r *http.Request) {
	c, err := callerOf(r, false)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	id := httpx.Param(r, "id")
	s.mu.Lock()
	a := s.active[id] // before the store read: its output outlives its end
	s.mu.Unlock()
	v, ok, err := s.load(r.Context(), c.tenant.ID, id)
	switch {
	case err != nil:
		httpx.WriteError(w, r, err)
		return
	case !ok || !c.sees(v.rec):
		httpx.WriteError(w, r, errNotFound())
		return
	}
	out, truncated := v.output, v.rec.OutputTruncated
	if v.rec.isActive() && a != nil && a.rec.Tenant == v.rec.Tenant {
		out, truncated = a.out.snapshot()
	}
	httpx.WriteJSON(w, http.StatusOK, withOutput(v.rec, out, truncated))
}

// Cancel handles POST /a1/runs/:id/cancel (scope runs:write, GW-User-Id
// required): 200 with the run. A queued run is cancelled at once; a running
// run's process group gets SIGTERM, then SIGKILL after the grace, and the
// answer comes once it ended (cancelled). An active run an earlier gateway
// process left has what it still runs SIGKILLed first, as on start (500
// internal_error, the run unchanged, when that outlives the wait). A
// finished run is answered as it is. 404 coding_agent_run_not_found as for
// Get.
func (s *Service) Cancel(w http.ResponseWriter, r *http.Request) {
	c, err := callerOf(r, true)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	id := httpx.Param(r, "id")
	v, ok, err := s.load(r.Context(), c.tenant.ID, id)
	switch {
	case err != nil:
		httpx.WriteError(w, r, err)
		return
	case !ok || !c.sees(v.rec):
		httpx.WriteError(w, r, errNotFound())
		return
	case !v.rec.isActive():
		httpx.WriteJSON(w, http.StatusOK, wire(v.rec))
		return
	}
	if err := s.killIfStale(v.rec); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	rec, wait, err := s.cancel(r, v.rec)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	if wait != nil {
		select {
		case <-wait.done:
			if wait.finalErr != nil {
				httpx.WriteError(w, r, errcat.Storage(wait.finalErr))
				return
			}
		case <-r.Context().Done():
		}
		// The client may be gone; the answer is read anyway, to be logged.
		v, ok, err = s.load(context.WithoutCancel(r.Context()), c.tenant.ID, id)
		if err == nil && !ok {
			err = errcat.Internal(errors.New("runs: cancelled run vanished from the store"))
		}
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		rec = v.rec
	}
	httpx.WriteJSON(w, http.StatusOK, wire(rec))
}

// killIfStale kills what the active run rec left running when it is not a
// run of this process (an earlier one left it, and its processes outlived
// New's wait, or its final write failed), as New does: its work item must
// not be freed while they run. It fails when they still run after the wait.
func (s *Service) killIfStale(rec record) error {
	s.mu.Lock()
	a := s.active[rec.ID]
	s.mu.Unlock()
	if a != nil && a.rec.Tenant == rec.Tenant {
		return nil
	}
	if s.killLeftovers([]record{rec})[rec.ID] == leftAlive {
		return errcat.Internal(fmt.Errorf("runs.Cancel: processes of run %s still run after SIGKILL", rec.ID))
	}
	return nil
}

// cancel stops the active run rec. A queued run (or one this process does not
// run: left active by a failed final write) is cancelled in the store at
// once and returned; for a dispatched run it returns the run to wait for.
func (s *Service) cancel(r *http.Request, rec record) (record, *active, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.active[rec.ID]
	if a != nil && a.rec.Tenant == rec.Tenant && !s.queuedLocked(a) {
		s.cancelRunningLocked(a)
		return rec, a, nil
	}
	// Holding s.mu keeps the dispatcher from starting the run meanwhile.
	reason := ReasonCancelledQueued
	if rec.Status == StatusRunning {
		reason = ReasonCancelled
	}
	out, err := s.cancelStored(r.Context(), rec.Tenant, rec.ID, reason)
	if err != nil {
		return record{}, nil, err
	}
	if a != nil && a.rec.Tenant == rec.Tenant {
		s.unqueueLocked(a)
		delete(s.active, a.rec.ID)
		close(a.done)
	}
	return out, nil, nil
}

// queuedLocked reports whether a waits in the queue. s.mu is held.
func (s *Service) queuedLocked(a *active) bool {
	for _, q := range s.queue {
		if q == a {
			return true
		}
	}
	return false
}

// unqueueLocked removes a from the queue. s.mu is held.
func (s *Service) unqueueLocked(a *active) {
	for i, q := range s.queue {
		if q == a {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			return
		}
	}
}
