package main

import (
	"runtime"
	"syscall"
	"time"
)

// prSetTimerSlack is prctl's PR_SET_TIMERSLACK.
const prSetTimerSlack = 29

// newPacer returns the sleep of the open-loop dispatcher. The Go runtime rounds
// sleeps under a millisecond up to about a millisecond when the process is
// idle, which would send requests in bursts at 2000 req/s; so the dispatcher
// locks its goroutine to an OS thread, sets that thread's timer slack to 1 ns and
// sleeps with nanosleep(2) (wake-up lag about 40 µs on a VM, reported as "lag").
// Call it from a goroutine of its own that never unlocks: the runtime ends the
// thread (and its changed slack) with the goroutine.
func newPacer() func(time.Time) {
	runtime.LockOSThread()
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
	return func(t time.Time) {
		for {
			d := time.Until(t)
			if d <= 0 {
				return
			}
			ts := syscall.NsecToTimespec(int64(d))
			if syscall.Nanosleep(&ts, nil) == nil {
				return
			}
		}
	}
}
