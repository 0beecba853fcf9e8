package tools

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// executeRequest is the body of POST /v1/tools/execute.
type executeRequest struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Inspect   bool            `json:"inspect"`
}

// ToolInfo is one tool as {"inspect":true} lists it.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Infos returns the description of every tool, sorted by name (the inspection
// answer, and the "tools" a model is offered).
func (r *Registry) Infos() []ToolInfo {
	ts := r.List()
	out := make([]ToolInfo, len(ts))
	for i, t := range ts {
		out[i] = ToolInfo{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	return out
}

// Execute handles POST /v1/tools/execute (scope tools:execute, GW-User-Id
// optional): {"name","arguments"} runs a tool and answers 200 with its result
// as top-level JSON; {"inspect":true} answers {"tools":[...]}. See the package
// doc for the errors.
func (r *Registry) Execute(w http.ResponseWriter, req *http.Request) {
	var body executeRequest
	if err := httpx.Decode(req, &body); err != nil {
		httpx.WriteError(w, req, err)
		return
	}
	if body.Inspect {
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"tools": r.Infos()})
		return
	}
	if body.Name == nil || *body.Name == "" {
		httpx.WriteError(w, req, errcat.New(errcat.MissingField, "body.name", "Field name is required (or send {\"inspect\":true})."))
		return
	}
	args, ok := argsObject(body.Arguments)
	if !ok {
		httpx.WriteError(w, req, errcat.New(errcat.InvalidField, "body.arguments", "Field arguments must be a JSON object."))
		return
	}
	p, err := httpx.Principal(req)
	if err != nil {
		httpx.WriteError(w, req, err)
		return
	}
	call := Call{TenantID: p.Tenant.ID, UserID: httpx.UserID(req), Principal: p, Arguments: args}
	result, err := r.Run(req.Context(), *body.Name, call)
	if err != nil {
		httpx.WriteError(w, req, locateInBody(err))
		return
	}
	out, err := json.Marshal(result)
	if err != nil {
		httpx.WriteError(w, req, errcat.Internal(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(out, '\n'))
}

// locateInBody gives an argument's field error the location it has in the
// request body (a location path, "body.<field>" nested with dots): a tool names
// its argument "arguments.key" wherever it is called from, and over HTTP that
// is "body.arguments.key".
func locateInBody(err error) error {
	e := errcat.As(err)
	if (e.Code != errcat.MissingField && e.Code != errcat.InvalidField) ||
		!strings.HasPrefix(e.Param, "arguments") {
		return err
	}
	located := *e
	located.Param = "body." + e.Param
	return &located
}
