package runs

import "syscall"

// sysProcAttr puts a run's command in a process group of its own (so that a
// cancel or the end of the command reaches everything it started) and has
// the kernel SIGKILL it when the gateway dies, so that a crash leaves no
// agent working on a work item the next start accepts again. Pdeathsig
// fires when the thread that started the command ends, hence the starter.
// It reaches only the command itself: what the command started is killed on
// the next start (see recover.go).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
