package agents

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/tools"
	"github.com/chatgw/gateway/upstream"
)

// Names of tools this package provides or knows of.
const (
	// CallToolName is the built-in tool of CallTool.
	CallToolName = "agent_call"
	// RAGSearchTool is the rag package's search tool, which an agent with a
	// rag_index lists to search it. agents never imports rag.
	RAGSearchTool = "rag_search"
)

// HeaderCallerDepth carries the nesting depth of an agent chat call.
const HeaderCallerDepth = "GW-Caller-Depth"

// Config configures the agents family.
type Config struct {
	// Agents are the configured agents (normally from Load). Names must be
	// unique; an agent without name or model fails New.
	Agents []Agent
	// Tools is the registry the agents' tools are looked up in and run
	// through; required. Register CallTool in it after New.
	Tools *tools.Registry
	// Upstream reaches the models; required.
	Upstream upstream.Upstream
	// Catalog is the model catalog the pre-flight checks use; required.
	Catalog *upstream.Catalog
	// Store holds the sessions (buckets agents/*) and is read for the tenant
	// configuration (compact_keep_last_n); required.
	Store store.Store
	// Clock stamps sessions. Nil means the wall clock.
	Clock clock.Clock
	// Logger logs events outside a request's own log line. Nil means
	// slog.Default().
	Logger *slog.Logger
	// Inject returns the system message placed first in an agent chat of a
	// request with GW-User-Id (prompts and memory; the same function as
	// chat.Config.Inject), or "" for none. It is not called without a user.
	// Nil injects nothing.
	Inject func(ctx context.Context, tenantID, userID string) (string, error)
	// Keepalive is the upstream silence after which a stream gets an SSE
	// keepalive comment. Zero means the relay's default (15 s); negative
	// disables keepalives.
	Keepalive time.Duration
	// Quota keeps the tenants' daily per-model budgets (model_quota_exhausted,
	// cloudB_daily_quota_exhausted). Every upstream call of an agent chat (each
	// tool round, the final round, agent_call's nested chat, a compaction's
	// summary) is admitted against the tenant's budget for the agent's alias;
	// share the Accountant of /v1 and /c1 so that an agent cannot bypass it.
	// Nil means no quotas.
	Quota *quota.Accountant
	// MaxResponseBytes bounds what the gateway holds of one upstream answer
	// (relay.Options.MaxBytes). 0 means relay.DefaultMaxBytes (16 MiB).
	MaxResponseBytes int64
	// Classifier is the content guard of the tenants whose content_guard is
	// audit or block (the gateway's guard.Classifier, bounded in time and
	// cached). Nil means the gateway has none: a block tenant's requests then
	// answer 503 upstream_unavailable, an audit tenant's go through.
	Classifier guard.Classifier
}

// Service serves the /a1/agents family. Create it with New; it is safe for
// concurrent use.
type Service struct {
	agents    map[string]*Agent
	names     []string // sorted
	tools     *tools.Registry
	upstream  upstream.Upstream
	catalog   *upstream.Catalog
	store     store.Store
	clock     clock.Clock
	log       *slog.Logger
	inject    func(ctx context.Context, tenantID, userID string) (string, error)
	keepalive time.Duration
	quota     *quota.Accountant
	maxBytes  int64
	guard     guard.Classifier
}

// New returns the agents service of c. It fails when a required field is nil,
// or an agent is invalid (see Load) or named twice.
func New(c Config) (*Service, error) {
	switch {
	case c.Tools == nil:
		return nil, errors.New("agents.New: Config.Tools is nil")
	case c.Upstream == nil:
		return nil, errors.New("agents.New: Config.Upstream is nil")
	case c.Catalog == nil:
		return nil, errors.New("agents.New: Config.Catalog is nil")
	case c.Store == nil:
		return nil, errors.New("agents.New: Config.Store is nil")
	}
	s := &Service{
		agents:    make(map[string]*Agent, len(c.Agents)),
		tools:     c.Tools,
		upstream:  c.Upstream,
		catalog:   c.Catalog,
		store:     c.Store,
		clock:     c.Clock,
		log:       c.Logger,
		inject:    c.Inject,
		keepalive: c.Keepalive,
		quota:     c.Quota,
		maxBytes:  c.MaxResponseBytes,
		guard:     c.Classifier,
	}
	if s.clock == nil {
		s.clock = clock.Wall{}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	for i := range c.Agents {
		a := c.Agents[i]
		a.Tools = append([]string(nil), a.Tools...)
		if err := a.validate(); err != nil {
			return nil, fmt.Errorf("agents.New: agent %q: %w", a.Name, err)
		}
		if _, dup := s.agents[a.Name]; dup {
			return nil, fmt.Errorf("agents.New: agent %q is configured twice", a.Name)
		}
		s.agents[a.Name] = &a
		s.names = append(s.names, a.Name)
	}
	slices.Sort(s.names)
	return s, nil
}

// agentJSON is an agent as GET /a1/agents lists it (no system prompt: it is
// the operator's, like a server-side prompt).
type agentJSON struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Model       string   `json:"model"`
	Tools       []string `json:"tools"`
}

// List serves GET /a1/agents: {"object":"list","data":[{"name","description",
// "model","tools"}...]} sorted by name.
func (s *Service) List(w http.ResponseWriter, r *http.Request) {
	data := make([]agentJSON, 0, len(s.names))
	for _, n := range s.names {
		a := s.agents[n]
		ts := a.Tools
		if ts == nil {
			ts = []string{}
		}
		data = append(data, agentJSON{Name: a.Name, Description: a.Description, Model: a.Model, Tools: ts})
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		Object string      `json:"object"`
		Data   []agentJSON `json:"data"`
	}{"list", data})
}

// agent returns the agent of the path parameter name, or 404 agent_not_found.
func (s *Service) agent(name string) (*Agent, error) {
	if a, ok := s.agents[name]; ok {
		return a, nil
	}
	return nil, errcat.Newf(errcat.AgentNotFound, "name", "No agent named %q is configured.", name)
}

// checkTools answers 400 agent_tool_not_registered when a tool of a is not in
// the registry now.
func (s *Service) checkTools(a *Agent) error {
	for _, t := range a.Tools {
		if _, ok := s.tools.Lookup(t); !ok {
			return errcat.Newf(errcat.AgentToolNotRegistered, "tools",
				"Agent %s lists tool %q, which is not registered on this gateway.", a.Name, t)
		}
	}
	return nil
}

// requireUser returns the GW-User-Id of r, or missing_field
// headers.gw-user-id (the route layer normally answers it first).
func requireUser(r *http.Request) (string, error) {
	u := httpx.UserID(r)
	if u == "" {
		return "", errcat.New(errcat.MissingField, "headers.gw-user-id", "The GW-User-Id header is required.")
	}
	return u, nil
}

// depthKey carries the caller depth of an agent chat in a context, for the
// agent_call tool (tools.Call has no field for it).
type depthKey struct{}

// WithCallerDepth returns ctx carrying caller depth d: the depth at which
// tools run by an agent chat are called.
func WithCallerDepth(ctx context.Context, d int) context.Context {
	return context.WithValue(ctx, depthKey{}, d)
}

// CallerDepth returns the caller depth ctx carries, 0 when none.
func CallerDepth(ctx context.Context) int {
	d, _ := ctx.Value(depthKey{}).(int)
	return d
}

// headerDepth parses GW-Caller-Depth: absent is 0; anything but a
// non-negative integer is invalid_field headers.gw-caller-depth; MaxDepth or
// more is recursion_depth_exceeded.
func headerDepth(r *http.Request) (int, error) {
	v := strings.TrimSpace(r.Header.Get(HeaderCallerDepth))
	if v == "" {
		return 0, nil
	}
	d, err := strconv.Atoi(v)
	if err != nil || d < 0 {
		return 0, errcat.New(errcat.InvalidField, "headers.gw-caller-depth", "GW-Caller-Depth must be a non-negative integer.")
	}
	return d, checkDepth(d)
}

// checkDepth answers recursion_depth_exceeded for a depth of MaxDepth or more.
func checkDepth(d int) error {
	if d >= MaxDepth {
		return errcat.Newf(errcat.RecursionDepthExceeded, "headers.gw-caller-depth",
			"Agent calls nest at most %d deep; this call is at depth %d.", MaxDepth, d)
	}
	return nil
}
