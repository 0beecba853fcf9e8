package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/store"
)

// Proc is the identity of a run's command as the run record holds it.
type Proc = proc

// StoredProc returns the command identity stored with run id of tenant in
// st; nil before the run started running.
func StoredProc(st store.Store, tenant, id string) (*Proc, error) {
	rec, err := storedRecord(st, tenant, id)
	return rec.Proc, err
}

// StoredOwner returns the holder of the lease of run id of tenant in st and
// its expiry; "" for a run no replica has claimed.
func StoredOwner(st store.Store, tenant, id string) (string, time.Time, error) {
	rec, err := storedRecord(st, tenant, id)
	if rec.Owner == nil {
		return "", time.Time{}, err
	}
	return rec.Owner.Holder, rec.Owner.Until, err
}

func storedRecord(st store.Store, tenant, id string) (record, error) {
	var rec record
	err := st.View(context.Background(), func(tx store.Tx) error {
		var ok bool
		var err error
		rec, ok, err = getRecord(tx, tenant, id)
		if err == nil && !ok {
			err = fmt.Errorf("no run %s of tenant %s", id, tenant)
		}
		return err
	})
	return rec, err
}

// StoreRun stores run id of tenant and user for repo and workItem as a
// gateway process on this machine that died would have left it: claimed by
// that process and not started when p is nil, else running with command p.
// The store must hold no queued run.
func StoreRun(st store.Store, tenant, user, repo, workItem, id string, p *Proc) error {
	self := newReplica()
	self.start++ // the pid is this process's, the start time another's: an ended process
	s := &Service{st: st, clk: clock.NewFake(time.Date(2025, 3, 1, 11, 0, 0, 0, time.UTC)),
		self: self, leaseFor: DefaultLeaseDuration}
	rec, claimed, err := s.insert(context.Background(), queued(tenant, user, repo, workItem, id, s.clk.Now()), true)
	switch {
	case err != nil:
		return err
	case !claimed:
		return fmt.Errorf("run %s not claimed: the store holds queued runs", id)
	case p == nil:
		return nil
	}
	return s.markRunning(&active{rec: rec}, p)
}

// StoreQueued stores run id of tenant and user for repo and workItem as
// queued, in the queue for any replica to claim, as a Create without a free
// slot does.
func StoreQueued(st store.Store, tenant, user, repo, workItem, id string) error {
	s := &Service{st: st, clk: clock.NewFake(time.Date(2025, 3, 1, 11, 0, 0, 0, time.UTC))}
	_, _, err := s.insert(context.Background(), queued(tenant, user, repo, workItem, id, s.clk.Now()), false)
	return err
}

// Poll runs one poll of s, as its loop does every PollInterval: cancel
// requests, runs of replicas that are gone, claims.
func Poll(s *Service) { s.poll(s.life) }

// Heartbeat runs one heartbeat of s, as its loop does every
// HeartbeatInterval: leases and output tails.
func Heartbeat(s *Service) { s.heartbeat(s.life) }

// ActAsEndedProcess makes s claim runs as a process of this machine that
// has since ended (its pid with another start time), so that a Service in
// this test process stands for a gateway process that died. Call it before
// s claims anything.
func ActAsEndedProcess(s *Service) { s.self.start++ }

// ActAsOtherMachine makes s claim runs as a replica on another machine,
// whose processes other Services cannot see. Call it before s claims
// anything.
func ActAsOtherMachine(s *Service) { s.self.host += ".elsewhere" }

// Holder returns the lease holder id of s.
func Holder(s *Service) string { return s.self.id }

// Timings returns the heartbeat interval, lease duration and poll interval
// of s.
func Timings(s *Service) (heartbeat, lease, poll time.Duration) {
	return s.heartbeatEvery, s.leaseFor, s.pollEvery
}

// Closing reports whether Close has begun on s.
func Closing(s *Service) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// queued is the record of a queued run of the coding agent.
func queued(tenant, user, repo, workItem, id string, now time.Time) record {
	return record{Tenant: tenant, runFields: runFields{ID: id, User: user,
		Runtime: RuntimeCodingAgent, Repo: repo, WorkItem: workItem, Status: StatusQueued, CreatedAt: now}}
}
