// Package tools is the gateway's tool registry: named tools with a JSON-schema
// description of their arguments, executed for a tenant and an end user.
//
// It is a top-level package of its own because one registry is shared by
// several API families that must not import one another: POST /v1/tools/execute
// (the stateless /v1 family), the model tool loop of the chat paths (/v1 and
// /c1), and agents (/a1), whose agent files list tool names. Families contribute
// tools (memory adds memory_remember and memory_forget, agents add agent_call
// and rag_search); the root builds one Registry per gateway, registers them and
// hands it to the families that run tools. There are no globals: two gateways in
// one process have two registries.
//
// # Wire format of POST /v1/tools/execute
//
// The body is {"name":"<tool>","arguments":{...}}; arguments is a JSON object,
// or a string holding one (as OpenAI's function.arguments is), and may be
// omitted for a tool without required arguments. The answer is 200 with the
// tool's result as top-level JSON. {"inspect":true} answers
// {"tools":[{"name","description","parameters"}...]} sorted by name.
//
// Errors: an unknown tool is 404 tool_not_found (param "name"; 400 invalid_field
// "body.name" while the error catalog lacks that code); a missing name
// is 400 missing_field "body.name"; arguments that are not an object are 400
// invalid_field "body.arguments"; a field of the arguments that is missing or
// wrong is 400 missing_field / invalid_field "arguments.<field>" (see
// DecodeArgs), which POST /v1/tools/execute answers as
// "body.arguments.<field>", its place in the request; a tool whose Scope the token lacks is 403 forbidden. Other errors
// are the tool's own (*errcat.Error), such as memory_confirm_required.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
)

// Tool is one executable tool.
type Tool struct {
	// Name is the tool's unique name, as models call it: [a-zA-Z0-9_-], 1 to 64
	// characters (OpenAI's rule for function names).
	Name string
	// Description tells a model what the tool does.
	Description string
	// Parameters is the JSON schema of the arguments object. Nil means a tool
	// without arguments ({"type":"object","properties":{}}).
	Parameters json.RawMessage
	// Scope, when not empty, is a scope the caller's token must also hold
	// (for example memory:write for memory_remember), so that a tool never
	// reaches further than the token could over REST.
	Scope string
	// Execute runs the tool. The result is marshalled to JSON as the tool's
	// answer. Errors should be *errcat.Error; anything else answers
	// internal_error.
	Execute func(ctx context.Context, call Call) (any, error)
}

// Call is one invocation of a tool.
type Call struct {
	// TenantID is the tenant the call runs for; never empty.
	TenantID string
	// UserID is the end user (GW-User-Id), or "" when the request named none.
	// Tools that need a user answer missing_field "headers.gw-user-id" without one.
	UserID string
	// Principal is the caller's token, or nil when the caller already checked
	// scopes (Registry.Run checks Tool.Scope against it when set).
	Principal *auth.Principal
	// Arguments is the raw JSON object of arguments; never nil when it reaches
	// Execute through Registry.Run (an absent object becomes {}).
	Arguments json.RawMessage
}

// Registry holds the tools of one gateway. It is safe for concurrent use; tools
// are normally registered while the gateway is wired, before it serves.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
}

// NewRegistry returns a registry holding ts; it fails like Register.
func NewRegistry(ts ...Tool) (*Registry, error) {
	r := &Registry{tools: make(map[string]Tool)}
	for _, t := range ts {
		if err := r.Register(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds t. It fails when the name is invalid or already taken, when
// Execute is nil, or when Parameters is not a JSON object.
func (r *Registry) Register(t Tool) error {
	if !ValidName(t.Name) {
		return fmt.Errorf("tools.Register: invalid tool name %q", t.Name)
	}
	if t.Execute == nil {
		return fmt.Errorf("tools.Register: tool %s has no Execute", t.Name)
	}
	if t.Parameters == nil {
		t.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var schema map[string]any
	if err := json.Unmarshal(t.Parameters, &schema); err != nil || schema == nil {
		return fmt.Errorf("tools.Register: tool %s: parameters must be a JSON object schema", t.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[t.Name]; dup {
		return fmt.Errorf("tools.Register: tool %s registered twice", t.Name)
	}
	r.tools[t.Name] = t
	return nil
}

// Lookup returns the tool called name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// List returns every tool, sorted by name.
func (r *Registry) List() []Tool {
	r.mu.RLock()
	out := make([]Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Run executes the tool called name. It answers 400 invalid_field "body.name"
// for an unknown tool (the catalog has no code of its own for it) and forbidden when call.Principal is set and lacks the
// tool's Scope; otherwise it returns what the tool returns. The model tool loop
// and agents call Run directly; POST /v1/tools/execute goes through Execute.
func (r *Registry) Run(ctx context.Context, name string, call Call) (any, error) {
	t, ok := r.Lookup(name)
	if !ok {
		return nil, errToolNotFound(name)
	}
	if t.Scope != "" && call.Principal != nil && !call.Principal.Allows(t.Scope) {
		return nil, errcat.Newf(errcat.Forbidden, "", "Tool %s needs scope %s.", name, t.Scope)
	}
	if len(call.Arguments) == 0 {
		call.Arguments = json.RawMessage("{}")
	}
	return t.Execute(ctx, call)
}

// errToolNotFound is 400 invalid_field "body.name": the name is outside the set
// of registered tools. The Codes table (docs/contract.md#codes) has no code for an
// unknown tool, so the gateway does not invent one.
func errToolNotFound(name string) *errcat.Error {
	return errcat.Newf(errcat.InvalidField, "body.name", "No tool named %q is registered.", name)
}

// ValidName reports whether s is a valid tool name: 1 to 64 of [a-zA-Z0-9_-],
// OpenAI's rule for function names. Agents share it, since agent_call names
// an agent in a tool's arguments.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
