package httpx

import (
	"bytes"
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/jsonscan"
	"github.com/chatgw/gateway/internal/wire"
)

// Member is one top-level member of a JSON object body.
type Member struct {
	Key string
	Raw json.RawMessage
}

// Object is a JSON object body as its members, in order; a key given twice
// keeps its last value (as encoding/json decodes it) at its first position.
// It serves the endpoints that forward an OpenAI body (embeddings, image
// generation): they check a few members and pass the others on verbatim.
type Object []Member

// ParseObject splits body, which must be one JSON object, into its members,
// walked in place with jsonscan (the values are slices of body). Anything
// else is invalid_json.
func ParseObject(body []byte) (Object, error) {
	sc := jsonscan.New(body)
	start := sc.Space(0)
	if start >= len(body) || body[start] != '{' {
		if jsonscan.Valid(body) {
			return nil, errcat.New(errcat.InvalidJSON, "", "The request body must be a JSON object.")
		}
		return nil, errcat.New(errcat.InvalidJSON, "", "The request body is not valid JSON.")
	}
	var obj Object
	end, err := sc.Object(start, func(k jsonscan.Key, v int) (int, error) {
		end, err := sc.Value(v)
		if err == nil {
			obj = obj.Set(objectKey(body[k.Start:k.End]), json.RawMessage(body[v:end:end]))
		}
		return end, err
	})
	switch {
	case err != nil:
		return nil, &errcat.Error{Code: errcat.InvalidJSON, Message: "The request body is not valid JSON.", Cause: err}
	case sc.Space(end) != len(body):
		return nil, errcat.New(errcat.InvalidJSON, "", "The request body must hold exactly one JSON object.")
	}
	return obj, nil
}

// objectKey is the name of the key literal lit, as encoding/json reads it
// (which makes each byte that is not UTF-8 U+FFFD).
func objectKey(lit []byte) string {
	key := jsonscan.Unquote(lit)
	if !utf8.ValidString(key) {
		_ = json.Unmarshal(lit, &key) // lit is a valid literal: cannot fail
	}
	return key
}

// Get returns the raw value of key, or nil when absent.
func (o Object) Get(key string) json.RawMessage {
	for _, m := range o {
		if m.Key == key {
			return m.Raw
		}
	}
	return nil
}

// Set replaces the value of key, or appends it.
func (o Object) Set(key string, raw json.RawMessage) Object {
	for i := range o {
		if o[i].Key == key {
			o[i].Raw = raw
			return o
		}
	}
	return append(o, Member{key, raw})
}

// Model returns the model alias the "model" member names. Absent, null or ""
// is missing_field (model); not a string is invalid_field (model). Whether
// the catalog has the alias is upstream.Catalog.LookupKind's question.
func (o Object) Model() (string, error) {
	raw := o.Get("model")
	if wire.IsNull(raw) {
		return "", errcat.New(errcat.MissingField, "model", "model is required: a model alias; GET /v1/models lists them.")
	}
	var alias string
	if raw[0] != '"' || json.Unmarshal(raw, &alias) != nil {
		return "", errcat.New(errcat.InvalidField, "model", "model must be a string: a model alias.")
	}
	if alias == "" {
		return "", errcat.New(errcat.MissingField, "model", "model is required: a model alias; GET /v1/models lists them.")
	}
	return alias, nil
}

// Build encodes the object for the upstream: {"model":<alias>, then the other
// members in order except model and those in drop. Starting with "model" lets
// the router swap in each backend's router_alias without decoding the body.
func (o Object) Build(alias string, drop map[string]bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":`)
	q, _ := json.Marshal(alias) // a string: cannot fail
	b.Write(q)
	for _, m := range o {
		if m.Key == "model" || drop[m.Key] {
			continue
		}
		k, _ := json.Marshal(m.Key)
		b.WriteByte(',')
		b.Write(k)
		b.WriteByte(':')
		b.Write(bytes.TrimSpace(m.Raw))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// ReadObject reads r's body (ReadBody) and splits it into its members
// (ParseObject): the start of every handler of a passthrough body that the
// gateway reads member by member.
func ReadObject(r *http.Request) (Object, error) {
	body, err := ReadBody(r)
	if err != nil {
		return nil, err
	}
	return ParseObject(body)
}
