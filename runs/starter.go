package runs

import (
	"os/exec"
	"runtime"
)

// starter starts the commands of a Service from one goroutine locked to its
// OS thread while any run of the Service executes.
//
// Why: on Linux a command gets SIGKILL when its parent dies (Pdeathsig, see
// sysProcAttr), so that a crashed gateway leaves no agent running. But the
// kernel's "parent" is the thread that forked the child, not the process
// (https://go.dev/issue/27505), and the Go runtime ends a thread when a
// goroutine exits while locked to it, which any code in the process may do
// (runtime.LockOSThread without Unlock). A command started from an ordinary
// goroutine's thread could then be killed while the gateway runs on. The
// locked thread of the starter runs nothing else, so it ends only when the
// starter does: when no run executes any more, every command reaped.
type starter struct {
	reqs chan startReq
	done chan struct{}
}

// startReq asks the starter to start cmd and send cmd.Start's error to err.
type startReq struct {
	cmd *exec.Cmd
	err chan error
}

func newStarter() *starter {
	st := &starter{reqs: make(chan startReq), done: make(chan struct{})}
	go st.loop()
	return st
}

// loop starts the commands it is sent until stop. It never unlocks its
// thread: when loop returns, the runtime ends the thread (the main thread it
// parks for good instead), which no command started from it outlives: stop
// is called after they were all reaped.
func (st *starter) loop() {
	runtime.LockOSThread()
	defer close(st.done)
	for r := range st.reqs {
		r.err <- r.cmd.Start()
	}
}

// start starts cmd on the starter's thread and returns cmd.Start's error.
// It must not be called after stop.
func (st *starter) start(cmd *exec.Cmd) error {
	r := startReq{cmd: cmd, err: make(chan error, 1)}
	st.reqs <- r
	return <-r.err
}

// stop ends the starter once no command it started is alive any more.
func (st *starter) stop() {
	close(st.reqs)
	<-st.done
}
