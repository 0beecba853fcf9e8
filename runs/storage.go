package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/store"
)

// Buckets of the runs layout; the package owns every bucket named runs/*. Key
// components are store.AppendString / store.AppendUint64 encoded.
var (
	// bucketRuns: str(tenant) str(id) -> record (JSON).
	bucketRuns = []byte("runs/runs")
	// bucketOutput: str(tenant) str(id) -> the output tail of a run (raw
	// bytes): written by its owner's heartbeat while it runs, when the tail
	// changed, and with its final state.
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
	// bucketQueue: u64(seq) -> str(tenant) str(id): the queued runs no
	// replica has claimed, oldest first; deleted when the run is claimed or
	// ends.
	bucketQueue = []byte("runs/queue")
	// bucketClaimed: str(tenant) str(id) -> "": the active runs a replica
	// has claimed (the record names it, with its lease), deleted in the
	// transaction that ends the run. Replicas look here for cancel requests
	// and for runs whose replica is gone; it holds at most MaxRunning runs
	// per replica, however long the queue.
	bucketClaimed = []byte("runs/claimed")
	// bucketSeq: "next" -> u64, the sequence number of the next run (store
	// wide; orders the listings, including runs created in the same instant).
	bucketSeq = []byte("runs/seq")
	keySeq    = []byte("next")
)

// runFields are the members of a run that the store keeps and the API
// answers alike (record and runJSON embed them), in the order the API
// answers them. The store's records are read by member name, so records
// written in another member order read the same.
type runFields struct {
	ID         string     `json:"id"`
	Runtime    string     `json:"runtime"`
	Repo       string     `json:"repo"`
	WorkItem   string     `json:"work_item"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	User       string     `json:"user_id"`
}

// record is a run as stored.
type record struct {
	runFields
	Tenant string `json:"tenant"`
	Seq    uint64 `json:"seq"`
	// OutputTruncated says the command wrote more than the kept tail.
	OutputTruncated bool `json:"output_truncated,omitempty"`
	// Proc is the command of a run that has started running; nil before.
	Proc *proc `json:"proc,omitempty"`
	// Owner is the replica that claimed the run, with its lease; nil while
	// the run waits in the queue, and on runs stored by a gateway from before
	// replicas had leases.
	Owner *owner `json:"owner,omitempty"`
	// CancelRequested says a replica other than the owner received a cancel:
	// the owner stops the run when it sees it.
	CancelRequested bool `json:"cancel_requested,omitempty"`
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

func queueKey(seq uint64) []byte { return store.AppendUint64(nil, seq) }

// readRunKey reads str(tenant) str(id), the key of bucketRuns and
// bucketClaimed and the value of bucketQueue.
func readRunKey(b []byte) (runRef, error) {
	tenant, rest, err := store.ReadString(b)
	if err != nil {
		return runRef{}, fmt.Errorf("runs: run key %x: %w", b, err)
	}
	id, _, err := store.ReadString(rest)
	if err != nil {
		return runRef{}, fmt.Errorf("runs: run key %x: %w", b, err)
	}
	return runRef{tenant, id}, nil
}

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
// With claim, this Service claims the run in the same transaction when no
// older run waits in the queue (creation order is the start order), and
// insert reports that it did; otherwise the run joins the queue.
func (s *Service) insert(ctx context.Context, rec record, claim bool) (record, bool, error) {
	now := s.clk.Now().UTC()
	var claimed bool
	err := s.st.Update(ctx, func(tx store.Tx) error {
		claimed, rec.Owner = false, nil // the store may run the callback again
		ak := activeKey(rec.Tenant, rec.Repo, rec.WorkItem)
		if tx.Get(bucketActive, ak) != nil {
			return errBusy()
		}
		seq, err := nextSeq(tx)
		if err != nil {
			return err
		}
		rec.Seq = seq
		if claim {
			if claimed, err = queueEmpty(tx); err != nil {
				return err
			}
		}
		key, id := runKey(rec.Tenant, rec.ID), []byte(rec.ID)
		wait := kv{bucketQueue, queueKey(seq), key}
		if claimed {
			rec.Owner = s.self.owner(now.Add(s.leaseFor))
			wait = kv{bucketClaimed, key, []byte{}}
		}
		for _, put := range []kv{
			{bucketSeq, keySeq, store.AppendUint64(nil, seq+1)},
			{bucketActive, ak, id},
			{bucketByUser, store.AppendUint64(byUserPrefix(rec.Tenant, rec.User), seq), id},
			{bucketByTenant, store.AppendUint64(byTenantPrefix(rec.Tenant), seq), id},
			wait,
		} {
			if err := tx.Put(put.bucket, put.key, put.value); err != nil {
				return err
			}
		}
		return putRecord(tx, rec)
	})
	return rec, claimed, err
}

// kv is a key and value of a bucket.
type kv struct{ bucket, key, value []byte }

// nextSeq reads the sequence number of the next run.
func nextSeq(tx store.Tx) (uint64, error) {
	raw := tx.Get(bucketSeq, keySeq)
	if raw == nil {
		return 0, nil
	}
	n, _, err := store.ReadUint64(raw)
	if err != nil {
		return 0, fmt.Errorf("runs: sequence: %w", err)
	}
	return n, nil
}

// queueEmpty reports whether no run waits in the queue.
func queueEmpty(tx store.Tx) (bool, error) {
	empty := true
	err := tx.Scan(bucketQueue, nil, false, func(_, _ []byte) (bool, error) {
		empty = false
		return false, nil
	})
	return empty, err
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

// loadSeen is load for a handler: run id of c's tenant, or 404
// coding_agent_run_not_found when there is none or c may not see it.
func (s *Service) loadSeen(ctx context.Context, c caller, id string) (view, error) {
	v, ok, err := s.load(ctx, c.tenant.ID, id)
	switch {
	case err != nil:
		return view{}, err
	case !ok || !c.sees(v.rec):
		return view{}, errNotFound()
	}
	return v, nil
}

// list returns one page of the runs of tenant (of user, or all of them when
// tenantWide), newest first, and whether more follow.
func (s *Service) list(ctx context.Context, tenant, user string, tenantWide bool, pg httpx.Page) ([]record, bool, error) {
	bucket, prefix := bucketByUser, byUserPrefix(tenant, user)
	if tenantWide {
		bucket, prefix = bucketByTenant, byTenantPrefix(tenant)
	}
	var (
		page []record
		win  httpx.Window
	)
	err := s.st.View(ctx, func(tx store.Tx) error {
		page, win = page[:0], httpx.Window{Page: pg} // the store may run the callback again
		return tx.Scan(bucket, prefix, true, func(_, v []byte) (bool, error) {
			if win.Skip() {
				return true, nil
			}
			if win.Full(len(page)) {
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
	return page, win.More, nil
}
