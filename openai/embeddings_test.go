package openai_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
)

// strs returns a JSON array of n copies of the JSON value v.
func mediaStrs(n int, v string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(v+",", n), ",") + "]"
}

// tokens returns a JSON token array of n tokens.
func mediaTokens(n int) string { return mediaStrs(n, "42") }

func TestEmbeddingsErrors(t *testing.T) {
	noEmbed := &auth.Tenant{ID: "acme", Models: []string{"lm-4-scout"}}
	big := `"` + strings.Repeat("a", 8193) + `"`
	tests := []struct {
		name   string
		body   string
		tenant *auth.Tenant
		want   testkit.Error
	}{
		{"invalid JSON", `{"model":"lm-embed",`, nil, testkit.Error{Status: 400, Code: "invalid_json"}},
		{"not an object", `["lm-embed"]`, nil, testkit.Error{Status: 400, Code: "invalid_json"}},
		{"two objects", `{"model":"lm-embed","input":"a"} {}`, nil, testkit.Error{Status: 400, Code: "invalid_json"}},
		{"missing model", `{"input":"a"}`, nil, testkit.Error{Status: 400, Code: "missing_field", Param: "model"}},
		{"null model", `{"model":null,"input":"a"}`, nil, testkit.Error{Status: 400, Code: "missing_field", Param: "model"}},
		{"empty model", `{"model":"","input":"a"}`, nil, testkit.Error{Status: 400, Code: "missing_field", Param: "model"}},
		{"model not a string", `{"model":7,"input":"a"}`, nil, testkit.Error{Status: 400, Code: "invalid_field", Param: "model"}},
		{"unknown model", `{"model":"nope","input":"a"}`, nil, testkit.Error{Status: 400, Code: "model_not_in_allowlist", Param: "model"}},
		{"chat model", `{"model":"lm-4-scout","input":"a"}`, nil, testkit.Error{Status: 400, Code: "model_not_in_allowlist", Param: "model"}},
		{"image model", `{"model":"lm-image","input":"a"}`, nil, testkit.Error{Status: 400, Code: "model_not_in_allowlist", Param: "model"}},
		{"not in tenant allowlist", `{"model":"lm-embed","input":"a"}`, noEmbed, testkit.Error{Status: 400, Code: "model_not_in_allowlist", Param: "model"}},
		{"missing input", `{"model":"lm-embed"}`, nil, testkit.Error{Status: 400, Code: "missing_field", Param: "input"}},
		{"null input", `{"model":"lm-embed","input":null}`, nil, testkit.Error{Status: 400, Code: "missing_field", Param: "input"}},
		{"number input", `{"model":"lm-embed","input":5}`, nil, testkit.Error{Status: 400, Code: "invalid_field", Param: "input"}},
		{"object input", `{"model":"lm-embed","input":{"a":1}}`, nil, testkit.Error{Status: 400, Code: "invalid_field", Param: "input"}},
		{"empty array", `{"model":"lm-embed","input":[]}`, nil, testkit.Error{Status: 400, Code: "invalid_field", Param: "input"}},
		{"array of booleans", `{"model":"lm-embed","input":[true]}`, nil, testkit.Error{Status: 400, Code: "invalid_field", Param: "input"}},
		{"strings then token", `{"model":"lm-embed","input":["a",1]}`, nil, testkit.Error{Status: 400, Code: "invalid_field", Param: "input"}},
		{"token arrays then string", `{"model":"lm-embed","input":[[1],"a"]}`, nil, testkit.Error{Status: 400, Code: "invalid_field", Param: "input"}},
		{"negative token", `{"model":"lm-embed","input":[1,-2]}`, nil, testkit.Error{Status: 400, Code: "invalid_field", Param: "input"}},
		{"fractional token", `{"model":"lm-embed","input":[1.5]}`, nil, testkit.Error{Status: 400, Code: "invalid_field", Param: "input"}},
		{"nested too deep", `{"model":"lm-embed","input":[[1,[2]]]}`, nil, testkit.Error{Status: 400, Code: "invalid_field", Param: "input"}},
		{"257 strings", `{"model":"lm-embed","input":` + mediaStrs(257, `"a"`) + `}`, nil, testkit.Error{Status: 400, Code: "embedding_input_too_large", Param: "input"}},
		{"257 token arrays", `{"model":"lm-embed","input":` + mediaStrs(257, `[1]`) + `}`, nil, testkit.Error{Status: 400, Code: "embedding_input_too_large", Param: "input"}},
		{"string of 8193 bytes", `{"model":"lm-embed","input":` + big + `}`, nil, testkit.Error{Status: 400, Code: "embedding_input_too_large", Param: "input"}},
		{"element of 8193 bytes", `{"model":"lm-embed","input":["a",` + big + `]}`, nil, testkit.Error{Status: 400, Code: "embedding_input_too_large", Param: "input"}},
		{"8194 UTF-8 bytes in 4097 runes", `{"model":"lm-embed","input":"` + strings.Repeat("é", 4097) + `"}`, nil,
			testkit.Error{Status: 400, Code: "embedding_input_too_large", Param: "input"}},
		{"escaped runes counted decoded", `{"model":"lm-embed","input":"` + strings.Repeat(`\u00e9`, 4097) + `"}`, nil,
			testkit.Error{Status: 400, Code: "embedding_input_too_large", Param: "input"}},
		{"token array of 2049", `{"model":"lm-embed","input":` + mediaTokens(2049) + `}`, nil, testkit.Error{Status: 400, Code: "embedding_input_too_large", Param: "input"}},
		{"token arrays, one of 2049", `{"model":"lm-embed","input":[[1],` + mediaTokens(2049) + `]}`, nil,
			testkit.Error{Status: 400, Code: "embedding_input_too_large", Param: "input"}},
		// The body's user_id is the middleware's; other unknown fields pass.
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newMediaEnv(t)
			e.refused(t, e.embed(t, tt.body, orMediaTenant(tt.tenant)), tt.want)
		})
	}
}

func TestEmbeddingsForwards(t *testing.T) {
	tests := []struct {
		name  string
		input string
		n     int // embeddings the fake answers
	}{
		{"one string", `"hello"`, 1},
		{"256 strings", mediaStrs(256, `"a"`), 256},
		{"string of 8192 bytes", `"` + strings.Repeat("a", 8192) + `"`, 1},
		{"8192 UTF-8 bytes in 4096 runes", `"` + strings.Repeat("é", 4096) + `"`, 1},
		{"escaped, 8192 bytes decoded", `"` + strings.Repeat(`\u00e9`, 4096) + `"`, 1},
		{"element of 8192 bytes", `["a","` + strings.Repeat("b", 8192) + `"]`, 2},
		{"token array of 2048", mediaTokens(2048), 1},
		{"256 token arrays of 2048", mediaStrs(256, mediaTokens(2048)), 256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newMediaEnv(t)
			in := `{"input":` + tt.input + `,"encoding_format":"float","model":"lm-embed","dimensions":8,"extra":{"x":[1,2]}}`
			w := e.embed(t, in, mediaTenant)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body.String())
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var ans struct {
				Object string            `json:"object"`
				Data   []json.RawMessage `json:"data"`
				Model  string            `json:"model"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil {
				t.Fatal(err)
			}
			if ans.Object != "list" || len(ans.Data) != tt.n {
				t.Errorf("answer object %q with %d embeddings, want list with %d", ans.Object, len(ans.Data), tt.n)
			}

			calls := e.backend.Calls()
			if len(calls) != 1 {
				t.Fatalf("upstream got %d calls, want 1", len(calls))
			}
			c := calls[0]
			if c.Path != "/v1/embeddings" || c.Model != "lm-embed-text:v1.5" {
				t.Errorf("upstream call %s model %q, want /v1/embeddings model lm-embed-text:v1.5", c.Path, c.Model)
			}
			if !strings.HasPrefix(string(c.Body), `{"model":"lm-embed-text:v1.5",`) {
				t.Errorf("upstream body does not start with the model: %.80s", c.Body)
			}
			var sent, orig map[string]json.RawMessage
			if err := json.Unmarshal(c.Body, &sent); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal([]byte(in), &orig)
			asText := func(m map[string]json.RawMessage) map[string]string {
				out := map[string]string{}
				for k, v := range m {
					if k != "model" {
						out[k] = string(v)
					}
				}
				return out
			}
			if diff := cmp.Diff(asText(orig), asText(sent)); diff != "" {
				t.Errorf("forwarded fields mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEmbeddingsUpstreamErrors(t *testing.T) {
	tests := []struct {
		name  string
		reply upstreamtest.Reply
		want  testkit.Error
	}{
		{"4xx passed on", upstreamtest.Reply{Status: 422, ErrorMessage: "bad input"}, testkit.Error{Status: 422, Code: "upstream_bad_request"}},
		{"5xx", upstreamtest.Reply{Status: 500}, testkit.Error{Status: 502, Code: "upstream_error"}},
		{"not JSON", upstreamtest.Reply{Body: []byte("oops"), ContentType: "application/json"}, testkit.Error{Status: 502, Code: "upstream_error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newMediaEnv(t, upstreamtest.WithReply(tt.reply))
			w := e.embed(t, `{"model":"lm-embed","input":"a"}`, mediaTenant)
			testkit.CheckError(t, w, tt.want)
		})
	}

	t.Run("unavailable", func(t *testing.T) {
		refused := upstreamtest.RefusedURL(t)
		e := newMediaEnvWith(t, nil, upstream.Backends{LocalURL: refused, CloudAURL: refused})
		w := e.embed(t, `{"model":"lm-embed","input":"a"}`, mediaTenant)
		testkit.CheckError(t, w, testkit.Error{Status: 503, Code: "upstream_unavailable"})
	})
}

func TestEmbeddingsFallbackNotice(t *testing.T) {
	// lm-embed: local, then cloudA. The local backend fails with a 503.
	e := newMediaEnv(t, upstreamtest.WithScript(upstreamtest.Reply{Status: 503}))
	w := e.embed(t, `{"model":"lm-embed","input":["a","b"]}`, mediaTenant)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	if got := w.Header().Get("GW-Notice"); got != "backend_fallback" {
		t.Errorf("GW-Notice = %q, want backend_fallback", got)
	}
	calls := e.backend.Calls()
	if len(calls) != 2 || calls[1].Model != "lm-embed-text-v1.5" {
		t.Errorf("calls %+v, want a second call with cloudA's alias", calls)
	}
}
