package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// TestOpenAINodeClient runs e2e/node/compat.mjs (the official openai npm client)
// against gatewayd. It needs node and e2e/node/node_modules (cd e2e/node && npm ci).
func TestOpenAINodeClient(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the OpenAI client compatibility check needs node and `cd e2e/node && npm ci`")
	}
	if _, err := os.Stat(filepath.Join("node", "node_modules", "openai")); err != nil {
		t.Skip("e2e/node/node_modules/openai is missing: run `cd e2e/node && npm ci` to enable the OpenAI client compatibility check")
	}
	// lm-4-scout falls back from a refused local backend to cloudA (so a
	// backend_fallback notice is sent); cloudB cuts its streams half-way.
	g := start(t, func(s *setup) {
		s.LocalURL = refused(t)
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
