package usage_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/store/pgstore"
	"github.com/chatgw/gateway/usage"
)

// TestOnPostgreSQL: two Services on stores of their own over one database
// (two replicas) record at once; every record is written once, the totals
// read by either are the sum, and one purge removes the expired ones. It
// skips without PostgreSQL (see internal/pgtest).
func TestOnPostgreSQL(t *testing.T) {
	url := pgtest.New(t).NewDatabase(t)
	clk := clock.NewFake(t0)
	replicas := make([]*usage.Service, 2)
	for i := range replicas {
		db, err := pgstore.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s := usage.New(usage.Config{Store: db, Clock: clk, Logger: discard, MaxBatch: 50,
			FlushInterval: 5 * time.Millisecond, PurgeInterval: -1, Retention: day})
		t.Cleanup(func() { s.Close() })
		replicas[i] = s
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			s := replicas[g%2]
			for i := range 300 {
				r := chat(fmt.Sprint("u", g), 1, 2)
				r.Time = t0.Add(time.Duration(i) * time.Millisecond) // the same times on both replicas
				if i%3 == 0 {
					r.Time = r.Time.Add(-2 * day) // expired
				}
				s.Record(r)
			}
		})
	}
	wg.Wait()
	for _, s := range replicas {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	q := usage.Query{Tenant: "acme", From: t0.Add(-3 * day), To: t0.Add(day), GroupBy: []usage.GroupKey{usage.ByUser}}
	for i, s := range replicas {
		gs, err := s.Totals(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(gs) != 4 {
			t.Fatalf("replica %d: %d groups, want 4", i, len(gs))
		}
		for _, g := range gs {
			if g.Requests != 300 || g.InputTokens != 300 || g.OutputTokens != 600 {
				t.Errorf("replica %d: %+v, want 300 requests of 1 and 2 tokens", i, g)
			}
		}
	}
	n, err := replicas[0].PurgeExpired(context.Background())
	if err != nil || n != 400 {
		t.Errorf("PurgeExpired = %d, %v; want 400", n, err)
	}
	q.GroupBy = nil
	gs, err := replicas[1].Totals(context.Background(), q)
	if err != nil || len(gs) != 1 || gs[0].Requests != 800 {
		t.Errorf("after the purge: %+v, %v; want 800 requests", gs, err)
	}
}
