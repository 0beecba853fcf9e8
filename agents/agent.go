package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/chatgw/gateway/tools"
)

// Limits of an agent file.
const (
	// DefaultMaxToolRounds is the tool rounds of an agent whose file has no
	// max_tool_rounds.
	DefaultMaxToolRounds = 4
	// MaxToolRoundsCap is the largest max_tool_rounds an agent file may set.
	MaxToolRoundsCap = 16
	// MaxDepth is the caller depth (GW-Caller-Depth, and agent_call nesting)
	// from which agent chat answers recursion_depth_exceeded.
	MaxDepth = 3
)

// Agent is one configured agent: the content of an agent file.
type Agent struct {
	// Name identifies the agent in paths (/a1/agents/{name}): 1 to 64
	// characters of [a-zA-Z0-9_-].
	Name string `json:"name"`
	// Description tells clients (and other agents, through agent_call) what
	// the agent is for.
	Description string `json:"description"`
	// Model is the model alias every call of the agent uses.
	Model string `json:"model"`
	// SystemPrompt is the agent's system message.
	SystemPrompt string `json:"system_prompt"`
	// Tools are the names of the registered tools the model is offered.
	Tools []string `json:"tools"`
	// RAGIndex, when set, is the RAG index the agent searches with the
	// rag_search tool; the system prompt tells the model its name.
	RAGIndex string `json:"rag_index,omitempty"`
	// MaxToolRounds bounds the tool rounds of one chat, 1..MaxToolRoundsCap;
	// 0 means DefaultMaxToolRounds.
	MaxToolRounds int `json:"max_tool_rounds,omitempty"`
	// File is the file the agent was loaded from ("" for an agent built in
	// code); not part of the file format.
	File string `json:"-"`
}

// Warning is a problem of an agent file that does not stop the gateway: the
// agent is loaded, and its chat answers 400 agent_tool_not_registered (for an
// unregistered tool) until the tool is registered.
type Warning struct {
	File  string // the agent file
	Agent string // the agent's name
	Tool  string // the tool concerned
	// Message says what is wrong.
	Message string
}

// String returns the warning as a log line.
func (w Warning) String() string { return w.File + ": " + w.Message }

// Load reads the agents of dir: every regular file whose name ends in ".json"
// (lower case; other files, hidden files and subdirectories are ignored), one
// agent per file, in file name order. dir "" means no agents.
//
// A file that cannot be read, is not one valid JSON object of the agent
// fields, lacks name or model, has an invalid name, a max_tool_rounds outside
// 1..MaxToolRoundsCap, an empty tool name, or repeats the name of an agent of
// another file, fails Load with an error naming the file (the gateway refuses
// to start). An unknown field and a tool listed twice are Warnings. An agent listing a tool that reg does not hold
// (agent_call counts as registered: this package provides it, and it is
// registered after New) is loaded with a Warning naming the file and the tool.
// An agent with a rag_index that does not list rag_search gets a Warning too.
// The agents are returned sorted by name.
func Load(dir string, reg *tools.Registry) ([]Agent, []Warning, error) {
	if dir == "" {
		return nil, nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("agents.Load: %w", err)
	}
	var (
		out      []Agent
		warnings []Warning
		byName   = map[string]string{} // name -> file
	)
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || filepath.Ext(name) != ".json" {
			continue
		}
		path := filepath.Join(dir, name)
		if !e.Type().IsRegular() {
			if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
				continue
			}
		}
		a, ws, err := loadFile(path)
		if err != nil {
			return nil, nil, err
		}
		warnings = append(warnings, ws...)
		if other, dup := byName[a.Name]; dup {
			return nil, nil, fmt.Errorf("agents.Load: %s: agent name %q is already used by %s", path, a.Name, other)
		}
		byName[a.Name] = path
		warnings = append(warnings, check(a, reg)...)
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, warnings, nil
}

// agentFields are the fields of an agent file: {"name","description","model",
// "system_prompt","tools":[...],"rag_index"?,"max_tool_rounds"?}.
var agentFields = map[string]bool{"name": true, "description": true, "model": true,
	"system_prompt": true, "tools": true, "rag_index": true, "max_tool_rounds": true}

// loadFile reads and validates one agent file. An unknown field and a tool
// listed twice are warnings, not errors: start-up is refused only for "a file
// that is not valid JSON" (the contract) or not a valid agent, and a field added by
// a newer version of the file format should not stop a gateway.
func loadFile(path string) (Agent, []Warning, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Agent{}, nil, fmt.Errorf("agents.Load: %w", err)
	}
	var a Agent
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&a); err != nil {
		return Agent{}, nil, fmt.Errorf("agents.Load: %s: not a valid agent file: %w", path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Agent{}, nil, fmt.Errorf("agents.Load: %s: not a valid agent file: data after the JSON object", path)
	}
	a.File = path
	if err := a.validate(); err != nil {
		return Agent{}, nil, fmt.Errorf("agents.Load: %s: %w", path, err)
	}
	var ws []Warning
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(b, &fields) // b decoded as an object above
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !agentFields[k] {
			ws = append(ws, Warning{File: path, Agent: a.Name, Message: fmt.Sprintf("agent %s: unknown field %q is ignored", a.Name, k)})
		}
	}
	var kept []string
	for _, t := range a.Tools {
		if slices.Contains(kept, t) {
			ws = append(ws, Warning{File: path, Agent: a.Name, Tool: t, Message: fmt.Sprintf("agent %s: tool %q is listed twice; once is kept", a.Name, t)})
			continue
		}
		kept = append(kept, t)
	}
	a.Tools = kept
	return a, ws, nil
}

// validate checks the rules of an agent file that decoding does not.
func (a *Agent) validate() error {
	switch {
	case a.Name == "":
		return errors.New("name is required")
	case !tools.ValidName(a.Name):
		return fmt.Errorf("name %q must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -", a.Name)
	case strings.TrimSpace(a.Model) == "":
		return errors.New("model is required")
	case a.MaxToolRounds < 0 || a.MaxToolRounds > MaxToolRoundsCap:
		return fmt.Errorf("max_tool_rounds must be from 1 to %d", MaxToolRoundsCap)
	}
	if slices.Contains(a.Tools, "") {
		return errors.New("tools holds an empty name")
	}
	return nil
}

// check returns the warnings of a loaded agent.
func check(a Agent, reg *tools.Registry) []Warning {
	var ws []Warning
	for _, t := range a.Tools {
		if !registered(reg, t) {
			ws = append(ws, Warning{File: a.File, Agent: a.Name, Tool: t, Message: fmt.Sprintf(
				"agent %s lists tool %q, which is not registered; its chat answers agent_tool_not_registered", a.Name, t)})
		}
	}
	if a.RAGIndex != "" && !a.hasTool(RAGSearchTool) {
		ws = append(ws, Warning{File: a.File, Agent: a.Name, Tool: RAGSearchTool, Message: fmt.Sprintf(
			"agent %s has rag_index %q but does not list the %s tool; the model cannot search the index", a.Name, a.RAGIndex, RAGSearchTool)})
	}
	return ws
}

// registered reports whether tool name is in reg, counting agent_call, which
// this package provides.
func registered(reg *tools.Registry, name string) bool {
	if name == CallToolName {
		return true
	}
	if reg == nil {
		return false
	}
	_, ok := reg.Lookup(name)
	return ok
}

func (a *Agent) hasTool(name string) bool {
	for _, t := range a.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// maxRounds returns the agent's tool-round cap.
func (a *Agent) maxRounds() int {
	if a.MaxToolRounds <= 0 {
		return DefaultMaxToolRounds
	}
	return min(a.MaxToolRounds, MaxToolRoundsCap)
}

// systemPrompt is the agent's system message as sent: its system_prompt, plus,
// with a rag_index, the index the model searches.
func (a *Agent) systemPrompt() string {
	if a.RAGIndex == "" {
		return a.SystemPrompt
	}
	note := fmt.Sprintf("To look up facts, call the %s tool with index %q.", RAGSearchTool, a.RAGIndex)
	if a.SystemPrompt == "" {
		return note
	}
	return a.SystemPrompt + "\n\n" + note
}
