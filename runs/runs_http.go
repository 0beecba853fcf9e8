package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
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
	runFields
	Output          *string `json:"output,omitempty"`
	OutputTruncated *bool   `json:"output_truncated,omitempty"`
}

func wire(rec record) runJSON { return runJSON{runFields: rec.runFields} }

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

// readCaller is callerOf for a read, the resolve step of the read handlers.
func readCaller(r *http.Request) (caller, error) { return callerOf(r, false) }

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
	if rec, err = s.createRun(r.Context(), rec); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, wire(rec))
}

// createRun stores the new run rec as queued and returns it as stored. When this
// Service has a free slot and no older run waits, it claims the run in the
// same transaction and starts it; otherwise the run waits in the queue for
// a slot of any replica. After Close began it fails (internal_error).
func (s *Service) createRun(ctx context.Context, rec record) (record, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return record{}, errcat.Internal(errors.New("runs: service closed"))
	}
	s.creates.Add(1) // Close waits for the run to be launched
	s.mu.Unlock()
	defer s.creates.Done()
	slot := s.reserve(1)
	rec, claimed, err := s.insert(ctx, rec, slot == 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && claimed {
		s.launchLocked(rec)
		return rec, nil
	}
	s.releaseLocked(slot)
	if err != nil {
		return record{}, errcat.FromStore(err)
	}
	// An older run waits, or the slots were taken (perhaps by a claim of the
	// loop under way, which may have looked at the queue before this run
	// joined it): the loop claims what waits once a slot is free.
	s.wake()
	return rec, nil
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
	return record{Tenant: c.tenant.ID, runFields: runFields{
		ID: newID(), User: c.user, Runtime: RuntimeCodingAgent,
		Repo: repo, WorkItem: *req.WorkItem, Status: StatusQueued, CreatedAt: s.clk.Now().UTC(),
	}}, nil
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
	httpx.HandleList(w, r, readCaller, func(ctx context.Context, c caller, pg httpx.Page) ([]runJSON, bool, error) {
		page, more, err := s.list(ctx, c.tenant.ID, c.user, c.user == "", pg)
		if err != nil {
			return nil, false, err
		}
		data := make([]runJSON, len(page))
		for i, rec := range page {
			data[i] = wire(rec)
		}
		return data, more, nil
	})
}

// Get handles GET /a1/runs/:id (scope runs:read): 200 with the run and its
// output tail; 404 coding_agent_run_not_found (param run_id) for an unknown
// id or a run the caller may not see.
func (s *Service) Get(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, readCaller, func(ctx context.Context, c caller) (runJSON, error) {
		id := httpx.Param(r, "id")
		s.mu.Lock()
		a := s.active[id] // before the store read: its output outlives its end
		s.mu.Unlock()
		v, err := s.loadSeen(ctx, c, id)
		if err != nil {
			return runJSON{}, err
		}
		out, truncated := v.output, v.rec.OutputTruncated
		if v.rec.isActive() && a != nil && a.rec.Tenant == v.rec.Tenant {
			out, truncated = a.out.snapshot()
		}
		return withOutput(v.rec, out, truncated), nil
	})
}
