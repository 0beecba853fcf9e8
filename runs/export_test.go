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
	var p *proc
	err := st.View(context.Background(), func(tx store.Tx) error {
		rec, ok, err := getRecord(tx, tenant, id)
		if err == nil && !ok {
			err = fmt.Errorf("no run %s of tenant %s", id, tenant)
		}
		p = rec.Proc
		return err
	})
	return p, err
}

// StoreRun stores run id of tenant and user for repo and workItem as a
// gateway process that died would have left it: queued when p is nil, else
// running with command p.
func StoreRun(st store.Store, tenant, user, repo, workItem, id string, p *Proc) error {
	s := &Service{st: st, clk: clock.NewFake(time.Date(2025, 3, 1, 11, 0, 0, 0, time.UTC))}
	rec, err := s.insert(context.Background(), record{ID: id, Tenant: tenant, User: user,
		Runtime: RuntimeCodingAgent, Repo: repo, WorkItem: workItem, Status: StatusQueued, CreatedAt: s.clk.Now()})
	if err != nil || p == nil {
		return err
	}
	return s.markRunning(&active{rec: rec}, p)
}
