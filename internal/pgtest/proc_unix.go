//go:build unix

package pgtest

import (
	"os"
	"syscall"
)

func platformSupported() error { return nil }

// sysProcAttr runs a command in its own process group (a ^C to the test
// reaches the test alone, whose cleanup then stops the server), as as when
// it is not nil.
func sysProcAttr(as *account) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if as != nil {
		attr.Credential = &syscall.Credential{Uid: uint32(as.uid), Gid: uint32(as.gid)}
	}
	return attr
}

// shutdownSignal is the signal of PostgreSQL's fast shutdown (SIGINT) or of
// its immediate one (SIGQUIT).
func shutdownSignal(fast bool) os.Signal {
	if fast {
		return syscall.SIGINT
	}
	return syscall.SIGQUIT
}
