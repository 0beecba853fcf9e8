package apidocs_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/apidocs"
	"github.com/google/go-cmp/cmp"
)

// fetch answers one GET through h and returns the recorded response.
func fetch(t *testing.T, h http.HandlerFunc, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Result()
}

// fetchPage fetches the HTML page at path: 200, text/html in UTF-8, and
// nosniff, as every public page answers.
func fetchPage(t *testing.T, h http.HandlerFunc, path string) *http.Response {
	t.Helper()
	res := fetch(t, h, path)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s: status = %d, want 200", path, res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("%s: Content-Type = %q, want text/html; charset=utf-8", path, ct)
	}
	if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options = %q, want nosniff", path, got)
	}
	return res
}

func readBody(t *testing.T, res *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return b
}

// document answers GET /openapi.json of apidocs.New(version) and decodes it.
func document(t *testing.T, version string) map[string]any {
	t.Helper()
	res := fetch(t, apidocs.New(version).OpenAPIJSON, "/openapi.json")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json status = %d, want 200", res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET /openapi.json Content-Type = %q, want application/json", ct)
	}
	var doc map[string]any
	if err := json.Unmarshal(readBody(t, res), &doc); err != nil {
		t.Fatalf("GET /openapi.json is not valid JSON: %v", err)
	}
	return doc
}

func object(t *testing.T, v any, where string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is %T, want a JSON object", where, v)
	}
	return m
}

var httpMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

// operations returns "METHOD path" -> operation of doc.
func operations(t *testing.T, doc map[string]any) map[string]map[string]any {
	t.Helper()
	ops := map[string]map[string]any{}
	for path, item := range object(t, doc["paths"], "paths") {
		for m, op := range object(t, item, "paths."+path) {
			if slices.Contains(httpMethods, m) {
				ops[strings.ToUpper(m)+" "+path] = object(t, op, m+" "+path)
			}
		}
	}
	return ops
}

func TestOpenAPIVersionAndKind(t *testing.T) {
	for _, version := range []string{"0.1.0", ""} {
		doc := document(t, version)
		if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
			t.Errorf("New(%q): openapi = %q, want 3.1.x", version, v)
		}
		info := object(t, doc["info"], "info")
		if got := info["version"]; got != "0.1.0" {
			t.Errorf("New(%q): info.version = %v, want 0.1.0", version, got)
		}
	}
	if got := object(t, document(t, "0.2.0-dev")["info"], "info")["version"]; got != "0.2.0-dev" {
		t.Errorf("New(\"0.2.0-dev\"): info.version = %v, want 0.2.0-dev", got)
	}
}

func TestOpenAPIKeepsMemberOrder(t *testing.T) {
	body := readBody(t, fetch(t, apidocs.New("9.9.9").OpenAPIJSON, "/openapi.json"))
	dec := json.NewDecoder(bytes.NewReader(body))
	var keys []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"openapi", "info", "servers", "security", "tags", "paths", "components"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("top-level keys mismatch (-want +got):\n%s", diff)
	}
}

func TestOpenAPIPaths(t *testing.T) {
	ops := operations(t, document(t, "0.1.0"))
	want := []string{
		"POST /v1/chat/completions",
		"GET /v1/models",
		"GET /v1/models/{id}",
		"POST /v1/messages",
		"POST /v1/messages/count_tokens",
		"GET /v1/info",
		"POST /v1/embeddings",
		"POST /v1/images/generations",
		"GET /v1/images",
		"GET /v1/images/{id}",
		"GET /v1/images/{id}/content",
		"DELETE /v1/images/{id}",
		"POST /v1/audio/transcriptions",
		"POST /v1/audio/translations",
		"POST /v1/tools/execute",
		"GET /v1/memory",
		"POST /v1/memory",
		"DELETE /v1/memory",
		"GET /v1/memory/usage",
		"PUT /v1/system-prompts/{level}",
		"DELETE /v1/system-prompts/{level}",
		"GET /v1/system-prompts/{level}/versions",
		"PUT /v1/system-prompts/{level}/current/{n}",
		"DELETE /v1/system-prompts/{level}/v/{n}",
		"GET /v1/tenant/config",
		"PUT /v1/tenant/config",
		"GET /v1/usage",
		"POST /c1/chat",
		"GET /c1/conversations",
		"GET /c1/conversations/{id}",
		"DELETE /c1/conversations/{id}",
		"GET /",
		"GET /healthz",
		"GET /readyz",
		"GET /errors",
		"GET /docs/errors",
		"GET /docs/api",
		"GET /openapi.json",
		"GET /openapi",
		"GET /redoc",
		"GET /playground",
		"GET /a1/agents",
		"POST /a1/agents/{name}/chat",
		"POST /a1/agents/{name}/sessions",
		"GET /a1/agents/{name}/sessions",
		"GET /a1/agents/{name}/sessions/{sid}",
		"POST /a1/agents/{name}/sessions/{sid}/messages",
		"POST /a1/agents/{name}/sessions/{sid}/compact",
		"GET /a1/agents/{name}/sessions/{sid}/lineage",
		"GET /a1/rag/indices",
		"POST /a1/rag/indices/{id}/documents",
		"POST /a1/rag/indices/{id}/documents/append",
		"GET /a1/rag/indices/{id}/documents",
		"GET /a1/rag/indices/{id}/documents/{doc_id}",
		"DELETE /a1/rag/indices/{id}/documents/{doc_id}",
		"GET /a1/rag/indices/{id}/search",
		"GET /a1/runtimes",
		"POST /a1/runs",
		"GET /a1/runs",
		"GET /a1/runs/{id}",
		"POST /a1/runs/{id}/cancel",
	}
	for _, w := range want {
		if _, ok := ops[w]; !ok {
			t.Errorf("operation %s missing", w)
		}
	}
	// The complete check against the route table, both ways, is the root
	// package's TestOpenAPIDescribesEveryRoute.
}

func TestOpenAPIOperations(t *testing.T) {
	doc := document(t, "0.1.0")
	tags := map[string]bool{}
	for _, tg := range doc["tags"].([]any) {
		tags[object(t, tg, "tag")["name"].(string)] = true
	}
	ids := map[string]string{}
	for key, op := range operations(t, doc) {
		responses, _ := op["responses"].(map[string]any)
		if len(responses) == 0 {
			t.Errorf("%s has no responses", key)
		}
		for status := range responses {
			if status != "default" && (len(status) != 3 || status[0] < '1' || status[0] > '5') {
				t.Errorf("%s: response key %q is not a status code", key, status)
			}
		}
		id, _ := op["operationId"].(string)
		if id == "" {
			t.Errorf("%s has no operationId", key)
		} else if prev, dup := ids[id]; dup {
			t.Errorf("operationId %q used by %s and %s", id, prev, key)
		}
		ids[id] = key
		if s, _ := op["summary"].(string); s == "" {
			t.Errorf("%s has no summary", key)
		}
		opTags, _ := op["tags"].([]any)
		if len(opTags) == 0 {
			t.Errorf("%s has no tag", key)
		}
		for _, tg := range opTags {
			if !tags[tg.(string)] {
				t.Errorf("%s: tag %v is not declared in tags", key, tg)
			}
		}
	}
}

func TestOpenAPIPathParametersDeclared(t *testing.T) {
	doc := document(t, "0.1.0")
	params := object(t, object(t, doc["components"], "components")["parameters"], "components.parameters")
	for path, rawItem := range object(t, doc["paths"], "paths") {
		item := object(t, rawItem, path)
		for m, rawOp := range item {
			if !slices.Contains(httpMethods, m) {
				continue
			}
			declared := map[string]bool{}
			for _, list := range []any{item["parameters"], object(t, rawOp, m)["parameters"]} {
				ps, _ := list.([]any)
				for _, p := range ps {
					pm := object(t, p, path+" parameter")
					if ref, ok := pm["$ref"].(string); ok {
						pm = object(t, params[strings.TrimPrefix(ref, "#/components/parameters/")], ref)
					}
					if pm["in"] == "path" {
						declared[pm["name"].(string)] = true
						if pm["required"] != true {
							t.Errorf("%s %s: path parameter %v must be required", m, path, pm["name"])
						}
					}
				}
			}
			for _, seg := range strings.Split(path, "/") {
				if strings.HasPrefix(seg, "{") && !declared[strings.Trim(seg, "{}")] {
					t.Errorf("%s %s: path parameter %s not declared", m, path, seg)
				}
			}
		}
	}
}

func TestOpenAPISchemas(t *testing.T) {
	doc := document(t, "0.1.0")
	schemas := object(t, object(t, doc["components"], "components")["schemas"], "components.schemas")
	for _, name := range []string{
		"ChatRequest", "ImageRef", "StoredMessage", "ConversationSummary", "ModelCatalog",
		"ModelInfo", "Modalities", "ModelConstraints", "BackendInfo", "BackendStatus",
		"ReadyReport", "ErrorEnvelope",
		"Agent", "AgentSession", "Lineage", "RagIndex", "RagDocument", "RagHit", "Run", "Runtime",
		"AnthropicMessageRequest", "AnthropicMessage", "AnthropicCountTokensRequest", "AnthropicTokenCount", "AnthropicErrorResponse",
		"UsageList", "UsageGroup",
	} {
		if _, ok := schemas[name]; !ok {
			t.Errorf("schema %s missing", name)
		}
	}

	// ChatRequest: only message is required; the pass-through fields are optional.
	chat := object(t, schemas["ChatRequest"], "ChatRequest")
	var required []string
	for _, r := range chat["required"].([]any) {
		required = append(required, r.(string))
	}
	if diff := cmp.Diff([]string{"message"}, required); diff != "" {
		t.Errorf("ChatRequest required mismatch (-want +got):\n%s", diff)
	}
	props := object(t, chat["properties"], "ChatRequest.properties")
	for _, name := range []string{"message", "conversation_id", "model", "provider", "system_prompt", "stream", "ephemeral", "images", "keep_last_turns", "max_tokens", "temperature", "tools", "tool_choice", "response_format"} {
		if _, ok := props[name]; !ok {
			t.Errorf("ChatRequest.%s missing", name)
		}
	}
	if _, ok := props["user_id"]; ok {
		t.Error("ChatRequest.user_id is described, but a body user_id is always rejected")
	}

	// ModelInfo and Modalities: every field of the spec is required.
	for name, fields := range map[string][]string{
		"ModelInfo":  {"alias", "description", "family", "context_window", "modalities", "tools", "json_mode", "reasoning_mode", "license", "backends", "constraints", "notes"},
		"Modalities": {"text_in", "text_out", "image_in", "audio_in", "video_in", "image_out"},
	} {
		var got []string
		for _, r := range object(t, schemas[name], name)["required"].([]any) {
			got = append(got, r.(string))
		}
		sort.Strings(got)
		want := slices.Clone(fields)
		sort.Strings(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s required mismatch (-want +got):\n%s", name, diff)
		}
	}

	status := object(t, schemas["BackendStatus"], "BackendStatus")
	if diff := cmp.Diff([]any{"available", "deprecated", "unconfigured", "planned"}, status["enum"]); diff != "" {
		t.Errorf("BackendStatus enum mismatch (-want +got):\n%s", diff)
	}
}

// TestOpenAPIRefsResolve walks the whole document: every $ref points at an
// existing component.
func TestOpenAPIRefsResolve(t *testing.T) {
	doc := document(t, "0.1.0")
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if !strings.HasPrefix(ref, "#/") {
					t.Errorf("%s: $ref %q is not local", where, ref)
					return
				}
				var cur any = doc
				for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
					m, _ := cur.(map[string]any)
					cur = m[part]
				}
				if cur == nil {
					t.Errorf("%s: $ref %q does not resolve", where, ref)
				}
			}
			for k, e := range x {
				walk(e, where+"."+k)
			}
		case []any:
			for _, e := range x {
				walk(e, where+"[]")
			}
		}
	}
	walk(doc, "$")
}

func TestOpenAPISecurity(t *testing.T) {
	doc := document(t, "0.1.0")
	schemes := object(t, object(t, doc["components"], "components")["securitySchemes"], "securitySchemes")
	bearer := object(t, schemes["bearer"], "securitySchemes.bearer")
	if bearer["type"] != "http" || bearer["scheme"] != "bearer" {
		t.Errorf("securitySchemes.bearer = %v, want type http, scheme bearer", bearer)
	}
	apiKey := object(t, schemes["apiKey"], "securitySchemes.apiKey")
	if apiKey["type"] != "apiKey" || apiKey["in"] != "header" || apiKey["name"] != "x-api-key" {
		t.Errorf("securitySchemes.apiKey = %v, want the x-api-key header", apiKey)
	}
	// Either scheme: x-api-key authenticates like the bearer on every route.
	if diff := cmp.Diff([]any{map[string]any{"bearer": []any{}}, map[string]any{"apiKey": []any{}}}, doc["security"]); diff != "" {
		t.Errorf("top-level security mismatch (-want +got):\n%s", diff)
	}
	public := map[string]bool{"/": true, "/healthz": true, "/readyz": true, "/errors": true, "/docs/errors": true, "/docs/api": true, "/openapi.json": true, "/openapi": true, "/redoc": true, "/playground": true}
	for key, op := range operations(t, doc) {
		path := key[strings.IndexByte(key, ' ')+1:]
		sec, has := op["security"]
		if public[path] {
			if diff := cmp.Diff([]any{}, sec); !has || diff != "" {
				t.Errorf("%s is public and must have security [] (got %v)", key, sec)
			}
			continue
		}
		if has {
			t.Errorf("%s overrides the bearer security with %v", key, sec)
		}
		if s, _ := op["x-gw-scope"].(string); s == "" {
			t.Errorf("%s has no x-gw-scope", key)
		}
	}
}

// TestOpenAPIHeaders checks that the wire headers docs/contract.md names are
// described, as request parameters or response headers.
func TestOpenAPIHeaders(t *testing.T) {
	doc := document(t, "0.1.0")
	comps := object(t, doc["components"], "components")
	seen := map[string]bool{}
	for _, p := range object(t, comps["parameters"], "parameters") {
		pm := object(t, p, "parameter")
		if pm["in"] == "header" {
			seen[strings.ToLower(pm["name"].(string))] = true
		}
	}
	var collect func(v any)
	collect = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if hs, ok := x["headers"].(map[string]any); ok {
				for name := range hs {
					seen[strings.ToLower(name)] = true
				}
			}
			for _, e := range x {
				collect(e)
			}
		case []any:
			for _, e := range x {
				collect(e)
			}
		}
	}
	collect(comps["responses"])
	collect(doc["paths"])
	for _, h := range []string{"GW-User-Id", "GW-Tenant-Id", "GW-Cloud-Consent", "x-request-id", "gw-conversation-id", "x-conversation-id", "gw-applied", "x-rust-api-applied", "GW-Notice", "Retry-After", "GW-Caller-Depth", "GW-Session-Id"} {
		if !seen[strings.ToLower(h)] {
			t.Errorf("header %s is not described", h)
		}
	}
}

func TestOpenAPIAliasServesSameDocument(t *testing.T) {
	d := apidocs.New("0.1.0")
	a := fetch(t, d.OpenAPIJSON, "/openapi.json")
	b := fetch(t, d.OpenAPI, "/openapi")
	if got := b.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("GET /openapi Content-Type = %q, want application/json", got)
	}
	if b.StatusCode != http.StatusOK {
		t.Errorf("GET /openapi status = %d, want 200", b.StatusCode)
	}
	if !bytes.Equal(readBody(t, a), readBody(t, b)) {
		t.Error("GET /openapi and GET /openapi.json bodies differ")
	}
}
