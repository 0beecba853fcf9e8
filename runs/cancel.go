package runs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// Cancel handles POST /a1/runs/:id/cancel (scope runs:write, GW-User-Id
// required): 200 with the run. A queued run is cancelled at once, whichever
// replica receives the cancel. A running run's process group gets SIGTERM,
// then SIGKILL after the grace, and the answer comes once it ended
// (cancelled): at once when this Service runs it, else through the store (the
// replica that runs it sees the request within its PollInterval, and this
// one the end within its own). An active run no live process runs (its
// replica is gone, or its final write failed) has what it still runs on
// this machine SIGKILLed first, as on start (500 internal_error, the run
// unchanged, when that outlives the wait). A finished run is answered as it
// is. 404 coding_agent_run_not_found as for Get.
func (s *Service) Cancel(w http.ResponseWriter, r *http.Request) {
	c, err := callerOf(r, true)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	v, err := s.loadSeen(r.Context(), c, httpx.Param(r, "id"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	rec, err := s.cancelRun(r.Context(), v.rec)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, wire(rec))
}

// cancelAttempts bounds how often cancelRun decides anew because the run
// changed while it acted (it was claimed, or ended, meanwhile).
const cancelAttempts = 4

// cancelRun cancels the run rec (as just read) and returns the run to
// answer.
func (s *Service) cancelRun(ctx context.Context, rec record) (record, error) {
	for range cancelAttempts {
		if !rec.isActive() {
			return rec, nil
		}
		out, err := s.cancelAs(ctx, rec)
		if !errors.Is(err, errChanged) {
			return out, errcat.FromStore(err)
		}
		v, ok, err := s.load(ctx, rec.Tenant, rec.ID)
		if err != nil {
			return record{}, err
		}
		if !ok {
			return record{}, errcat.Internal(errors.New("runs: cancelled run vanished from the store"))
		}
		rec = v.rec
	}
	return record{}, errcat.Internal(fmt.Errorf("runs.Cancel: run %s kept changing", rec.ID))
}

// cancelAs cancels the active run rec as its state asks; errChanged when
// the run is no longer in that state.
func (s *Service) cancelAs(ctx context.Context, rec record) (record, error) {
	switch {
	case rec.Owner == nil && rec.Status == StatusQueued: // in the queue: no replica runs it
		return s.cancelStored(ctx, rec.Tenant, rec.ID, ReasonCancelledQueued, func(cur record) bool {
			return cur.Owner == nil && cur.Status == StatusQueued
		})
	case s.local(rec) != nil:
		return s.cancelLocal(ctx, rec)
	case rec.Owner != nil && !s.self.holds(rec) && !s.self.ownerGone(rec.Owner, s.clk.Now()):
		return s.cancelRemote(ctx, rec)
	default:
		return s.cancelStale(ctx, rec)
	}
}

// cancelLocal cancels rec, a run of this Service, and waits for its end.
func (s *Service) cancelLocal(ctx context.Context, rec record) (record, error) {
	s.mu.Lock()
	a := s.localLocked(rec)
	if a == nil {
		s.mu.Unlock()
		return record{}, errChanged // it ended meanwhile
	}
	s.cancelRunningLocked(a)
	s.mu.Unlock()
	select {
	case <-a.done:
		if a.finalErr != nil {
			return record{}, errcat.Storage(a.finalErr)
		}
	case <-ctx.Done():
	}
	return s.reload(ctx, rec)
}

// cancelRemote records a cancel request on rec, a run another live replica
// runs, and waits until the run has ended: the owner stops it when it sees
// the request.
func (s *Service) cancelRemote(ctx context.Context, rec record) (record, error) {
	out, err := s.requestCancel(ctx, rec.Tenant, rec.ID, rec.Owner.Holder)
	if err != nil || !out.isActive() {
		return out, err
	}
	t := time.NewTicker(s.pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return s.reload(ctx, rec)
		case <-s.life.Done(): // Close: answer the run as it is
			return s.reload(ctx, rec)
		case <-t.C:
		}
		if out, err = s.reload(ctx, rec); err != nil || !out.isActive() {
			return out, err
		}
	}
}

// cancelStale cancels rec, an active run no live process runs, once what it
// left on this machine is killed.
func (s *Service) cancelStale(ctx context.Context, rec record) (record, error) {
	if s.killLeftovers([]record{rec})[rec.ID] == leftAlive {
		return record{}, errcat.Internal(fmt.Errorf("runs.Cancel: processes of run %s still run after SIGKILL", rec.ID))
	}
	reason := ReasonCancelledQueued
	if rec.Status == StatusRunning {
		reason = ReasonCancelled
	}
	return s.cancelStored(ctx, rec.Tenant, rec.ID, reason, func(cur record) bool { return sameState(rec, cur) })
}

// reload reads run rec again, even when ctx has ended (the client may be
// gone; the answer is read anyway, to be logged).
func (s *Service) reload(ctx context.Context, rec record) (record, error) {
	v, ok, err := s.load(context.WithoutCancel(ctx), rec.Tenant, rec.ID)
	if err == nil && !ok {
		err = errcat.Internal(errors.New("runs: cancelled run vanished from the store"))
	}
	return v.rec, err
}
