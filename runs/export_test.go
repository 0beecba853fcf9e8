package runs

import (
	"context"
	"fmt"

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
