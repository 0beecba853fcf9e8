package runs

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/chatgw/gateway/store"
)

// How a restart finds what an earlier gateway process left running.
//
// The command of a run dies with the gateway (Pdeathsig, Linux), but what it
// started does not: it stays in the command's process group. So New looks,
// for every run the store holds as queued or running that a gateway process
// on this machine left when it ended (interrupted), for
//
//   - the command itself: a process with the stored pid and start time (a
//     recycled pid has another start time; the boot id must match too);
//   - processes that carry the run's GW_RUN_ID in their environment (they
//     inherited it from the command) and started no earlier than it, in the
//     command's process group, or in any group when no command was stored (the
//     gateway died between starting the command and storing it running).
//
// It SIGKILLs their process groups, waits until no process of those groups
// runs (at most killWait), and only then marks the runs failed and frees
// their work items. New returns after that, so no run of such a work item
// can be accepted while something of the old one still runs. A run whose
// processes outlive the wait stays active, its work item busy, until the
// next start or a cancel kills them.
//
// A replica's sweep (fleet.go) does the same for the runs of a replica whose
// lease expired, when that replica ran on this machine; what a replica on
// another machine left cannot be seen from here.

// killWait bounds the wait for killed process groups to end (a process in
// uninterruptible sleep ends only when its system call returns).
const killWait = 5 * time.Second

// leftover is what an interrupted run left running.
type leftover uint8

const (
	leftNothing leftover = iota // nothing of it runs
	leftKilled                  // its processes were killed and are gone
	leftAlive                   // its processes still run after killWait
)

// procInfo is a process as recovery sees it: its stat and the run ids in
// its environment.
type procInfo struct {
	procStat
	runIDs []string
}

// recoverInterrupted ends the runs an earlier gateway process on this
// machine left active (interrupted): it kills what is left of them, then
// marks failed those of which nothing runs any more. No run of this Service
// exists yet.
func (s *Service) recoverInterrupted(ctx context.Context) error {
	recs, err := s.activeRecords(ctx, s.interrupted)
	if err != nil {
		return fmt.Errorf("runs.recover: %w", err)
	}
	left := s.killLeftovers(recs)
	if err := s.failInterrupted(ctx, recs, left, ReasonRestartedRunning, ReasonRestartedQueued); err != nil {
		return fmt.Errorf("runs.recover: %w", err)
	}
	return nil
}

// interrupted reports whether the active run rec (as read in tx) was left by
// a gateway process that has ended: its owner ran on this machine and its
// process is gone, or it has no owner although it is not waiting in the
// queue (stored by a version from before replicas had leases, which ran
// alone on its store). "Runs survive a restart: a run that was `running`
// when the process died is marked `failed` with a reason on start"
// (docs/contract.md#7-agents-tools-rag-runs): that is the process's own
// restart, not another replica's start, so the runs of live replicas, and
// those of replicas on other machines, are left to their leases (fleet.go);
// queued runs nobody claimed are left to be claimed.
func (s *Service) interrupted(tx store.Tx, rec record) bool {
	if rec.Owner != nil {
		return s.self.ownerEnded(rec.Owner)
	}
	return rec.Status != StatusQueued ||
		!bytes.Equal(tx.Get(bucketQueue, queueKey(rec.Seq)), runKey(rec.Tenant, rec.ID))
}

// activeRecords returns the runs the store holds as queued or running of
// which keep reports true (keep must only read tx).
func (s *Service) activeRecords(ctx context.Context, keep func(store.Tx, record) bool) ([]record, error) {
	var recs []record
	err := s.st.View(ctx, func(tx store.Tx) error {
		recs = recs[:0]
		return eachActive(tx, func(_ runRef, rec record, ok bool) error {
			if ok && rec.isActive() && keep(tx, rec) {
				recs = append(recs, rec)
			}
			return nil
		})
	})
	return recs, err
}

// runRef names a run by tenant and id.
type runRef struct{ tenant, id string }

// eachActive calls fn with every run bucketActive names and its record (ok
// false when the store holds none: a dangling index entry), until fn fails.
// It reads the names before the first call, so that fn may write the
// bucket.
func eachActive(tx store.Tx, fn func(r runRef, rec record, ok bool) error) error {
	var refs []runRef
	err := tx.Scan(bucketActive, nil, false, func(k, v []byte) (bool, error) {
		tenant, _, err := store.ReadString(k)
		if err != nil {
			return false, fmt.Errorf("runs: active key %x: %w", k, err)
		}
		refs = append(refs, runRef{tenant, string(v)})
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, r := range refs {
		rec, ok, err := getRecord(tx, r.tenant, r.id)
		if err != nil {
			return err
		}
		if err := fn(r, rec, ok); err != nil {
			return err
		}
	}
	return nil
}

// failInterrupted marks failed, in one transaction, the runs of seen of which
// left says nothing runs any more, with reason running (a run that was
// running, or of which something was killed) or queued, and drops dangling
// index entries. A run not in seen, or whose state changed since it was seen
// (sameState), was not looked for as it is now: it stays as it is.
func (s *Service) failInterrupted(ctx context.Context, seen []record, left map[string]leftover, running, queued string) error {
	now := s.clk.Now().UTC()
	byID := make(map[string]record, len(seen))
	for _, rec := range seen {
		byID[rec.ID] = rec
	}
	return s.st.Update(ctx, func(tx store.Tx) error {
		return eachActive(tx, func(r runRef, rec record, ok bool) error {
			if !ok || !rec.isActive() { // a dangling index entry: drop it
				return deleteActiveOf(tx, r.tenant, r.id)
			}
			if was, ok := byID[rec.ID]; !ok || !sameState(was, rec) || left[rec.ID] == leftAlive {
				return nil
			}
			reason := queued
			if rec.Status == StatusRunning || left[rec.ID] == leftKilled {
				reason = running
			}
			return end(tx, rec, StatusFailed, reason, nil, now, nil, false)
		})
	})
}

// killLeftovers kills the process groups the runs recs left running and
// waits for them to end. It says, for every run of recs, what it left.
func (s *Service) killLeftovers(recs []record) map[string]leftover {
	left := make(map[string]leftover, len(recs))
	for _, rec := range recs {
		left[rec.ID] = leftNothing
	}
	if len(recs) == 0 {
		return left
	}
	procs, err := listProcs()
	if err != nil {
		s.log.Warn("runs: cannot look for processes an earlier gateway left; none killed", "err", err)
		return left
	}
	groups, all := s.killGroups(recs, procs)
	alive := waitGroupsGone(all, killWait)
	for id, gs := range groups {
		left[id] = leftKilled
		if slices.ContainsFunc(gs, func(g int) bool { return slices.Contains(alive, g) }) {
			left[id] = leftAlive
			s.log.Error("runs: processes of an interrupted run still run after SIGKILL; its work item stays busy",
				"run_id", id, "pgids", gs)
		}
	}
	return left
}

// killGroups SIGKILLs the process groups of what the runs recs left running
// among procs, and returns them by run and all together.
func (s *Service) killGroups(recs []record, procs []procInfo) (map[string][]int, []int) {
	groups := map[string][]int{}
	var all []int
	for _, rec := range recs {
		if !s.self.onThisMachine(rec) {
			continue // its pids name processes of another machine
		}
		gs := leftoverGroups(rec, procs, s.self.boot, syscall.Getpgrp())
		for _, g := range gs {
			err := syscall.Kill(-g, syscall.SIGKILL)
			s.log.Warn("runs: killing the processes an interrupted run left", "run_id", rec.ID,
				"tenant", rec.Tenant, "pgid", g, "err", err)
		}
		if len(gs) > 0 {
			groups[rec.ID] = gs
			all = append(all, gs...)
		}
	}
	return groups, all
}

// leftoverGroups returns the process groups in which run rec left processes
// (see the top of this file), among procs. boot is the kernel's boot id; own,
// the gateway's own process group, is never returned.
func leftoverGroups(rec record, procs []procInfo, boot string, own int) []int {
	p := rec.Proc
	if p != nil && p.Boot != boot {
		return nil // the machine has rebooted since: nothing of it runs
	}
	var gs []int
	for _, q := range procs {
		if q.gone || q.pgid <= 1 || q.pgid == own || slices.Contains(gs, q.pgid) {
			continue
		}
		isCommand := p != nil && p.Start != 0 && q.pid == p.PID && q.start == p.Start
		inherited := slices.Contains(q.runIDs, rec.ID) && (p == nil || q.pgid == p.PGID && q.start >= p.Start)
		if isCommand || inherited {
			gs = append(gs, q.pgid)
		}
	}
	return gs
}

// listProcs returns every process with the run ids of its environment.
func listProcs() ([]procInfo, error) {
	stats, err := listStats()
	if err != nil {
		return nil, err
	}
	procs := make([]procInfo, 0, len(stats))
	for _, st := range stats {
		pi := procInfo{procStat: st}
		if !st.gone {
			pi.runIDs = runIDsOf(st.pid)
		}
		procs = append(procs, pi)
	}
	return procs, nil
}

// waitGroupsGone waits until no process of the process groups runs, at most
// wait, and returns the groups that still have one. Real time, not the
// Service's clock: it is the kernel that ends the processes.
func waitGroupsGone(groups []int, wait time.Duration) []int {
	deadline := time.Now().Add(wait)
	for {
		alive := liveGroups(groups)
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// liveGroups returns the groups of groups with a process that is not a
// zombie; all of them when the processes cannot be listed.
func liveGroups(groups []int) []int {
	if len(groups) == 0 {
		return nil
	}
	stats, err := listStats()
	if err != nil {
		return groups
	}
	var alive []int
	for _, st := range stats {
		if !st.gone && slices.Contains(groups, st.pgid) && !slices.Contains(alive, st.pgid) {
			alive = append(alive, st.pgid)
		}
	}
	return alive
}
