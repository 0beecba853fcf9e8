//go:build unix

package main

import "syscall"

// autoMaxConns is the default connection cap: half the open-file limit (each
// streamed answer also holds a connection to its upstream) less a reserve
// for the store, the log and the listeners, and at least 16.
func autoMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<30 {
		return 1 << 20 // unknown or unlimited
	}
	return max(16, (int(lim.Cur)-64)/2)
}
