package anthropic

import (
	"encoding/json"

	"github.com/chatgw/gateway/errcat"
)

// errorObject is the error of Anthropic's error shape, with the gateway's
// code and param added ("Errors on /v1/messages use Anthropic's error shape
// ({"type":"error","error":{"type","message"}}) and also carry the
// gateway's code and param inside error", docs/contract.md 9.4), and the address
// of the code's section of the error catalog page (doc_url), as the
// gateway's envelope has it.
type errorObject struct {
	Type    errcat.Type `json:"type"`
	Message string      `json:"message"`
	Code    errcat.Code `json:"code"`
	Param   *string     `json:"param"`
	DocURL  string      `json:"doc_url"`
}

type errorResponse struct {
	Type  string      `json:"type"`
	Error errorObject `json:"error"`
}

// ErrorBody is the errcat.Format of the Messages API's routes:
// {"type":"error","error":{"type","message","code","param","doc_url"}} plus the
// Extra fields at the top level (available_fallbacks, required_consents),
// which Anthropic's clients ignore. error.type is the catalog's type: each
// of the catalog's types is one of Anthropic's error types
// (invalid_request_error, authentication_error, permission_error,
// not_found_error, request_too_large, rate_limit_error, conflict_error,
// api_error, timeout_error, overloaded_error), so a client reads the same
// category either way. The status is the catalog's, not Anthropic's (503,
// not 529, for overloaded_error).
func ErrorBody(p errcat.Public) []byte {
	obj := errorObject{Type: p.Type, Message: p.Message, Code: p.Code, DocURL: p.DocURL}
	if p.Param != "" {
		obj.Param = &p.Param
	}
	b, _ := json.Marshal(errorResponse{Type: "error", Error: obj}) // strings only: cannot fail
	if len(p.Extra) == 0 {
		return b
	}
	m := make(map[string]any, len(p.Extra)+2)
	for k, v := range p.Extra {
		m[k] = v
	}
	m["type"], m["error"] = "error", obj
	// An Extra value that cannot be encoded is dropped with the others, as
	// in the gateway's envelope.
	if withExtra, err := json.Marshal(m); err == nil {
		b = withExtra
	}
	return b
}

// clientParams are the params of the pre-flight checks (named for the
// chat-completions request) renamed for the Messages API request the client
// sent (pipeline.ClientError); the others are the same in both (model,
// messages, max_tokens, temperature, stream).
var clientParams = map[string]string{
	"messages[].content[].image_url.url": "messages[].content[].source",
	"messages[].content[].image_url":     "messages[].content[].source",
}
