package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// markdownReply is what the fake local backend answers in the browser test:
// markdown the playground must render as elements, and markup it must show as
// text (browser/playground.mjs checks both when GW_MARKDOWN=1).
const markdownReply = "Here is **bold** text and `inline code`.\n\n" +
	"```go\nfmt.Println(\"hi\")\n```\n\n" +
	"<img src=x onerror=alert(1)> and [a link](javascript:alert(1))"

// chromiumPath finds the Chromium that playwright-core drives: $CHROMIUM, or
// Debian's chromium on the PATH.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestPlaygroundBrowser drives /playground in headless Chromium with
// e2e/browser/playground.mjs (issue 16, item 3): token, streamed reply,
// markdown, an image, the sidebar after a reload, continuing, copy as curl,
// 390 px, delete, and the 401 card of a wrong token. It needs node, Chromium
// and e2e/browser/node_modules (cd e2e/browser && npm ci), and skips without
// them. Screenshots go to $E2E_SCREENSHOTS, or a temp dir removed after the
// test; the path is logged.
func TestPlaygroundBrowser(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the playground browser test needs node, chromium and `cd e2e/browser && npm ci`")
	}
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("chromium is not installed (apt-get install chromium, or set CHROMIUM): the playground browser test is skipped")
	}
	if _, err := os.Stat(filepath.Join("browser", "node_modules", "playwright-core")); err != nil {
		t.Skip("e2e/browser/node_modules/playwright-core is missing: run `cd e2e/browser && npm ci` to enable the playground browser test")
	}
	shots := os.Getenv("E2E_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if shots, err = filepath.Abs(shots); err != nil {
		t.Fatal(err)
	}
	// Paced chunks, so that the page can be seen streaming.
	g := start(t, func(s *setup) {
		s.Local.Reply = upstreamtest.Reply{Content: markdownReply, Chunks: 8, Interval: 120 * time.Millisecond}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "playground.mjs")
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(),
		"GW_BASE_URL="+g.Base,
		"GW_TOKEN="+tokMember,
		"CHROMIUM="+chromium,
		"GW_SCREENSHOTS="+shots,
		"GW_MARKDOWN=1",
	)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "FAIL ") {
			t.Errorf("playground in chromium: %s", line)
		}
	}
	if err != nil && !strings.Contains(string(out), "FAIL ") {
		t.Errorf("node playground.mjs: %v\n%s", err, out)
	}
	t.Logf("node playground.mjs (screenshots in %s):\n%s", shots, out)

	// The image went to the backend as a data URI part of the user message.
	var sawImage bool
	for _, c := range g.Local.Calls() {
		var req struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal(c.Body, &req) == nil {
			for _, m := range req.Messages {
				if strings.Contains(string(m.Content), `"url":"data:image/png;base64,`) {
					sawImage = true
				}
			}
		}
	}
	if !sawImage && !t.Failed() {
		t.Error("no call to the local backend carried the attached image as a data URI")
	}
}
