package responses

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/wire"
)

// functionTool is a function tool of tools, as the response repeats it.
type functionTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// emptyParameters is the schema of a function without parameters.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// decodeTools translates tools of type function into chat completions'
// function tools; strict is passed on as function.strict. Built-in tools
// (web search, file search, code interpreter, computer use, MCP, ...) run
// on OpenAI's servers and answer 400.
func decodeTools(top map[string]json.RawMessage, q *request) error {
	raw := top["tools"]
	if isNull(raw) {
		q.tools = []functionTool{}
		return nil
	}
	if json.Unmarshal(raw, &q.tools) != nil {
		return errcat.New(errcat.InvalidField, "tools", "tools must be an array of function tools.")
	}
	chat := make([]wire.Tool, 0, len(q.tools))
	for i := range q.tools {
		t := &q.tools[i]
		at := fmt.Sprintf("tools[%d]", i)
		switch {
		case t.Type != "function":
			return errcat.Newf(errcat.InvalidField, at+".type",
				"%s.type %s is not supported: built-in tools run on OpenAI's servers; the gateway's models call function tools only.", at, strconv.Quote(t.Type))
		case t.Name == "":
			return errcat.Newf(errcat.MissingField, at+".name", "%s.name is required.", at)
		case isNull(t.Parameters):
			t.Parameters = emptyParameters
		case t.Parameters[0] != '{':
			return errcat.Newf(errcat.InvalidField, at+".parameters", "%s.parameters must be a JSON Schema object.", at)
		}
		desc := ""
		if t.Description != nil {
			desc = *t.Description
		}
		chat = append(chat, wire.Tool{Type: "function", Function: wire.Function{Name: t.Name, Description: desc, Parameters: t.Parameters, Strict: t.Strict}})
	}
	if len(chat) == 0 {
		return nil
	}
	b, err := json.Marshal(chat)
	if err != nil {
		return errcat.Internal(err)
	}
	q.chat.Tools = b
	if !q.parallel {
		q.chat.ParallelToolCalls = &q.parallel
	}
	return nil
}

// decodeToolChoice translates tool_choice: none, auto and required as they
// are, {"type":"function","name"} into chat completions' named choice.
func decodeToolChoice(top map[string]json.RawMessage, q *request) error {
	raw := top["tool_choice"]
	if isNull(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "none" && s != "auto" && s != "required" {
			return errcat.New(errcat.InvalidField, "tool_choice", "tool_choice must be none, auto, required or a function choice.")
		}
		if s == "required" && q.chat.Tools == nil {
			return errcat.New(errcat.InvalidField, "tool_choice", "tool_choice required needs tools.")
		}
		q.toolChoice = raw
		if q.chat.Tools != nil {
			q.chat.ToolChoice = raw
		}
		return nil
	}
	var fc struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	switch {
	case json.Unmarshal(raw, &fc) != nil:
		return errcat.New(errcat.InvalidField, "tool_choice", "tool_choice must be none, auto, required or a function choice.")
	case fc.Type != "function":
		return errcat.Newf(errcat.InvalidField, "tool_choice.type",
			"tool_choice.type %s is not supported: the gateway's models call function tools only.", strconv.Quote(fc.Type))
	case fc.Name == "":
		return errcat.New(errcat.MissingField, "tool_choice.name", "tool_choice.name is required with type function.")
	case !slices.ContainsFunc(q.tools, func(t functionTool) bool { return t.Name == fc.Name }):
		return errcat.Newf(errcat.InvalidField, "tool_choice.name", "tool_choice.name %s is not one of tools.", strconv.Quote(fc.Name))
	}
	q.toolChoice, _ = json.Marshal(fc) // strings only: cannot fail
	named, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": fc.Name}})
	q.chat.ToolChoice = named
	return nil
}
