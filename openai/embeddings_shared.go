package openai

// Helpers shared by the embeddings, images and audio handlers: the principal,
// model resolution by kind, and JSON object bodies split into their members.

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/jsonscan"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/upstream"
)

// resolveModel returns the catalog model named by raw, the raw JSON of a
// "model" member (nil when absent), when it has kind and the tenant allows it.
// Absent, null or "" is missing_field (model); not a string is invalid_field
// (model); anything else that does not qualify is model_not_in_allowlist
// (model).
func resolveModel(cat *upstream.Catalog, t *auth.Tenant, raw json.RawMessage, kind string) (*upstream.ModelInfo, error) {
	if wire.IsNull(raw) {
		return nil, errcat.New(errcat.MissingField, "model", "model is required: a model alias; GET /v1/models lists them.")
	}
	var alias string
	if raw[0] != '"' || json.Unmarshal(raw, &alias) != nil {
		return nil, errcat.New(errcat.InvalidField, "model", "model must be a string: a model alias.")
	}
	if alias == "" {
		return nil, errcat.New(errcat.MissingField, "model", "model is required: a model alias; GET /v1/models lists them.")
	}
	return lookupKind(cat, t, alias, kind)
}

// lookupKind returns the catalog model alias when it has kind and the tenant
// allows it, else model_not_in_allowlist (model).
func lookupKind(cat *upstream.Catalog, t *auth.Tenant, alias, kind string) (*upstream.ModelInfo, error) {
	m := cat.Lookup(alias)
	if m == nil || m.Kind != kind || !t.AllowsModel(alias) {
		return nil, errcat.Newf(errcat.ModelNotInAllowlist, "model",
			"Model %q is not %s model this tenant may use; GET /v1/models lists them.", alias, kindPhrase(kind))
	}
	return m, nil
}

func kindPhrase(kind string) string {
	switch kind {
	case upstream.KindEmbeddings:
		return "an embeddings"
	case upstream.KindImageGeneration:
		return "an image generation"
	case upstream.KindAudioTranscription:
		return "an audio transcription"
	}
	return "a " + kind
}

// member is one top-level member of a JSON object body.
type member struct {
	key string
	raw json.RawMessage
}

// object is a JSON object body as its members, in order; a key given twice
// keeps its last value (as encoding/json decodes it) at its first position.
type object []member

// parseObject splits body, which must be one JSON object, into its members,
// walked in place with jsonscan (the values are slices of body). Anything
// else is invalid_json.
func parseObject(body []byte) (object, error) {
	sc := jsonscan.New(body)
	start := sc.Space(0)
	if start >= len(body) || body[start] != '{' {
		if jsonscan.Valid(body) {
			return nil, errcat.New(errcat.InvalidJSON, "", "The request body must be a JSON object.")
		}
		return nil, errcat.New(errcat.InvalidJSON, "", "The request body is not valid JSON.")
	}
	var obj object
	end, err := sc.Object(start, func(k jsonscan.Key, v int) (int, error) {
		end, err := sc.Value(v)
		if err == nil {
			obj = obj.set(objectKey(body[k.Start:k.End]), json.RawMessage(body[v:end:end]))
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

// get returns the raw value of key, or nil when absent.
func (o object) get(key string) json.RawMessage {
	for _, m := range o {
		if m.key == key {
			return m.raw
		}
	}
	return nil
}

// set replaces the value of key, or appends it.
func (o object) set(key string, raw json.RawMessage) object {
	for i := range o {
		if o[i].key == key {
			o[i].raw = raw
			return o
		}
	}
	return append(o, member{key, raw})
}

// build encodes the object for the upstream: {"model":<alias>, then the other
// members in order except model and those in drop. Starting with "model" lets
// the router swap in each backend's router_alias without decoding the body.
func (o object) build(alias string, drop map[string]bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":`)
	q, _ := json.Marshal(alias) // a string: cannot fail
	b.Write(q)
	for _, m := range o {
		if m.key == "model" || drop[m.key] {
			continue
		}
		k, _ := json.Marshal(m.key)
		b.WriteByte(',')
		b.Write(k)
		b.WriteByte(':')
		b.Write(bytes.TrimSpace(m.raw))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// isJSONInt reports whether raw is a JSON integer literal (no fraction or
// exponent) and returns its value when it fits in an int.
func isJSONInt(raw json.RawMessage) (int, bool) {
	s := string(raw)
	if s == "" || strings.ContainsAny(s, ".eE") {
		return 0, false
	}
	n := 0
	neg := false
	if s[0] == '-' {
		neg, s = true, s[1:]
	}
	if s == "" || len(s) > 9 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
