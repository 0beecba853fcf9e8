package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/chatgw/gateway/errcat"
)

// FieldName is the name of the field an error's param names, its last part:
// "body.documents[3]" -> "documents[3]", "query.limit" -> "limit"; a param
// without a dot is a name already. Messages name the field as the client
// wrote it, without where it was.
func FieldName(param string) string {
	if i := strings.LastIndexByte(param, '.'); i >= 0 {
		return param[i+1:]
	}
	return param
}

// ReadBody reads the whole request body. The gateway's middleware has already
// bounded it with http.MaxBytesReader, so an oversized body answers body_too_large.
func ReadBody(r *http.Request) ([]byte, error) {
	if info := InfoFrom(r.Context()); info.BodyRead {
		return info.Body, nil
	}
	return readBody(r)
}

// ReadBody reads the whole request body once, keeps it in the Info for
// ReadBody(r) and Decode, and returns it.
func (info *Info) ReadBody(r *http.Request) ([]byte, error) {
	if info.BodyRead {
		return info.Body, nil
	}
	b, err := readBody(r)
	if err != nil {
		return nil, err
	}
	info.Body, info.BodyRead = b, true
	return b, nil
}

func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > 0 && r.ContentLength <= maxPresized {
		return readSized(r.Body, int(r.ContentLength))
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, BodyError(err)
	}
	return b, nil
}

// maxPresized is the largest declared Content-Length for which ReadBody
// allocates the whole body at once; beyond it, a client could make the
// gateway allocate what it never sends (the body limit still applies).
const maxPresized = 1 << 20

// readSized reads a body of declared length n in one allocation (io.ReadAll
// would grow its buffer from 512 bytes, copying each time), and on to the end
// of the body, so that the server sees it consumed before the answer starts.
func readSized(body io.Reader, n int) ([]byte, error) {
	b := make([]byte, n, n+1) // the spare byte reads the end without allocating
	if _, err := io.ReadFull(body, b); err != nil {
		return nil, BodyError(err)
	}
	for {
		m, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return nil, BodyError(err)
		case len(b) == cap(b): // longer than declared (a fake body): grow
			b = append(b, 0)[:len(b)]
		}
	}
}

// BodyError maps a failure to read the request body to its catalogued error:
// body_too_large for *http.MaxBytesError, an *errcat.Error as it is (the
// middleware's verdict on a body that stalled), invalid_json otherwise.
func BodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errcat.Newf(errcat.BodyTooLarge, "", "Request body is larger than %d bytes.", mbe.Limit)
	}
	var own *errcat.Error
	if errors.As(err, &own) {
		return own
	}
	return &errcat.Error{Code: errcat.InvalidJSON, Message: "The request body could not be read.", Cause: err}
}

// Decode reads the JSON body of r into v, a pointer to a struct of one of the
// gateway's own schemas, with the gateway's rules:
//   - a body that is not one JSON object: invalid_json;
//   - a field the schema does not have: invalid_field "body.<name>" (the
//     identity rule's ban of a top-level user_id is the middleware's, which
//     owns it for every body, the passthroughs included; a user_id is never a
//     schema field, so a handler reached without the middleware still
//     answers body.user_id);
//   - a field of the wrong JSON type: invalid_field "body.<path>".
//
// Range and enum checks are the handler's.
func Decode(r *http.Request, v any) error {
	b, err := ReadBody(r)
	if err != nil {
		return err
	}
	return DecodeBytes(b, v)
}

// DecodeBytes is Decode over an already read body.
func DecodeBytes(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errcat.New(errcat.InvalidJSON, "", "The request body must hold exactly one JSON object.")
	}
	return nil
}

func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return errcat.New(errcat.InvalidJSON, "", "The request body must be a JSON object.")
		}
		if msg, ok := integerMessage(typeErr); ok {
			return errcat.New(errcat.InvalidField, "body."+typeErr.Field, msg)
		}
		return errcat.Newf(errcat.InvalidField, "body."+typeErr.Field,
			"Field %s must be of JSON type %s.", typeErr.Field, jsonType(typeErr.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return errcat.Newf(errcat.InvalidField, "body."+name, "Unknown field %s.", name)
	default:
		return &errcat.Error{Code: errcat.InvalidJSON, Message: fmt.Sprintf("The request body is not valid JSON: %v.", trimJSONPrefix(err)), Cause: err}
	}
}

// integerMessage words the error of a JSON number that an integer field cannot
// hold (a fraction, or out of range): "must be of JSON type number" would
// confuse a client that did send a number.
func integerMessage(e *json.UnmarshalTypeError) (string, bool) {
	if !strings.HasPrefix(e.Value, "number") {
		return "", false
	}
	t := e.Type
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		lo, hi := minMaxInt(t.Bits())
		return fmt.Sprintf("Field %s must be an integer from %d to %d.", e.Field, lo, hi), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("Field %s must be an integer from 0 to %d.", e.Field, uint64(1)<<t.Bits()-1), true
	}
	return "", false
}

// minMaxInt returns the range of a signed integer of bits bits.
func minMaxInt(bits int) (int64, int64) {
	hi := int64(1)<<(bits-1) - 1
	return -hi - 1, hi
}

func trimJSONPrefix(err error) string { return strings.TrimPrefix(err.Error(), "json: ") }

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr", "interface":
		return "object"
	default:
		return "number"
	}
}

// RejectUserIDQuery answers invalid_field "query.user_id" when the query string
// names a user_id; the GW-User-Id header is the only source of identity.
func RejectUserIDQuery(r *http.Request) error {
	if r.URL.Query().Has("user_id") {
		return errcat.New(errcat.InvalidField, "query.user_id",
			"user_id is not accepted in a query; the end user is named by the GW-User-Id header.")
	}
	return nil
}

// RefuseUnknown is the member rule of the client APIs the gateway translates
// (Anthropic's Messages API, OpenAI's Responses API), whose bodies are the
// providers' own and whose params name the API's fields: the first member of
// top, in name order, that none of the lists known holds answers 400
// invalid_field naming it, "<name> is not supported: <why>. Leave it out.",
// why being reasons[name] or that api does not have it; nil when every
// member is known. What cannot be honoured is refused, never dropped.
func RefuseUnknown(top map[string]json.RawMessage, api string, reasons map[string]string, known ...[]string) error {
	names := slices.Sorted(maps.Keys(top))
	for _, k := range names {
		if slices.ContainsFunc(known, func(list []string) bool { return slices.Contains(list, k) }) {
			continue
		}
		why, ok := reasons[k]
		if !ok {
			why = "it is not a member of " + api + " that the gateway knows"
		}
		param := k
		if k == "" {
			param = `""` // a param always names the field: the empty name as JSON spells it
		}
		return errcat.Newf(errcat.InvalidField, param, "%s is not supported: %s. Leave it out.", strconv.Quote(k), why)
	}
	return nil
}
