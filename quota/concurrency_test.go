package quota_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/upstream"
)

// TestConcurrentAdmitsNeverOverspend races many goroutines of several tenants
// admitting, settling and cancelling on one memstore. Run with -race.
func TestConcurrentAdmitsNeverOverspend(t *testing.T) {
	for _, tc := range []race{
		{name: "tokens", goroutines: 64, attempts: 200, quota: auth.Quota{TokensPerDay: 20_000}},
		{name: "requests", goroutines: 64, attempts: 200, quota: auth.Quota{RequestsPerDay: 777}},
		{name: "both", goroutines: 64, attempts: 200, quota: auth.Quota{TokensPerDay: 50_000, RequestsPerDay: 3_000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _, cat := newAccountant(t, noon)
			tc.run(t, lookup(t, cat, "lm-4-scout"), a)
		})
	}
}

// race is a run of goroutines admitting, settling (at most their reservation,
// or unknown usage) and cancelling for two tenants with the same quota, spread
// over one or more Accountants (replicas), while a watcher checks that spent +
// reserved never exceeds the budget at any moment.
type race struct {
	name                 string
	goroutines, attempts int
	quota                auth.Quota
}

func (tc race) run(t *testing.T, m *upstream.ModelInfo, accts ...*quota.Accountant) {
	ctx := t.Context()
	tenants := []*auth.Tenant{
		tenant("acme", map[string]auth.Quota{m.Alias: tc.quota}),
		tenant("globex", map[string]auth.Quota{m.Alias: tc.quota}),
	}
	var admitted, charged [2]atomic.Int64
	stop := make(chan struct{})
	watched := make(chan error, 1)
	go func() { watched <- watch(accts[0], tenants, m.Alias, tc.quota, stop) }()

	var wg sync.WaitGroup
	for g := range tc.goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			ti, a := g%len(tenants), accts[g/len(tenants)%len(accts)]
			for range tc.attempts {
				reserve := rng.Int64N(100) + 1
				tk, err := a.Admit(ctx, tenants[ti], m, reserve)
				if err != nil {
					if errcat.CodeOf(err) != errcat.ModelQuotaExhausted {
						t.Errorf("Admit: %v", err)
					}
					continue
				}
				admitted[ti].Add(1)
				switch n := rng.Int64N(reserve+2) - 1; { // -1 .. reserve
				case n == reserve:
					tk.Cancel(ctx)
				case n < 0:
					tk.Settle(ctx, -1)
					charged[ti].Add(reserve)
				default:
					tk.Settle(ctx, n)
					tk.Settle(ctx, reserve) // ignored: the first call wins
					charged[ti].Add(n)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := <-watched; err != nil {
		t.Error(err)
	}
	for i, ten := range tenants {
		got := usage(t, accts[len(accts)-1], ten.ID, m.Alias)
		want := quota.Usage{Requests: admitted[i].Load(), Tokens: charged[i].Load()}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Usage mismatch (-want +got):\n%s", ten.ID, diff)
		}
		if q := tc.quota.RequestsPerDay; q > 0 && tc.quota.TokensPerDay == 0 && got.Requests != q {
			// Every race tries more requests per tenant than the budget has.
			t.Errorf("%s: %d requests admitted, want exactly %d", ten.ID, got.Requests, q)
		}
		if q := tc.quota.TokensPerDay; q > 0 && got.Tokens > q {
			t.Errorf("%s: %d tokens spent, over the budget of %d", ten.ID, got.Tokens, q)
		}
	}
}

// watch polls the tenants' usage until stop is closed and reports the first
// snapshot over budget.
func watch(a *quota.Accountant, tenants []*auth.Tenant, alias string, q auth.Quota, stop <-chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		for _, ten := range tenants {
			u, err := a.Usage(context.Background(), ten.ID, alias)
			if err != nil {
				return err
			}
			if q.TokensPerDay > 0 && u.Tokens+u.Reserved > q.TokensPerDay {
				return fmt.Errorf("%s: spent %d + reserved %d over the budget of %d", ten.ID, u.Tokens, u.Reserved, q.TokensPerDay)
			}
			if q.RequestsPerDay > 0 && u.Requests > q.RequestsPerDay {
				return fmt.Errorf("%s: %d requests over the budget of %d", ten.ID, u.Requests, q.RequestsPerDay)
			}
		}
	}
}

// TestConcurrentSettleAndCancel ends each ticket from three goroutines at
// once: exactly one call wins.
func TestConcurrentSettleAndCancel(t *testing.T) {
	a, _, cat := newAccountant(t, noon)
	m := lookup(t, cat, "lm-4-scout")
	acme := tenant("acme", map[string]auth.Quota{m.Alias: {TokensPerDay: 1 << 40}})
	ctx := t.Context()
	const n = 500
	var wg sync.WaitGroup
	for range n {
		tk, err := a.Admit(ctx, acme, m, 10)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { tk.Settle(ctx, 10) })
		wg.Go(func() { tk.Cancel(ctx) })
		wg.Go(func() { tk.Settle(ctx, -1) })
	}
	wg.Wait()
	u := usage(t, a, "acme", m.Alias)
	if u.Requests != n || u.Reserved != 0 || u.Tokens%10 != 0 || u.Tokens > 10*n {
		t.Errorf("Usage = %+v; want %d requests, nothing reserved, a multiple of 10 up to %d tokens", u, n, 10*n)
	}
}
