package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
)

// Buckets of the runs layout; the package owns every bucket named runs/*. Key
// components are store.AppendString / store.AppendUint64 encoded.
var (
	// bucketRuns: str(tenant) str(id) -> record (JSON).
	bucketRuns = []byte("runs/runs")
	// bucketOutput: str(tenant) str(id) -> the output tail of a finished run
	// (raw bytes), written with its final state.
	bucketOutput = []byte("runs/output")
	// bucketByUser: str(tenant) str(user) u64(seq) -> id; a user's runs,
	// oldest first.
	bucketByUser = []byte("runs/by-user")
	// bucketByTenant: str(tenant) u64(seq) -> id; the tenant's runs, oldest
	// first.
	bucketByTenant = []byte("runs/by-tenant")
	// bucketActive: str(tenant) str(repo) str(work_item) -> id of the queued
	// or running run of that work item (agent_busy), deleted in the
	// transaction that ends the run. Its keys are also the runs New recovers.
	bucketActive = []byte("runs/active")
	// bucketSeq: "next" -> u64, the sequence number of the next run (store
	// wide; orders the listings, including runs created in the same instant).
	bucketSeq = []byte("runs/seq")
	keySeq    = []byte("next")
)

// record is a run as stored.
type record struct {
	ID         string     `json:"id"`
	Tenant     string     `json:"tenant"`
	User       string     `json:"user_id"`
	Runtime    string     `json:"runtime"`
	Repo       string     `json:"repo"`
	WorkItem   string     `json:"work_item"`
	Seq        uint64     `json:"seq"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	// OutputTruncated says the command wrote more than the kept tail.
	OutputTruncated bool `json:"output_truncated,omitempty"`
	// Proc is the command of a run that has started running; nil before.
	Proc *proc `json:"proc,omitempty"`
}

// proc identifies the command of a run, so that a later start of the gateway
// can tell whether it, or its process group, outlived the process that
// started it (recover.go).
type proc struct {
	PID  int `json:"pid"`
	PGID int `json:"pgid"`
	// Start is the command's start time, field 22 (starttime) of
	// /proc/<pid>/stat in clock ticks after boot; 0 when unknown. A pid the
	// kernel gave to another process since has another start time.
	Start uint64 `json:"start_ticks,omitempty"`
	// Boot is the kernel's boot id (/proc/sys/kernel/random/boot_id): start
	// times of another boot say nothing.
	Boot string `json:"boot_id,omitempty"`
}

// isActive reports whether the run is queued or running.
func (r *record) isActive() bool { return r.Status == StatusQueued || r.Status == StatusRunning }

func runKey(tenant, id string) []byte {
	return store.AppendString(store.AppendString(nil, tenant), id)
}

func activeKey(tenant, repo, workItem string) []byte {
	k := store.AppendString(nil, tenant)
	k = store.AppendString(k, repo)
	return store.AppendString(k, workItem)
}

func byUserPrefix(tenant, user string) []byte {
	return store.AppendString(store.AppendString(nil, tenant), user)
}

func byTenantPrefix(tenant string) []byte { return store.AppendString(nil, tenant) }

// errBusy is agent_busy: the work item has an active run.
func errBusy() *errcat.Error {
	return errcat.New(errcat.AgentBusy, "",
		"A run is already queued or running for this repository and work item.")
}

// getRecord reads run id of tenant; ok is false when there is none.
func getRecord(tx store.Tx, tenant, id string) (rec record, ok bool, err error) {
	raw := tx.Get(bucketRuns, runKey(tenant, id))
	if raw == nil {
		return record{}, false, nil
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return record{}, false, fmt.Errorf("runs: record %q of tenant %q: %w", id, tenant, err)
	}
	return rec, true, nil
}

func putRecord(tx store.Tx, rec record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Put(bucketRuns, runKey(rec.Tenant, rec.ID), b)
}

// insert stores the new queued run rec (its Seq is assigned here) with its
// index entries, or answers agent_busy when its work item has an active run.
func (s *Service) insert(ctx context.Context, rec record) (record, error) {
	err := s.st.Update(ctx, func(tx store.Tx) error {
		ak := activeKey(rec.Tenant, rec.Repo, rec.WorkItem)
		if tx.Get(bucketActive, ak) != nil {
			return errBusy()
		}
		var seq uint64
		if raw := tx.Get(bucketSeq, keySeq); raw != nil {
			n, _, err := store.ReadUint64(raw)
			if err != nil {
				return fmt.Errorf("runs: sequence: %w", err)
			}
			seq = n
		}
		rec.Seq = seq
		id := []byte(rec.ID)
		for _, put := range []struct{ bucket, key, value []byte }{
			{bucketSeq, keySeq, store.AppendUint64(nil, seq+1)},
			{bucketActive, ak, id},
			{bucketByUser, store.AppendUint64(byUserPrefix(rec.Tenant, rec.User), seq), id},
			{bucketByTenant, store.AppendUint64(byTenantPrefix(rec.Tenant), seq), id},
		} {
			if err := tx.Put(put.bucket, put.key, put.value); err != nil {
				return err
			}
		}
		return putRecord(tx, rec)
	})
	return rec, errcat.FromStore(err)
}

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
	ak := activeKey(rec.Tenant, rec.Repo, rec.WorkItem)
	if raw := tx.Get(bucketActive, ak); raw != nil && string(raw) == rec.ID {
		return tx.Delete(bucketActive, ak)
	}
	return nil
}

// errNotQueued stops markRunning for a run whose stored state moved on.
var errNotQueued = errors.New("runs: " + reasonNoLongerQueued)

// markRunning moves the queued run of a to running (started_at now) with p,
// the identity of its started command.
func (s *Service) markRunning(a *active, p *proc) error {
	now := s.clk.Now().UTC()
	return retry(func() error {
		return s.st.Update(context.Background(), func(tx store.Tx) error {
			rec, ok, err := getRecord(tx, a.rec.Tenant, a.rec.ID)
			if err != nil {
				return err
			}
			if !ok || rec.Status != StatusQueued {
				return errNotQueued
			}
			rec.Status, rec.StartedAt, rec.Proc = StatusRunning, &now, p
			return putRecord(tx, rec)
		})
	})
}

// finish writes the final state o of the dispatched run a, unless its stored
// state is no longer active (a later process marked it on start: that state
// stays).
func (s *Service) finish(a *active, o outcome) error {
	now := s.clk.Now().UTC()
	return retry(func() error {
		return s.st.Update(context.Background(), func(tx store.Tx) error {
			rec, ok, err := getRecord(tx, a.rec.Tenant, a.rec.ID)
			if err != nil || !ok || !rec.isActive() {
				return err
			}
			return end(tx, rec, o.status, o.reason, o.exitCode, now, o.output, o.truncated)
		})
	})
}

// cancelStored moves the stored run id of tenant, which must be active and
// not running in this process (queued, or left active by a failed final
// write), to cancelled. It returns the run as it then is.
func (s *Service) cancelStored(ctx context.Context, tenant, id, reason string) (record, error) {
	now := s.clk.Now().UTC()
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
		if err := end(tx, rec, StatusCancelled, reason, nil, now, nil, false); err != nil {
			return err
		}
		out.Status, out.Reason, out.FinishedAt = StatusCancelled, reason, &now
		return nil
	})
	return out, errcat.FromStore(err)
}

// failQueued marks the queued runs of qs failed (ReasonShutdownQueued) in one
// transaction.
func (s *Service) failQueued(qs []*active) error {
	if len(qs) == 0 {
		return nil
	}
	now := s.clk.Now().UTC()
	return retry(func() error {
		return s.st.Update(context.Background(), func(tx store.Tx) error {
			for _, a := range qs {
				rec, ok, err := getRecord(tx, a.rec.Tenant, a.rec.ID)
				if err != nil {
					return err
				}
				if !ok || !rec.isActive() {
					continue
				}
				if err := end(tx, rec, StatusFailed, ReasonShutdownQueued, nil, now, nil, false); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// deleteActiveOf removes the active entries of tenant that name id.
func deleteActiveOf(tx store.Tx, tenant, id string) error {
	return store.DeleteMatching(tx, bucketActive, byTenantPrefix(tenant), func(_, v []byte) (bool, error) {
		return string(v) == id, nil
	})
}

// view is a run as GET answers it: the record and, for a finished run, its
// stored output tail.
type view struct {
	rec    record
	output []byte
}

// load reads run id of tenant with its stored output; ok is false when there
// is none.
func (s *Service) load(ctx context.Context, tenant, id string) (v view, ok bool, err error) {
	err = s.st.View(ctx, func(tx store.Tx) error {
		v, ok = view{}, false // the store may run the callback again
		rec, found, err := getRecord(tx, tenant, id)
		if err != nil || !found {
			return err
		}
		v.rec, ok = rec, true
		v.output = bytes.Clone(tx.Get(bucketOutput, runKey(tenant, id)))
		return nil
	})
	if err != nil {
		return view{}, false, errcat.FromStore(err)
	}
	return v, ok, nil
}

// list returns one page of the runs of tenant (of user, or all of them when
// tenantWide), newest first, and whether more follow.
func (s *Service) list(ctx context.Context, tenant, user string, tenantWide bool, limit, offset int) ([]record, bool, error) {
	bucket, prefix := bucketByUser, byUserPrefix(tenant, user)
	if tenantWide {
		bucket, prefix = bucketByTenant, byTenantPrefix(tenant)
	}
	var page []record
	more := false
	err := s.st.View(ctx, func(tx store.Tx) error {
		page, more = page[:0], false // the store may run the callback again
		skip := offset
		return tx.Scan(bucket, prefix, true, func(_, v []byte) (bool, error) {
			if skip > 0 {
				skip--
				return true, nil
			}
			if len(page) == limit {
				more = true
				return false, nil
			}
			rec, ok, err := getRecord(tx, tenant, string(v))
			if err != nil {
				return false, err
			}
			if ok {
				page = append(page, rec)
			}
			return true, nil
		})
	})
	if err != nil {
		return nil, false, errcat.FromStore(err)
	}
	return page, more, nil
}
