package runs_test

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatgw/gateway/runs"
	"github.com/chatgw/gateway/store/boltstore"
)

// helperGateway is a gateway to be SIGKILLed by a test: it opens the bbolt
// file db, runs the coding-agent command argv for a run of alice (acme,
// appRepo, W-1), prints "run <id>", then, once the run is running and its
// command printed "ready", the command's output, and sleeps.
func helperGateway(db string, argv []string) int {
	st, err := boltstore.Open(db)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 30
	}
	svc, err := runs.New(runs.Config{Store: st, Command: strings.Join(argv, " ")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 31
	}
	h := routes(svc)
	var r run
	if err := serve(h, req{method: "POST", path: "/a1/runs", user: "alice",
		body: map[string]string{"runtime": "coding-agent", "repo": appRepo, "work_item": "W-1"}}, &r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 32
	}
	fmt.Printf("run %s\n", r.ID)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if err := serve(h, req{method: "GET", path: "/a1/runs/" + r.ID, user: "alice"}, &r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 33
		}
		if r.Status == runs.StatusRunning && strings.Contains(deref(r.Output), "ready\n") {
			fmt.Print(*r.Output)
			time.Sleep(time.Hour)
			return 0
		}
	}
	return 34
}

// serve sends q to h and decodes a 2xx answer into v.
func serve(h http.Handler, q req, v any) error {
	r, err := newRequest(q)
	if err != nil {
		return err
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code/100 != 2 {
		return fmt.Errorf("%s %s: status %d: %s", q.method, q.path, w.Code, w.Body)
	}
	return decodeStrict(w.Body.Bytes(), v)
}

// gateway is a helperGateway process and the run it started.
type gateway struct {
	cmd           *exec.Cmd
	runID         string
	leader, child int // the run's command, and the child it started in its group
}

// startGateway starts helperGateway over the bbolt file db with the "tree"
// command and waits until its run is running. The processes are killed at
// cleanup, whatever the test did with them.
func startGateway(t *testing.T, db string) gateway {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	g := gateway{cmd: exec.Command(exe, helperArg, "gateway", db, exe, helperArg, "tree")}
	var stderr strings.Builder
	g.cmd.Stderr = &stderr
	out, err := g.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = g.cmd.Process.Kill()
		_ = g.cmd.Wait()
		for _, pid := range []int{g.leader, g.child} {
			if pid > 0 && alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	lines := make(chan string)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(out); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("gateway ended before its run was ready; stderr: %s", &stderr)
			}
			if l == "ready" {
				go func() { // the pipe stays open until the gateway dies
					for range lines {
					}
				}()
				return g
			}
			_, _ = fmt.Sscanf(l, "run %s", &g.runID)
			_, _ = fmt.Sscanf(l, "leader %d", &g.leader)
			_, _ = fmt.Sscanf(l, "child %d", &g.child)
		case <-timeout:
			t.Fatalf("gateway: no ready run after 20 s; stderr: %s", &stderr)
		}
	}
}

// crash SIGKILLs the gateway process and reaps it.
func (g gateway) crash(t *testing.T) {
	t.Helper()
	if err := g.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := g.cmd.Wait(); !errors.As(err, &ee) {
		t.Fatalf("gateway after SIGKILL: %v", err)
	}
}

// TestCrashKillsCommand: when the gateway dies, the kernel kills the run's
// command (Pdeathsig). Not what the command started, though: that is for the
// next start to kill.
func TestCrashKillsCommand(t *testing.T) {
	g := startGateway(t, filepath.Join(t.TempDir(), "gateway.db"))
	if g.runID == "" || g.leader <= 0 || g.child <= 0 {
		t.Fatalf("gateway %+v: run or pids missing", g)
	}
	g.crash(t)
	waitGone(t, g.leader, "command of the crashed gateway")
	if !alive(g.child) {
		t.Errorf("child of the command (pid %d) gone too; Pdeathsig should reach only the command", g.child)
	}
}
