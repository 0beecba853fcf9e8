package runs_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/testkit"
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
	r, err := q.kit().Build()
	if err != nil {
		return err
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code/100 != 2 {
		return fmt.Errorf("%s %s: status %d: %s", q.method, q.path, w.Code, w.Body)
	}
	return testkit.UnmarshalStrict(w.Body.Bytes(), v)
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
	for _, l := range readUntil(t, out, "ready", &stderr) {
		_, _ = fmt.Sscanf(l, "run %s", &g.runID)
		_, _ = fmt.Sscanf(l, "leader %d", &g.leader)
		_, _ = fmt.Sscanf(l, "child %d", &g.child)
	}
	return g
}

// readUntil returns the lines read from r before the line until, and reads
// (and drops) the rest in the background. It fails t when r ends first or
// after 20 s; stderr, the writer's error output, is then shown.
func readUntil(t *testing.T, r io.Reader, until string, stderr fmt.Stringer) []string {
	t.Helper()
	lines := make(chan string)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(r); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	var got []string
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended before %q: %q; stderr: %s", until, got, stderr)
			}
			if l == until {
				go func() {
					for range lines {
					}
				}()
				return got
			}
			got = append(got, l)
		case <-timeout:
			t.Fatalf("no %q after 20 s: %q; stderr: %s", until, got, stderr)
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

// TestCrashAndRestart: a gateway process is SIGKILLed while a run's command
// (which started a child in its process group) runs. The kernel kills the
// command at once (Pdeathsig), but not the child; the next start kills the
// child before it marks the run failed, and the work item is then free.
func TestCrashAndRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gateway.db")
	g := startGateway(t, db)
	if g.runID == "" || g.leader <= 0 || g.child <= 0 {
		t.Fatalf("gateway %+v: run or pids missing", g)
	}
	g.crash(t)
	waitGone(t, g.leader, "command of the crashed gateway")
	if !alive(g.child) {
		t.Fatalf("child of the command (pid %d) gone before the restart; Pdeathsig should reach only the command", g.child)
	}

	st, err := boltstore.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newEnvOver(t, st, runs.Config{Command: helperCmd(t, "exit", "0")})
	if alive(g.child) { // New waits until what it killed has ended
		t.Errorf("child of the crashed gateway's command (pid %d) still runs after New", g.child)
	}
	got := e.get("", "alice", g.runID)
	if got.Status != runs.StatusFailed || got.Reason != runs.ReasonRestartedRunning || got.StartedAt == nil || got.FinishedAt == nil {
		t.Errorf("run after the restart: %+v; want failed, %q", got, runs.ReasonRestartedRunning)
	}
	if again := e.waitDone("alice", e.create("", "alice", appRepo, "W-1").ID); again.Status != runs.StatusSucceeded {
		t.Errorf("new run of the work item: %+v", again)
	}
}
