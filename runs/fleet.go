package runs

import (
	"context"
	"time"

	"github.com/chatgw/gateway/store"
)

// Several gateway replicas may share one store (PostgreSQL). Each Service
// runs one loop that keeps the runs going across them:
//
//   - heartbeat (every HeartbeatInterval): renews the lease of every run this
//     Service claimed, stores their output tails that changed, and stops the
//     runs the store says are no longer its own;
//   - poll (every PollInterval, and once in New): passes cancel requests made
//     on other replicas on to this Service's runs, fails the runs whose
//     replica is gone (sweep), and claims queued runs for its free slots;
//   - claim (when woken: a run was created without a free slot, or a slot
//     freed): claims queued runs for its free slots.
//
// Tickers run on real time; leases are judged by Config.Clock.

// wake asks the loop to claim queued runs; it never blocks.
func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// loop runs the heartbeat, poll and claims until ctx ends (Close).
func (s *Service) loop(ctx context.Context) {
	defer close(s.loopDone)
	hb := time.NewTicker(s.heartbeatEvery)
	defer hb.Stop()
	poll := time.NewTicker(s.pollEvery)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hb.C:
			s.heartbeat(ctx)
		case <-poll.C:
			s.poll(ctx)
		case <-s.kick:
			s.claim(ctx)
		}
	}
}

// claim claims queued runs, oldest first, for the free slots of this
// Service, and hands them to supervisors. A failure is logged; the next poll
// tries again.
func (s *Service) claim(ctx context.Context) {
	n := s.reserve(s.maxRunning)
	if n == 0 {
		return
	}
	// Not cancelled by Close: a claim that may have committed must be
	// launched (Close then puts the runs back in the queue), or they would
	// wait for their lease to expire.
	recs, err := s.claimQueued(context.WithoutCancel(ctx), n)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("runs: queued runs not claimed; trying again at the next poll", "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range recs {
		s.launchLocked(rec)
	}
	s.releaseLocked(n - len(recs))
}

// poll reads the runs replicas have claimed: it passes the cancel requests
// on this Service's runs on to them, and fails the runs whose replica is
// gone; then it claims queued runs for the free slots.
func (s *Service) poll(ctx context.Context) {
	claimed, err := s.claimedRecords(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("runs: claimed runs not read", "err", err)
		}
	} else {
		s.applyCancelRequests(claimed)
		s.sweep(ctx, s.gone(claimed))
	}
	s.claim(ctx)
}

// claimedRecords returns the active runs of bucketClaimed.
func (s *Service) claimedRecords(ctx context.Context) ([]record, error) {
	var recs []record
	err := s.st.View(ctx, func(tx store.Tx) error {
		recs = nil // the store may run the callback again
		return tx.Scan(bucketClaimed, nil, false, func(k, _ []byte) (bool, error) {
			ref, err := readRunKey(k)
			if err != nil {
				return false, err
			}
			rec, ok, err := getRecord(tx, ref.tenant, ref.id)
			if ok && rec.isActive() && rec.Owner != nil {
				recs = append(recs, rec)
			}
			return err == nil, err
		})
	})
	return recs, err
}

// applyCancelRequests cancels this Service's runs among recs on which
// another replica recorded a cancel request, as a local cancel does.
func (s *Service) applyCancelRequests(recs []record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range recs {
		if a := s.localLocked(rec); a != nil && rec.CancelRequested && s.self.holds(rec) {
			s.cancelRunningLocked(a)
		}
	}
}

// gone returns the runs of recs whose owner can no longer be running them
// (replica.ownerGone), leaving out this Service's own runs: a run it
// executes is alive even while its heartbeat cannot reach the store.
func (s *Service) gone(recs []record) []record {
	now := s.clk.Now()
	var out []record
	for _, rec := range recs {
		if s.self.ownerGone(rec.Owner, now) && s.local(rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}

// sweep fails the runs recs, whose replica is gone, once what they left on
// this machine is killed (recover.go), with ReasonLostRunning or
// ReasonLostQueued; a run whose state changed since it was read (its owner
// renewed the lease) stays as it is.
func (s *Service) sweep(ctx context.Context, recs []record) {
	if len(recs) == 0 {
		return
	}
	left := s.killLeftovers(recs)
	if err := s.failInterrupted(ctx, recs, left, ReasonLostRunning, ReasonLostQueued); err != nil {
		if ctx.Err() == nil {
			s.log.Warn("runs: runs of a replica that is gone not failed; trying again at the next poll", "err", err)
		}
		return
	}
	for _, rec := range recs {
		s.log.Warn("runs: the replica that ran this run is gone; run failed", "run_id", rec.ID,
			"tenant", rec.Tenant, "owner", rec.Owner.Holder, "owner_host", rec.Owner.Host)
	}
}

// beat is what a heartbeat stores of one run.
type beat struct {
	a         *active
	output    []byte
	truncated bool
	written   int64 // a.out's bytes written when output was taken
}

// heartbeat renews, in one transaction, the leases of the runs this Service
// claimed, with their output tails where they changed since the last
// heartbeat. A run the store no longer holds as active and this Service's
// was ended or taken over by another process: its command is stopped.
func (s *Service) heartbeat(ctx context.Context) {
	beats := s.beats()
	if len(beats) == 0 {
		return
	}
	until := s.clk.Now().UTC().Add(s.leaseFor)
	var lost []*active
	err := s.st.Update(ctx, func(tx store.Tx) error {
		lost = nil // the store may run the callback again
		for _, b := range beats {
			rec, ok, err := getRecord(tx, b.a.rec.Tenant, b.a.rec.ID)
			if err != nil {
				return err
			}
			if !ok || !rec.isActive() || !s.self.holds(rec) {
				lost = append(lost, b.a)
				continue
			}
			if err := renew(tx, rec, until, b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("runs: leases not renewed", "err", err)
		}
		return
	}
	for _, b := range beats {
		b.a.storedOutput = b.written
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range lost {
		s.stopLostLocked(a)
	}
}

// beats returns what the heartbeat stores of this Service's runs.
func (s *Service) beats() []beat {
	s.mu.Lock()
	defer s.mu.Unlock()
	beats := make([]beat, 0, len(s.active))
	for _, a := range s.active {
		b := beat{a: a, written: a.out.written()}
		if b.written != a.storedOutput {
			b.output, b.truncated, b.written = a.out.snapshotWritten()
		}
		beats = append(beats, b)
	}
	return beats
}

// renew stores run rec with its lease until until, and the output tail of
// b when it changed.
func renew(tx store.Tx, rec record, until time.Time, b beat) error {
	rec.Owner.Until = until
	if len(b.output) > 0 {
		if err := tx.Put(bucketOutput, runKey(rec.Tenant, rec.ID), b.output); err != nil {
			return err
		}
		rec.OutputTruncated = b.truncated
	}
	return putRecord(tx, rec)
}
