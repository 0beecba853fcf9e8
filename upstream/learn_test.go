package upstream_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// fakeServer serves answers by "METHOD /path" (a JSON body; "" is 404) and
// records the model of each /api/show request.
func fakeServer(t *testing.T, answers map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := answers[r.Method+" "+r.URL.Path]
		if r.URL.Path == "/api/show" {
			var req struct{ Model string }
			b, _ := io.ReadAll(r.Body)
			json.Unmarshal(b, &req)
			body, ok = answers["POST /api/show "+req.Model]
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The answers of the three servers, in their real shapes (trimmed).
var (
	llamaCppServer = map[string]string{
		"GET /v1/models": `{"object":"list","data":[{"id":"/models/qwen2.5-0.5b-instruct-q4_k_m.gguf","object":"model","created":1700000000,"owned_by":"llamacpp","meta":{"vocab_type":2,"n_vocab":151936,"n_ctx_train":32768,"n_embd":896,"n_params":494032768,"size":397807936}}]}`,
		"GET /props": `{"default_generation_settings":{"id":0,"id_task":-1,"n_ctx":512,"speculative":false,"is_processing":false,"params":{"n_predict":-1,"temperature":0.8}},` +
			`"total_slots":1,"model_path":"/models/qwen2.5-0.5b-instruct-q4_k_m.gguf","chat_template":"...","modalities":{"vision":false,"audio":false},"build_info":"b5000-abc"}`,
	}
	vllmServer = map[string]string{
		"GET /v1/models": `{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","created":1700000000,"owned_by":"vllm","root":"Qwen/Qwen2.5-7B-Instruct","parent":null,"max_model_len":32768,"permission":[{"id":"modelperm-1","object":"model_permission","allow_sampling":true}]}]}`,
	}
	ollamaShow = func(params string) string {
		return `{"modelfile":"# Modelfile","parameters":` + quote(params) + `,"template":"{{ .Prompt }}",` +
			`"details":{"parent_model":"","format":"gguf","family":"llama","families":["llama"],"parameter_size":"3.2B","quantization_level":"Q4_K_M"},` +
			`"model_info":{"general.architecture":"llama","general.parameter_count":3212749888,"llama.context_length":131072,"llama.embedding_length":3072},` +
			`"capabilities":["completion","tools"],"modified_at":"2025-01-01T00:00:00Z"}`
	}
	ollamaServer = map[string]string{
		"GET /v1/models":               `{"object":"list","data":[{"id":"llama3.2:latest","object":"model","created":1700000000,"owned_by":"library"}]}`,
		"POST /api/show llama3.2":      ollamaShow("num_ctx                        8192\nstop                           \"<|eot_id|>\""),
		"POST /api/show llama3.2-long": ollamaShow("stop \"<|eot_id|>\""),
	}
	openAIServer = map[string]string{
		"GET /v1/models": `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","created":1700000000,"owned_by":"system"}]}`,
	}
)

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestLearn: the context window comes from the server that serves the
// model, where it says one, the smallest of a chain's; the catalog's
// otherwise.
func TestLearn(t *testing.T) {
	t.Parallel()
	llama, vllm, ollama, openai := fakeServer(t, llamaCppServer), fakeServer(t, vllmServer), fakeServer(t, ollamaServer), fakeServer(t, openAIServer)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	be := func(provider, alias string) upstream.BackendInfo {
		return upstream.BackendInfo{Provider: provider, RouterAlias: alias, Status: upstream.StatusAvailable}
	}
	for _, tc := range []struct {
		name     string
		window   int // the catalog's
		chain    []upstream.BackendInfo
		backends upstream.Backends
		want     upstream.Learned
	}{
		{"llama.cpp /props", 131072, []upstream.BackendInfo{be("local", "local-chat")}, upstream.Backends{LocalURL: llama.URL + "/v1"},
			upstream.Learned{Window: 512, Source: upstream.SourceLlamaCpp}},
		{"vLLM max_model_len", 8192, []upstream.BackendInfo{be("local", "Qwen/Qwen2.5-7B-Instruct")}, upstream.Backends{LocalURL: vllm.URL + "/v1/"},
			upstream.Learned{Window: 32768, Source: upstream.SourceVLLM}},
		{"Ollama num_ctx", 131072, []upstream.BackendInfo{be("local", "llama3.2")}, upstream.Backends{LocalURL: ollama.URL + "/v1"},
			upstream.Learned{Window: 8192, Source: upstream.SourceOllama}},
		{"Ollama context_length bounds a larger catalog value", 200000, []upstream.BackendInfo{be("local", "llama3.2-long")}, upstream.Backends{LocalURL: ollama.URL + "/v1"},
			upstream.Learned{Window: 131072, Source: upstream.SourceOllama}},
		{"Ollama context_length keeps a smaller catalog value", 4096, []upstream.BackendInfo{be("local", "llama3.2-long")}, upstream.Backends{LocalURL: ollama.URL + "/v1"},
			upstream.Learned{Window: 4096, Source: upstream.SourceCatalog}},
		{"a server that says none", 128000, []upstream.BackendInfo{be("cloudA", "gpt-4o-mini")}, upstream.Backends{CloudAURL: openai.URL + "/v1"},
			upstream.Learned{Window: 128000, Source: upstream.SourceCatalog}},
		{"the smallest of a chain", 131072, []upstream.BackendInfo{be("local", "Qwen/Qwen2.5-7B-Instruct"), be("cloudA", "x")},
			upstream.Backends{LocalURL: vllm.URL + "/v1", CloudAURL: llama.URL + "/v1"},
			upstream.Learned{Window: 512, Source: upstream.SourceLlamaCpp}},
		{"a server down", 4096, []upstream.BackendInfo{be("local", "m")}, upstream.Backends{LocalURL: down.URL + "/v1"},
			upstream.Learned{Window: 4096, Source: upstream.SourceCatalog, Errors: []string{"local: connection refused"}}},
		{"through an external router", 4096, []upstream.BackendInfo{be("local", "local-chat")}, upstream.Backends{LocalURL: llama.URL + "/v1", RouterURL: llama.URL + "/v1"},
			upstream.Learned{Window: 4096, Source: upstream.SourceCatalog}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cat, err := upstream.NewCatalog([]upstream.ModelInfo{{Alias: "m", Kind: upstream.KindChat, ContextWindow: tc.window, Backends: tc.chain}}, "")
			if err != nil {
				t.Fatal(err)
			}
			view := cat.WithStatus(tc.backends) // made before: sees what is learned
			got := upstream.NewLearner(nil, time.Second).Learn(t.Context(), cat, tc.backends)
			tc.want.Alias = "m"
			if diff := cmp.Diff([]upstream.Learned{tc.want}, got); diff != "" {
				t.Errorf("Learn() mismatch (-want +got):\n%s", diff)
			}
			m := view.Lookup("m")
			if m.Window() != tc.want.Window || m.WindowSource() != tc.want.Source {
				t.Errorf("a copy's Window() = %d from %s, want %d from %s", m.Window(), m.WindowSource(), tc.want.Window, tc.want.Source)
			}
		})
	}
}

// TestLearnAgain: learning again replaces what was learned (a server whose
// window changed, or that went away).
func TestLearnAgain(t *testing.T) {
	t.Parallel()
	llama := fakeServer(t, llamaCppServer)
	cat, _ := upstream.NewCatalog([]upstream.ModelInfo{{Alias: "m", Kind: upstream.KindChat, ContextWindow: 4096,
		Backends: []upstream.BackendInfo{{Provider: "local", RouterAlias: "x", Status: upstream.StatusAvailable}}}}, "")
	l := upstream.NewLearner(nil, time.Second)
	l.Learn(t.Context(), cat, upstream.Backends{LocalURL: llama.URL + "/v1"})
	if got := cat.Lookup("m").Window(); got != 512 {
		t.Fatalf("Window() = %d, want 512 from /props", got)
	}
	llama.Close()
	l.Learn(t.Context(), cat, upstream.Backends{LocalURL: llama.URL + "/v1"})
	if m := cat.Lookup("m"); m.Window() != 4096 || m.WindowSource() != upstream.SourceCatalog {
		t.Errorf("after the server went away: %d from %s, want the catalog's 4096", m.Window(), m.WindowSource())
	}
}
