package runs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Environment variables a run's command gets, on top of the gateway's own
// environment without its GATEWAY_* variables.
const (
	EnvRunID    = "GW_RUN_ID"
	EnvRepo     = "GW_RUN_REPO"
	EnvWorkItem = "GW_RUN_WORK_ITEM"
	EnvTenantID = "GW_TENANT_ID"
	EnvUserID   = "GW_USER_ID"
)

// outcome is how a dispatched run ended.
type outcome struct {
	status    string
	reason    string
	exitCode  *int
	output    []byte
	truncated bool
	// requeue: the command never started and the run goes back in the
	// queue (Close came first); the other fields are unset.
	requeue bool
}

// execute runs the command of the dispatched run a to its end and says how it
// ended. Every failure to start becomes a failed outcome (the cause is logged).
//
// The run, claimed by this Service, stays queued in the store until its
// command has started: it is marked running together with the command's
// identity (pid, process group, start time) in one transaction, so that a run
// stored as running always names the processes a later start must kill if
// this process dies.
func (s *Service) execute(a *active) outcome {
	if o, stopped := s.stoppedBeforeStart(a); stopped {
		return o
	}
	dir, err := os.MkdirTemp("", "gw-run-")
	if err != nil {
		s.log.Error("runs: working directory", "run_id", a.rec.ID, "err", err)
		return outcome{status: StatusFailed, reason: ReasonWorkDirFailed}
	}
	defer s.removeDir(a, dir)
	pr, pw, err := os.Pipe()
	if err != nil {
		s.log.Error("runs: output pipe", "run_id", a.rec.ID, "err", err)
		return outcome{status: StatusFailed, reason: ReasonStartFailed}
	}
	defer pr.Close()
	cmd := s.command(a, dir, pw)
	if o, started := s.startCommand(a, cmd, pw); !started {
		return o
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(a.out, pr)
	}()
	notMarked, marked := s.markStarted(a, cmd.Process.Pid)
	_ = cmd.Wait() // the exit status is in cmd.ProcessState
	stop := s.reaped(a)
	// Whatever the command left behind in its process group goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	s.drain(a, pr, copied)

	o := notMarked
	if marked {
		o = exitOutcome(cmd.ProcessState, stop)
	}
	o.output, o.truncated = a.out.snapshot()
	return o
}

// startCommand starts cmd, the command of a, unless a was stopped meanwhile,
// and closes pw, the write end of its output, either way.
func (s *Service) startCommand(a *active, cmd *exec.Cmd, pw *os.File) (outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer pw.Close() // the command holds its own copy
	if o, stopped := stoppedOutcome(a.stop); stopped {
		return o, false
	}
	if err := s.starter.start(cmd); err != nil {
		s.log.Error("runs: command not started", "run_id", a.rec.ID, "err", err)
		return outcome{status: StatusFailed, reason: ReasonStartFailed}, false
	}
	a.pid = cmd.Process.Pid
	return outcome{}, true
}

// markStarted stores a as running with the identity of its command pid. When
// that fails, the command is killed (it must not run where a restart could
// not find it) and the outcome to report is returned with false.
func (s *Service) markStarted(a *active, pid int) (outcome, bool) {
	err := s.markRunning(a, s.identify(pid))
	if err == nil {
		return outcome{}, true
	}
	s.mu.Lock()
	s.killLocked(a, syscall.SIGKILL)
	s.mu.Unlock()
	if errors.Is(err, errNotQueued) {
		// Ended in the store meanwhile, or no longer this Service's (a
		// restart or another replica recovered it): finish leaves that
		// state.
		return outcome{status: StatusFailed, reason: reasonNoLongerQueued}, false
	}
	s.log.Error("runs: run not marked running; its command was killed", "run_id", a.rec.ID, "err", err)
	return outcome{status: StatusFailed, reason: ReasonStorageAtStart}, false
}

// identify returns the identity of the command pid of this Service, which
// must not have been reaped yet (so that pid is still its own).
func (s *Service) identify(pid int) *proc {
	p := &proc{PID: pid, PGID: pid, Boot: s.self.boot} // Setpgid: the command leads its group
	st, err := readStat(pid)
	if err != nil {
		s.log.Warn("runs: start time of a command unknown; a restart will not kill what it leaves", "pid", pid, "err", err)
		return p
	}
	p.PGID, p.Start = st.pgid, st.start
	return p
}

// reaped records that the command of a has been reaped (no signal may be sent
// to its pid any more) and returns why it was asked to stop.
func (s *Service) reaped(a *active) stopReason {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.exited = true
	if a.killTimer != nil {
		a.killTimer.Stop()
	}
	return a.stop
}

// drain waits until the output of a's command, read from pr, is copied
// (copied closed), but at most outputDrain: a process that left the group may
// hold the pipe open.
func (s *Service) drain(a *active, pr *os.File, copied <-chan struct{}) {
	t := time.NewTimer(outputDrain)
	defer t.Stop()
	select {
	case <-copied:
	case <-t.C:
		s.log.Warn("runs: output still open after the command ended; a process outside its group holds it",
			"run_id", a.rec.ID)
		pr.Close() // stop reading
		<-copied
	}
}

// stoppedBeforeStart reports the outcome of a run stopped while it waited to
// start.
func (s *Service) stoppedBeforeStart(a *active) (outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return stoppedOutcome(a.stop)
}

// stoppedOutcome is the outcome of a run stopped for stop before its command
// started; false when stop is stopNone.
func stoppedOutcome(stop stopReason) (outcome, bool) {
	switch stop {
	case stopCancel:
		return outcome{status: StatusCancelled, reason: ReasonCancelledQueued}, true
	case stopShutdown:
		return outcome{requeue: true}, true
	case stopLost: // not stored: the run is no longer this Service's
		return outcome{status: StatusFailed, reason: ReasonLostQueued}, true
	}
	return outcome{}, false
}

// exitOutcome is the outcome of a command that ended with ps, asked to stop
// for stop: exit 0 succeeds, another exit code or a signal fails, a cancel
// makes it cancelled and a shutdown failed whatever the exit.
func exitOutcome(ps *os.ProcessState, stop stopReason) outcome {
	var o outcome
	how := "ended"
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		how = fmt.Sprintf("killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	} else if code := ps.ExitCode(); code >= 0 {
		o.exitCode = &code
		how = fmt.Sprintf("exit code %d", code)
	}
	switch {
	case stop == stopCancel:
		o.status, o.reason = StatusCancelled, ReasonCancelled+": "+how
	case stop == stopShutdown:
		o.status, o.reason = StatusFailed, ReasonShutdown+": "+how
	case stop == stopLost: // not stored: the run is no longer this Service's
		o.status, o.reason = StatusFailed, ReasonLostRunning+": "+how
	case o.exitCode != nil && *o.exitCode == 0:
		o.status = StatusSucceeded
	default:
		o.status, o.reason = StatusFailed, how
	}
	return o
}

// command builds the command of run a: no shell, in dir, output to out, in
// a process group of its own that dies with the gateway (sysProcAttr).
func (s *Service) command(a *active, dir string, out *os.File) *exec.Cmd {
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Dir = dir
	cmd.Env = runEnv(os.Environ(), a.rec, dir)
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	return cmd
}

// runEnv is the environment of run rec started in dir: base without the
// gateway's GATEWAY_* variables (its configuration and keys) and without the
// variables the run sets, then PWD=dir and the GW_* variables of the run.
func runEnv(base []string, rec record, dir string) []string {
	set := [...][2]string{
		{"PWD", dir},
		{EnvRunID, rec.ID},
		{EnvRepo, rec.Repo},
		{EnvWorkItem, rec.WorkItem},
		{EnvTenantID, rec.Tenant},
		{EnvUserID, rec.User},
	}
	env := make([]string, 0, len(base)+len(set))
outer:
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GATEWAY_") {
			continue
		}
		for _, v := range set {
			if name == v[0] {
				continue outer
			}
		}
		env = append(env, kv)
	}
	for _, v := range set {
		env = append(env, v[0]+"="+v[1])
	}
	return env
}

// removeDir removes a run's working directory, making read-only directories
// in it writable first if a plain removal fails.
func (s *Service) removeDir(a *active, dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		s.log.Error("runs: working directory not removed", "run_id", a.rec.ID, "dir", dir, "err", err)
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu    sync.Mutex
	max   int
	buf   []byte // the last bytes written; at most 2*max, trimmed to max
	total int64
}

func newTail(max int) *tail { return &tail{max: max} }

// Write keeps the end of p; it never fails.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// snapshot returns a copy of the last max bytes and whether earlier ones were
// dropped.
func (t *tail) snapshot() ([]byte, bool) {
	b, truncated, _ := t.snapshotWritten()
	return b, truncated
}

// snapshotWritten is snapshot, with the number of bytes written so far.
func (t *tail) snapshotWritten() ([]byte, bool, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return append([]byte(nil), b...), t.total > int64(t.max), t.total
}

// written returns the number of bytes written so far.
func (t *tail) written() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}
