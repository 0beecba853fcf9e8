package errcat_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/errcat"
)

// TestDocURL: every code's DocURL is its section of the catalog page,
// which has an element of that id; an unknown code has internal_error's;
// DocURL allocates nothing (it runs on every error answer, the 429 of the
// rate limit among them).
func TestDocURL(t *testing.T) {
	rec := httptest.NewRecorder()
	errcat.DocsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/docs/errors", nil))
	page := rec.Body.String()
	for _, e := range errcat.Entries() {
		u := errcat.DocURL(e.Code)
		if want := "/docs/errors#" + string(e.Code); u != want {
			t.Errorf("DocURL(%s) = %q, want %q", e.Code, u, want)
		}
		if !strings.Contains(page, `<section id="`+string(e.Code)+`">`) {
			t.Errorf("the catalog page has no section %q for DocURL %s", e.Code, u)
		}
	}
	if got, want := errcat.DocURL("no_such_code"), "/docs/errors#internal_error"; got != want {
		t.Errorf("DocURL(unknown) = %q, want %q", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = errcat.DocURL(errcat.RateLimitExceeded) }); n != 0 {
		t.Errorf("DocURL allocates %v times", n)
	}
}

// TestEnvelopeMatchesOpenAIErrorResponse: the envelope of every code, with
// and without a param and extra fields, is valid against OpenAI's
// ErrorResponse schema (testdata/openai_error_response.json), which allows
// members it does not list: doc_url inside error, gw_code beside it.
func TestEnvelopeMatchesOpenAIErrorResponse(t *testing.T) {
	raw, err := os.ReadFile("testdata/openai_error_response.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schemas map[string]map[string]any `json:"schemas"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range errcat.Entries() {
		for _, p := range []errcat.Public{
			{Type: e.Type, Code: e.Code, Message: e.Title, DocURL: errcat.DocURL(e.Code)},
			{Type: e.Type, Code: e.Code, Message: e.Title, Param: "body.x", DocURL: errcat.DocURL(e.Code),
				Extra: map[string]any{"available_fallbacks": []string{"a"}}},
		} {
			var v any
			if err := json.Unmarshal(errcat.Envelope(p), &v); err != nil {
				t.Fatal(err)
			}
			if err := validate(doc.Schemas, doc.Schemas["ErrorResponse"], v, "$"); err != nil {
				t.Errorf("%s (param %q): %v", e.Code, p.Param, err)
			}
		}
	}
}

// validate checks v against schema, for the keywords OpenAI's error schemas
// use: type, properties, required, anyOf, additionalProperties and $ref
// (to #/components/schemas/<name>, in schemas).
func validate(schemas map[string]map[string]any, schema map[string]any, v any, at string) error {
	if ref, ok := schema["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		s, ok := schemas[name]
		if !ok {
			return fmt.Errorf("%s: unknown $ref %s", at, ref)
		}
		return validate(schemas, s, v, at)
	}
	if alts, ok := schema["anyOf"].([]any); ok {
		for _, a := range alts {
			if validate(schemas, a.(map[string]any), v, at) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: %v matches no anyOf alternative", at, v)
	}
	if typ, ok := schema["type"].(string); ok && typ != jsonType(v) {
		return fmt.Errorf("%s: %s, want %s", at, jsonType(v), typ)
	}
	obj, _ := v.(map[string]any)
	for _, r := range asList(schema["required"]) {
		if _, ok := obj[r.(string)]; !ok {
			return fmt.Errorf("%s: required member %s is missing", at, r)
		}
	}
	props, _ := schema["properties"].(map[string]any)
	for k, sub := range obj {
		if s, ok := props[k].(map[string]any); ok {
			if err := validate(schemas, s, sub, at+"."+k); err != nil {
				return err
			}
		} else if schema["additionalProperties"] == false {
			return fmt.Errorf("%s: member %s is not allowed", at, k)
		}
	}
	return nil
}

func asList(v any) []any { l, _ := v.([]any); return l }

// jsonType is the JSON Schema type of a value decoded by encoding/json.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return "object"
}

// TestValidateRejects: validate is not vacuous.
func TestValidateRejects(t *testing.T) {
	raw, _ := os.ReadFile("testdata/openai_error_response.json")
	var doc struct {
		Schemas map[string]map[string]any `json:"schemas"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.Schemas
	for _, body := range []string{
		`{"gw_code":"x"}`,
		`{"error":{"type":"t","code":"c","message":"m"}}`,
		`{"error":{"type":"t","code":"c","message":1,"param":null}}`,
		`{"error":{"type":"t","code":7,"message":"m","param":null}}`,
	} {
		var v any
		_ = json.Unmarshal([]byte(body), &v)
		if validate(schemas, schemas["ErrorResponse"], v, "$") == nil {
			t.Errorf("validate accepts %s", body)
		}
	}
}

// TestPlainBodies: an error with no message, param or extra fields (the
// body Write sends from its precomputed copy) answers exactly what
// Envelope encodes for it, for every code.
func TestPlainBodies(t *testing.T) {
	for _, e := range errcat.Entries() {
		err := &errcat.Error{Code: e.Code}
		rec := httptest.NewRecorder()
		errcat.Write(rec, err)
		p, _ := errcat.PublicOf(err)
		if diff := cmp.Diff(string(errcat.Envelope(p))+"\n", rec.Body.String()); diff != "" {
			t.Errorf("%s body mismatch (-want +got):\n%s", e.Code, diff)
		}
	}
	// Two answers do not share a buffer that either could change.
	a, b := httptest.NewRecorder(), httptest.NewRecorder()
	errcat.Write(a, &errcat.Error{Code: errcat.RateLimitExceeded})
	errcat.Write(b, &errcat.Error{Code: errcat.RateLimitExceeded, Message: "Rate limit exceeded"})
	if a.Body.String() != b.Body.String() {
		t.Errorf("%s != %s", a.Body, b.Body)
	}
}
