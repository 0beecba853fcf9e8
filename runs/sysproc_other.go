//go:build !linux

package runs

import "syscall"

// sysProcAttr puts a run's command in a process group of its own. Only Linux
// has a parent-death signal: elsewhere a command outlives a crashed gateway.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
