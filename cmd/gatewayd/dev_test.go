package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatgw/gateway/auth"
)

// TestDevTokenKept: the -dev token is kept, readable by its owner only, in
// the data dir, so that a restart on the same data keeps it; -dev-token
// replaces it.
func TestDevTokenKept(t *testing.T) {
	dir := t.TempDir()
	_, first, stop := startDev(t, "-data-dir", dir)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, devTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("dev token file mode %v, want 0600", mode)
	}
	_, second, stop := startDev(t, "-data-dir", dir)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Errorf("restart on the same data dir: token %s, want the kept %s", second, first)
	}
	_, given, stop := startDev(t, "-data-dir", dir, "-dev-token", "dev-0123456789abcdef0123")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if given != "dev-0123456789abcdef0123" {
		t.Errorf("-dev-token: token %s", given)
	}
}

// TestDevPrintsTryIt: -dev prints its token once, and shell lines that read
// it from its file.
func TestDevPrintsTryIt(t *testing.T) {
	dir := t.TempDir()
	cfg := &config{DataDir: dir, RatePerSecond: 1, RateBurst: 30}
	var out bytes.Buffer
	cat, err := devCatalog(cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := devToken(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cat.Lookup(auth.DigestOf(token))
	if !ok || p.Rate == nil || p.Rate.PerSecond < devRate.PerSecond || p.Rate.Burst < devRate.Burst {
		t.Errorf("dev token's principal %+v: want the dev rate at least", p)
	}
	printTryIt(&out, cfg, "http://127.0.0.1:8080")
	s := out.String()
	if n := strings.Count(s, token); n != 1 {
		t.Errorf("token printed %d times, want once:\n%s", n, s)
	}
	for _, want := range []string{
		"export OPENAI_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_API_KEY=\"$(cat " + filepath.Join(dir, devTokenFile) + ")\"",
		`curl -s "$OPENAI_BASE_URL/chat/completions" -H "Authorization: Bearer $OPENAI_API_KEY"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// TestDevTokenErrors: an empty token file and a bad -dev-token stop start-up.
func TestDevTokenErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, devTokenFile), []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := devCatalog(&config{DataDir: dir}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty token file: %v", err)
	}
	if _, err := devCatalog(&config{DataDir: dir, DevToken: "has space"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-dev-token") {
		t.Errorf("bad -dev-token: %v", err)
	}
	if err := run(context.Background(), []string{"-dev", "-data-dir", dir}, envOf(nil), &bytes.Buffer{}); err == nil {
		t.Error("run with an empty dev token file started")
	}
}
