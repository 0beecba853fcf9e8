package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// TestOpenAINodeClient runs e2e/node/compat.mjs (the official openai and
// @anthropic-ai/sdk npm clients, the Vercel AI SDK, LangChain's ChatOpenAI and
// the OpenAI Agents SDK) against gatewayd. It needs node and
// e2e/node/node_modules (cd e2e/node && npm ci).
func TestOpenAINodeClient(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the OpenAI client compatibility check needs node and `cd e2e/node && npm ci`")
	}
	for _, pkg := range []string{"openai", filepath.Join("@anthropic-ai", "sdk"), "ai", filepath.Join("@ai-sdk", "openai"),
		filepath.Join("@langchain", "openai"), filepath.Join("@openai", "agents")} {
		if _, err := os.Stat(filepath.Join("node", "node_modules", pkg)); err != nil {
			t.Skipf("e2e/node/node_modules/%s is missing: run `cd e2e/node && npm ci` to enable the client compatibility check", pkg)
		}
	}
	// lm-4-scout falls back from a refused local backend to cloudA (so a
	// backend_fallback notice is sent); cloudA calls the tools it is offered
	// (toolBackend); cloudB cuts its streams half-way.
	cloudA := httptest.NewServer(toolBackend(upstreamtest.NewHandler(upstreamtest.Config{ID: "chatcmpl-clouda"})))
	t.Cleanup(cloudA.Close)
	g := start(t, func(s *setup) {
		s.LocalURL = refused(t)
		s.CloudAURL = cloudA.URL + "/v1"
		s.CloudB.Reply = upstreamtest.Reply{Chunks: 4, Drop: true, DropAfter: 2}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "compat.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(),
		"GW_BASE_URL="+g.Base+"/v1",
		"GW_TOKEN="+tokAdmin,
		"GW_DENIED_MODEL=lm-transcribe",
		"GW_CUT_MODEL=lm-4-scout-cloudB",
		"GW_FALLBACK=1",
		"GW_TOOL_MODEL=lm-4-scout-cloudA",
	)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "FAIL ") {
			t.Errorf("openai node client: %s", line)
		}
	}
	if err != nil && !strings.Contains(string(out), "FAIL ") {
		t.Errorf("node compat.mjs: %v\n%s", err, out)
	}
	t.Logf("node compat.mjs:\n%s", out)
}

// toolBackend is a chat-completions backend that answers as fake does,
// except a chat request that offers tools and does not end with a tool's
// result: that one gets a call of the first tool with {"city":"Paris"},
// streamed (in two argument pieces, with usage when asked) or not as the
// request says. It drives a tool call over two turns.
func toolBackend(fake http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var q struct {
			Stream        bool `json:"stream"`
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
			Tools []struct {
				Function struct{ Name string } `json:"function"`
			} `json:"tools"`
			Messages []struct{ Role string } `json:"messages"`
		}
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") || json.Unmarshal(body, &q) != nil ||
			len(q.Tools) == 0 || len(q.Messages) == 0 || q.Messages[len(q.Messages)-1].Role == "tool" {
			fake.ServeHTTP(w, r)
			return
		}
		name := q.Tools[0].Function.Name
		const head = `{"id":"chatcmpl-tool","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":`
		usage := `{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29}`
		if !q.Stream {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"chatcmpl-tool","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,`+
				`"tool_calls":[{"id":"call_paris","type":"function","function":{"name":"`+name+`","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":`+usage+`}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, choices := range []string{
			`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
			`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_paris","type":"function","function":{"name":"` + name + `","arguments":"{\"city\":"}}]},"finish_reason":null}]}`,
			`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"finish_reason":null}]}`,
			`[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		} {
			io.WriteString(w, "data: "+head+choices+"\n\n")
		}
		if q.StreamOptions.IncludeUsage {
			io.WriteString(w, "data: "+head+`[],"usage":`+usage+"}\n\n")
		}
		io.WriteString(w, "data: [DONE]\n\n")
	})
}
