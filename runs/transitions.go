package runs

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/chatgw/gateway/store"
)

// The moves of a stored run between states. Each is one Update transaction
// that first reads the run and checks that it is still in the state the move
// starts from ("every state change is one Update transaction"), so that two
// replicas deciding at once on one run cannot both move it.

// end moves the active run rec (as just read in tx) to its final state and
// frees its work item. output, when non-empty, is stored as its tail.
func end(tx store.Tx, rec record, status, reason string, exitCode *int, at time.Time, output []byte, truncated bool) error {
	rec.Status, rec.Reason, rec.ExitCode, rec.FinishedAt = status, reason, exitCode, &at
	rec.OutputTruncated = truncated
	if err := putRecord(tx, rec); err != nil {
		return err
	}
	if len(output) > 0 {
		if err := tx.Put(bucketOutput, runKey(rec.Tenant, rec.ID), output); err != nil {
			return err
		}
	}
	if err := dequeue(tx, rec); err != nil {
		return err
	}
	if err := tx.Delete(bucketClaimed, runKey(rec.Tenant, rec.ID)); err != nil {
		return err
	}
	ak := activeKey(rec.Tenant, rec.Repo, rec.WorkItem)
	if raw := tx.Get(bucketActive, ak); raw != nil && string(raw) == rec.ID {
		return tx.Delete(bucketActive, ak)
	}
	return nil
}

// dequeue removes run rec from the queue, if it waits there.
func dequeue(tx store.Tx, rec record) error {
	qk := queueKey(rec.Seq)
	if raw := tx.Get(bucketQueue, qk); raw != nil && bytes.Equal(raw, runKey(rec.Tenant, rec.ID)) {
		return tx.Delete(bucketQueue, qk)
	}
	return nil
}

// errNotQueued stops markRunning for a run whose stored state moved on.
var errNotQueued = errors.New("runs: " + reasonNoLongerQueued)

// errChanged says the stored run is no longer in the state its caller
// decided on; the caller reads it again and decides anew.
var errChanged = errors.New("runs: the run changed meanwhile")

// claimQueued claims for this Service up to n runs of the queue, oldest
// first, in one transaction: each must still be queued and unclaimed in it,
// so that of two replicas claiming at once, each run goes to one. It returns
// the claimed runs, as stored.
func (s *Service) claimQueued(ctx context.Context, n int) ([]record, error) {
	var empty bool
	if err := s.st.View(ctx, func(tx store.Tx) (err error) {
		empty, err = queueEmpty(tx)
		return err
	}); err != nil || empty {
		return nil, err // an idle queue costs a read, not a write
	}
	now := s.clk.Now().UTC()
	var got []record
	err := s.st.Update(ctx, func(tx store.Tx) error {
		got = nil // the store may run the callback again
		recs, dangling, err := queueHead(tx, n)
		if err != nil {
			return err
		}
		for _, k := range dangling {
			if err := tx.Delete(bucketQueue, k); err != nil {
				return err
			}
		}
		for _, rec := range recs {
			rec.Owner = s.self.owner(now.Add(s.leaseFor))
			if err := claimWrites(tx, rec); err != nil {
				return err
			}
			got = append(got, rec)
		}
		return nil
	})
	return got, err
}

// claimWrites stores the queued run rec as claimed by rec.Owner.
func claimWrites(tx store.Tx, rec record) error {
	if err := putRecord(tx, rec); err != nil {
		return err
	}
	if err := tx.Delete(bucketQueue, queueKey(rec.Seq)); err != nil {
		return err
	}
	return tx.Put(bucketClaimed, runKey(rec.Tenant, rec.ID), []byte{})
}

// queueHead returns the first n runs of the queue that are queued and
// unclaimed, and the keys of entries before them that name no such run.
func queueHead(tx store.Tx, n int) (recs []record, dangling [][]byte, err error) {
	err = tx.Scan(bucketQueue, nil, false, func(k, v []byte) (bool, error) {
		ref, err := readRunKey(v)
		if err != nil {
			return false, err
		}
		rec, ok, err := getRecord(tx, ref.tenant, ref.id)
		if err != nil {
			return false, err
		}
		if !ok || rec.Status != StatusQueued || rec.Owner != nil {
			dangling = append(dangling, bytes.Clone(k))
			return true, nil
		}
		recs = append(recs, rec)
		return len(recs) < n, nil
	})
	return recs, dangling, err
}

// markRunning moves the queued run of a, which this Service claimed, to
// running (started_at now) with p, the identity of its started command, and
// renews its lease.
func (s *Service) markRunning(a *active, p *proc) error {
	now := s.clk.Now().UTC()
	return retry(func() error {
		return s.st.Update(context.Background(), func(tx store.Tx) error {
			rec, ok, err := getRecord(tx, a.rec.Tenant, a.rec.ID)
			if err != nil {
				return err
			}
			if !ok || rec.Status != StatusQueued || !s.self.holds(rec) {
				return errNotQueued
			}
			rec.Status, rec.StartedAt, rec.Proc = StatusRunning, &now, p
			rec.Owner.Until = now.Add(s.leaseFor)
			return putRecord(tx, rec)
		})
	})
}

// finish writes the final state o of the dispatched run a, or puts it back
// in the queue (o.requeue), unless the stored run is no longer active or no
// longer this Service's: then another process ended it (a restart, or a
// replica that found its lease expired) and that state stays.
func (s *Service) finish(a *active, o outcome) error {
	now := s.clk.Now().UTC()
	return retry(func() error {
		return s.st.Update(context.Background(), func(tx store.Tx) error {
			rec, ok, err := getRecord(tx, a.rec.Tenant, a.rec.ID)
			if err != nil || !ok || !rec.isActive() || !s.self.holds(rec) {
				return err
			}
			if o.requeue {
				return requeue(tx, rec, now)
			}
			return end(tx, rec, o.status, o.reason, o.exitCode, now, o.output, o.truncated)
		})
	})
}

// requeue puts the claimed run rec, whose command never started, back in the
// queue for a replica to claim, or cancels it if a cancel was requested.
func requeue(tx store.Tx, rec record, now time.Time) error {
	if rec.CancelRequested {
		return end(tx, rec, StatusCancelled, ReasonCancelledQueued, nil, now, nil, false)
	}
	rec.Owner = nil
	if err := putRecord(tx, rec); err != nil {
		return err
	}
	if err := tx.Delete(bucketClaimed, runKey(rec.Tenant, rec.ID)); err != nil {
		return err
	}
	return tx.Put(bucketQueue, queueKey(rec.Seq), runKey(rec.Tenant, rec.ID))
}

// cancelStored moves the stored run id of tenant to cancelled with reason,
// provided it is still active and still(rec) holds of it (the state its
// caller decided on); else errChanged. A run that is final by then is
// returned as it is. It returns the run as it then is.
func (s *Service) cancelStored(ctx context.Context, tenant, id, reason string, still func(record) bool) (record, error) {
	now := s.clk.Now().UTC()
	return s.updateActive(ctx, tenant, id, func(tx store.Tx, rec *record) error {
		if !still(*rec) {
			return errChanged
		}
		if err := end(tx, *rec, StatusCancelled, reason, nil, now, nil, false); err != nil {
			return err
		}
		rec.Status, rec.Reason, rec.FinishedAt = StatusCancelled, reason, &now
		return nil
	})
}

// requestCancel records a cancel request on the active run id of tenant,
// provided the replica holder still owns it (else errChanged), for that
// replica to act on. A run that is final by then is returned as it is.
func (s *Service) requestCancel(ctx context.Context, tenant, id, holder string) (record, error) {
	return s.updateActive(ctx, tenant, id, func(tx store.Tx, rec *record) error {
		if rec.Owner == nil || rec.Owner.Holder != holder {
			return errChanged
		}
		rec.CancelRequested = true
		return putRecord(tx, *rec)
	})
}

// updateActive reads the stored run id of tenant in one Update and, when it
// is still active, lets fn change it (fn updates rec to what it stored). It
// returns the run as it then is: the zero record when there is none, the
// stored one when it is final already.
func (s *Service) updateActive(ctx context.Context, tenant, id string, fn func(tx store.Tx, rec *record) error) (record, error) {
	var out record
	err := s.st.Update(ctx, func(tx store.Tx) error {
		out = record{} // the store may run the callback again
		rec, ok, err := getRecord(tx, tenant, id)
		if err != nil || !ok {
			return err
		}
		out = rec
		if !rec.isActive() {
			return nil
		}
		return fn(tx, &out)
	})
	return out, err
}

// sameState reports whether run a is in the state b is: same status, same
// command, same owner and lease.
func sameState(a, b record) bool {
	if a.Status != b.Status || (a.Proc == nil) != (b.Proc == nil) || !a.Owner.same(b.Owner) {
		return false
	}
	return a.Proc == nil || *a.Proc == *b.Proc
}
