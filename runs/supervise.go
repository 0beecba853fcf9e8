package runs

import (
	"errors"
	"syscall"
	"time"

	"github.com/chatgw/gateway/store"
)

// Supervision: the slots of a Service, the runs it claimed and the
// supervisor goroutine of each, which executes the run (exec.go) and writes
// its final state.

// stopReason says why a run must stop before its command ends by itself.
type stopReason uint8

const (
	stopNone     stopReason = iota
	stopCancel              // POST /a1/runs/{id}/cancel, here or on another replica
	stopShutdown            // Close
	stopLost                // the store says another process ended the run, or owns it
)

// active is a run this Service claimed: waiting for its command to start,
// or running. Fields marked mu are guarded by Service.mu.
type active struct {
	rec  record // as claimed
	out  *tail
	done chan struct{} // closed once the final state is written (or failed to be)

	stop      stopReason  // mu
	pid       int         // mu; 0 until the command started
	exited    bool        // mu; the command has been reaped
	killTimer *time.Timer // mu; SIGKILL after the grace of a cancel
	finalErr  error       // written before done is closed

	storedOutput int64 // output bytes written when the heartbeat last stored the tail; the loop's own
}

// reserve takes the free slots for runs about to be claimed, at most want,
// and returns how many it took: none after Close, or when the coding-agent
// runtime is disabled (such a Service runs nothing).
func (s *Service) reserve(want int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.enabled() {
		return 0
	}
	n := max(0, min(want, s.maxRunning-s.nrunning))
	s.nrunning += n
	return n
}

// launchLocked hands the run rec, just claimed in a slot reserve took, to a
// supervisor. After Close began, the run does not start: its supervisor puts
// it back in the queue. s.mu is held.
func (s *Service) launchLocked(rec record) {
	a := &active{rec: rec, out: newTail(OutputTailBytes), done: make(chan struct{})}
	if s.closed {
		a.stop = stopShutdown
	}
	s.active[rec.ID] = a
	if s.starter == nil {
		s.starter = newStarter()
	}
	s.supervisors.Add(1)
	go s.supervise(a)
}

// releaseLocked frees n slots. s.mu is held.
func (s *Service) releaseLocked(n int) {
	s.nrunning -= n
	if s.nrunning == 0 && s.starter != nil {
		// Every command it started has been reaped: an idle Service keeps
		// no thread of its own.
		s.starter.stop()
		s.starter = nil
	}
}

// supervise executes a dispatched run, writes its final state and wakes the
// loop to claim the next queued run.
func (s *Service) supervise(a *active) {
	defer s.supervisors.Done()
	o := s.execute(a)
	err := s.finish(a, o)
	switch {
	case err != nil:
		s.log.Error("runs: final state not stored; the run stays active in the store until its lease expires",
			"run_id", a.rec.ID, "tenant", a.rec.Tenant, "status", o.status, "err", err)
	case o.requeue:
		s.log.Info("run put back in the queue", "run_id", a.rec.ID, "tenant", a.rec.Tenant)
	default:
		s.log.Info("run finished", "run_id", a.rec.ID, "tenant", a.rec.Tenant, "user_id", a.rec.User,
			"repo", a.rec.Repo, "status", o.status, "reason", o.reason)
	}
	s.mu.Lock()
	a.finalErr = err
	delete(s.active, a.rec.ID)
	s.releaseLocked(1)
	s.mu.Unlock()
	close(a.done)
	s.wake()
}

// local returns the run of this Service that rec is, or nil.
func (s *Service) local(rec record) *active {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.localLocked(rec)
}

// localLocked is local with s.mu held.
func (s *Service) localLocked(rec record) *active {
	if a := s.active[rec.ID]; a != nil && a.rec.Tenant == rec.Tenant {
		return a
	}
	return nil
}

// killLocked sends sig to the process group of a's command, if it runs.
// s.mu is held.
func (s *Service) killLocked(a *active, sig syscall.Signal) {
	if a.pid != 0 && !a.exited {
		_ = syscall.Kill(-a.pid, sig)
	}
}

// cancelRunningLocked asks the command of a dispatched run to stop: SIGTERM
// to its process group at once (or, before it started, no start at all), and
// SIGKILL after the grace. A second cancel changes nothing. s.mu is held.
func (s *Service) cancelRunningLocked(a *active) {
	if a.stop != stopNone {
		return
	}
	a.stop = stopCancel
	if a.pid == 0 || a.exited {
		return
	}
	s.killLocked(a, syscall.SIGTERM)
	a.killTimer = time.AfterFunc(s.grace, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.killLocked(a, syscall.SIGKILL)
	})
}

// stopLostLocked stops the command of a, which the store says is no longer
// this Service's run (another process ended it, or took it over when its
// lease had expired): SIGKILL to its process group, or no start at all.
// s.mu is held.
func (s *Service) stopLostLocked(a *active) {
	if a.exited {
		return
	}
	if a.stop == stopNone {
		a.stop = stopLost
	}
	s.log.Warn("runs: the store says another process ended or took over this run; stopping its command",
		"run_id", a.rec.ID, "tenant", a.rec.Tenant)
	s.killLocked(a, syscall.SIGKILL)
}

// retry runs write up to storeRetries times, doubling the pause between
// attempts, until it succeeds, the store is closed or the run is no longer
// queued. Supervisors use it for
// the writes no client waits on.
func retry(write func() error) error {
	var err error
	pause := storeRetryFirstInterval
	for i := 0; i < storeRetries; i++ {
		if err = write(); err == nil || errors.Is(err, store.ErrClosed) || errors.Is(err, errNotQueued) {
			return err
		}
		if i+1 < storeRetries {
			time.Sleep(pause)
			pause *= 2
		}
	}
	return err
}
