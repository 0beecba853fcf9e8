package quota_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store/pgstore"
)

// TestOnPostgreSQL runs the replica tests with each Accountant on a pgstore
// of its own (a pool of its own, as a replica has) over one database. It skips
// without PostgreSQL (see internal/pgtest).
func TestOnPostgreSQL(t *testing.T) {
	c := pgtest.New(t)
	// replicas returns n Accountants over n stores on one new database.
	replicas := func(t *testing.T, n int) []*quota.Accountant {
		url, fc, cat := c.NewDatabase(t), clock.NewFake(noon), testCatalog(t)
		accts := make([]*quota.Accountant, n)
		for i := range accts {
			db, err := pgstore.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			accts[i] = newOver(t, db, fc, cat)
		}
		return accts
	}

	t.Run("ReplicasShareBudget", func(t *testing.T) {
		accts := replicas(t, 2)
		m := lookup(t, testCatalog(t), "lm-4-scout")
		acme := tenant("acme", map[string]auth.Quota{m.Alias: {TokensPerDay: 100, RequestsPerDay: 3}})
		ctx := t.Context()
		first, err := accts[0].Admit(ctx, acme, m, 60)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := accts[1].Admit(ctx, acme, m, 41); errcat.CodeOf(err) != errcat.ModelQuotaExhausted {
			t.Fatalf("second replica over the shared tokens: Admit = %v; want model_quota_exhausted", err)
		}
		first.Settle(ctx, 10)
		if _, err := accts[1].Admit(ctx, acme, m, 90); err != nil {
			t.Fatalf("Admit after the other replica settled = %v; want a ticket", err)
		}
		want := quota.Usage{Requests: 2, Tokens: 10, Reserved: 90}
		for i, a := range accts {
			if diff := cmp.Diff(want, usage(t, a, "acme", m.Alias)); diff != "" {
				t.Errorf("replica %d: Usage mismatch (-want +got):\n%s", i+1, diff)
			}
		}
	})

	// Fewer goroutines than on memstore: every admission of a tenant
	// conflicts with the others on its counter's row, and PostgreSQL
	// serializes them by aborting and retrying.
	for _, tc := range []race{
		{name: "tokens", goroutines: 8, attempts: 30, quota: auth.Quota{TokensPerDay: 1_500}},
		{name: "requests", goroutines: 8, attempts: 30, quota: auth.Quota{RequestsPerDay: 77}},
		{name: "both", goroutines: 8, attempts: 30, quota: auth.Quota{TokensPerDay: 3_000, RequestsPerDay: 100}},
	} {
		t.Run("ConcurrentAdmitsNeverOverspend/"+tc.name, func(t *testing.T) {
			accts := replicas(t, 2)
			tc.run(t, lookup(t, testCatalog(t), "lm-4-scout"), accts...)
		})
	}
}
