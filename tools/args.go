package tools

import (
	"encoding/json"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// ArgParam is the error param of argument field name: "arguments.<name>".
func ArgParam(name string) string { return "arguments." + name }

// DecodeArgs decodes the arguments object raw into v (a pointer to a struct)
// with the gateway's JSON rules, naming fields "arguments.<path>": a field the
// schema lacks or of the wrong JSON type is invalid_field "arguments.<name>",
// and raw that is not one JSON object is invalid_field "arguments".
func DecodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	err := httpx.DecodeBytes(raw, v)
	if err == nil {
		return nil
	}
	e := errcat.As(err)
	if e.Code == errcat.InvalidField && strings.HasPrefix(e.Param, "body.") {
		name := strings.TrimPrefix(e.Param, "body.")
		msg := strings.Replace(e.Message, "Field ", "Argument ", 1)
		if name == "user_id" {
			msg = "user_id is not an argument; the end user is named by the GW-User-Id header."
		}
		return &errcat.Error{Code: errcat.InvalidField, Param: ArgParam(name), Message: msg, Cause: e.Cause}
	}
	return &errcat.Error{Code: errcat.InvalidField, Param: "arguments", Message: "The arguments must be one JSON object.", Cause: err}
}

// MissingArg is missing_field "arguments.<name>".
func MissingArg(name string) *errcat.Error {
	return errcat.Newf(errcat.MissingField, ArgParam(name), "Argument %s is required.", name)
}

// InvalidArg is invalid_field "arguments.<name>" with message.
func InvalidArg(name, message string) *errcat.Error {
	return errcat.New(errcat.InvalidField, ArgParam(name), message)
}

// argsObject returns the arguments object of a request: raw itself when it is
// an object, the object a JSON string holds (OpenAI's function.arguments
// convention), {} when absent or null; ok is false for anything else.
func argsObject(raw json.RawMessage) (json.RawMessage, bool) {
	t := strings.TrimSpace(string(raw))
	switch {
	case t == "" || t == "null":
		return json.RawMessage("{}"), true
	case t[0] == '{':
		return raw, true
	case t[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return json.RawMessage("{}"), true
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &obj) != nil || obj == nil {
			return nil, false
		}
		return json.RawMessage(s), true
	}
	return nil, false
}
