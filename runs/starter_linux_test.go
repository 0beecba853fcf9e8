package runs

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStarterThreadIsParent: commands are forked from the starter's own
// thread, the same one each time, and ending that thread (stop) fires their
// Pdeathsig; no other thread's end does. A command started from whatever
// thread its caller ran on would die whenever that thread ended.
func TestStarterThreadIsParent(t *testing.T) {
	st := newStarter()
	first := startSleep(t, st)
	tid := parentThread(t, first.Process.Pid)
	if tid == os.Getpid() {
		// The main thread is never ended, only parked: keep it busy with this
		// starter, so that the next one gets a thread of its own.
		defer st.stop()
		st = newStarter()
		first = startSleep(t, st)
		tid = parentThread(t, first.Process.Pid)
	}
	second := startSleep(t, st)
	if got := parentThread(t, second.Process.Pid); got != tid {
		t.Errorf("second command forked by thread %d, the first by %d; want the starter's thread for both", got, tid)
	}
	st.stop() // its thread ends, locked
	for _, cmd := range []*exec.Cmd{first, second} {
		if err := waitKilled(cmd); err != "" {
			t.Error(err)
		}
	}
}

// startSleep starts the "sleep" helper (helper_test.go) with Pdeathsig via
// st. It is killed at cleanup if still running.
func startSleep(t *testing.T, st *starter) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "runs-test-helper", "sleep")
	cmd.SysProcAttr = sysProcAttr()
	if err := st.start(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}

// parentThread returns the thread of this process whose child pid is, as
// /proc/self/task/<tid>/children lists them.
func parentThread(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil || len(tasks) == 0 {
		t.Skipf("no /proc/self/task/*/children: %v", err)
	}
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		if slices.Contains(strings.Fields(string(b)), strconv.Itoa(pid)) {
			tid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			return tid
		}
	}
	t.Fatalf("no thread of this process is the parent of %d", pid)
	return 0
}

// waitKilled reaps cmd and describes how it did not end by SIGKILL within
// 10 s ("" when it did).
func waitKilled(cmd *exec.Cmd) string {
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		_ = cmd.Wait()
	}()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-waited
		return "command still runs 10 s after the starter's thread ended"
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		return "command ended with " + cmd.ProcessState.String() + ", want killed by SIGKILL"
	}
	return ""
}
