// Package compat checks the gateway against official OpenAI client libraries,
// which is how most applications will talk to it.
package compat_test

import (
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// TestOpenAINodeClient runs compat/node/compat.mjs with the openai npm package
// against a gateway whose local backend refuses connections and whose cloudA
// backend is a fake, so streamed answers carry a backend_fallback notice. It
// needs node and `npm ci --prefix compat/node` (.ci/run does both).
func TestOpenAINodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join("node", "node_modules", "openai")); err != nil {
		t.Skip("run `npm ci --prefix compat/node` first")
	}
	fake := upstreamtest.New(t)
	tokens := auth.MustStatic([]*auth.Tenant{{ID: "acme"}},
		map[string]auth.StaticToken{"compat-token": {Tenant: "acme", Role: auth.RoleMember}})
	g, err := gateway.New(
		gateway.WithStore(memstore.New()),
		gateway.WithTokenCatalog(tokens),
		gateway.WithBackends(upstream.Backends{LocalURL: upstreamtest.RefusedURL(t), CloudAURL: fake.URL}),
		gateway.WithLogger(slog.New(slog.DiscardHandler)),
		gateway.WithRateLimit(1000, 1000),
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(func() { srv.Close(); g.Close() })

	cmd := exec.Command(node, "compat.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(),
		"OPENAI_BASE_URL="+srv.URL+"/v1",
		"OPENAI_API_KEY=compat-token",
		"EXPECT_CONTENT="+upstreamtest.DefaultContent,
	)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("openai node client: %v", err)
	}
}
