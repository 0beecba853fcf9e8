//go:build unix

package main

import (
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/testkit"
)

// hupOnListening is gatewayd's stderr that sends the process a SIGHUP the
// moment gatewayd writes that it listens, before the write returns.
type hupOnListening struct {
	testkit.Buffer
	once sync.Once
	err  error
}

func (w *hupOnListening) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "listening on") {
		w.once.Do(func() { w.err = syscall.Kill(os.Getpid(), syscall.SIGHUP) })
	}
	return w.Buffer.Write(p)
}

// TestSIGHUPOnceListening: a SIGHUP sent the moment gatewayd says it listens
// reloads (here the context windows, reloaded in every setup). Were SIGHUP
// taken after that line, the signal's default action would end the test
// process.
func TestSIGHUPOnceListening(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := &hupOnListening{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-dev", "-addr", "127.0.0.1:0", "-data-dir", t.TempDir(), "-local-url", ""}, envOf(nil), out)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "context windows reloaded") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if out.err != nil {
		t.Fatal(out.err)
	}
	if !strings.Contains(out.String(), "context windows reloaded") {
		t.Errorf("no reload after SIGHUP:\n%s", out.String())
	}
}
