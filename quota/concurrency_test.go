package quota_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/quota"
)

// TestConcurrentAdmitsNeverOverspend races many goroutines of several tenants
// admitting, settling (at most their reservation, or unknown usage) and
// cancelling, while a watcher checks that spent + reserved never exceeds the
// budget at any moment. Run with -race.
func TestConcurrentAdmitsNeverOverspend(t *testing.T) {
	const (
		goroutines = 64
		attempts   = 200
	)
	tests := []struct {
		name  string
		quota auth.Quota
	}{
		{"tokens", auth.Quota{TokensPerDay: 20_000}},
		{"requests", auth.Quota{RequestsPerDay: 777}},
		{"both", auth.Quota{TokensPerDay: 50_000, RequestsPerDay: 3_000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, _, cat := newAccountant(t, noon)
			m := lookup(t, cat, "lm-4-scout")
			tenants := []*auth.Tenant{
				tenant("acme", map[string]auth.Quota{m.Alias: tc.quota}),
				tenant("globex", map[string]auth.Quota{m.Alias: tc.quota}),
			}
			var admitted, charged [2]atomic.Int64
			stop := make(chan struct{})
			watched := make(chan error, 1)
			go func() { watched <- watch(a, tenants, m.Alias, tc.quota, stop) }()

			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(g), 1))
					ti := g % len(tenants)
					for range attempts {
						reserve := rng.Int64N(100) + 1
						tk, err := a.Admit(tenants[ti], m, reserve)
						if err != nil {
							if errcat.CodeOf(err) != errcat.ModelQuotaExhausted {
								t.Errorf("Admit: %v", err)
							}
							continue
						}
						admitted[ti].Add(1)
						switch n := rng.Int64N(reserve+2) - 1; { // -1 .. reserve
						case n == reserve:
							tk.Cancel()
						case n < 0:
							tk.Settle(-1)
							charged[ti].Add(reserve)
						default:
							tk.Settle(n)
							tk.Settle(reserve) // ignored: the first call wins
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
				got := a.Usage(ten.ID, m.Alias)
				want := quota.Usage{Requests: admitted[i].Load(), Tokens: charged[i].Load()}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: Usage mismatch (-want +got):\n%s", ten.ID, diff)
				}
				if q := tc.quota.RequestsPerDay; q > 0 && tc.quota.TokensPerDay == 0 && got.Requests != q {
					// 32 goroutines x 200 attempts per tenant always exhaust it.
					t.Errorf("%s: %d requests admitted, want exactly %d", ten.ID, got.Requests, q)
				}
				if q := tc.quota.TokensPerDay; q > 0 && got.Tokens > q {
					t.Errorf("%s: %d tokens spent, over the budget of %d", ten.ID, got.Tokens, q)
				}
			}
		})
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
			u := a.Usage(ten.ID, alias)
			if q.TokensPerDay > 0 && u.Tokens+u.Reserved > q.TokensPerDay {
				return fmt.Errorf("%s: spent %d + reserved %d over the budget of %d", ten.ID, u.Tokens, u.Reserved, q.TokensPerDay)
			}
			if q.RequestsPerDay > 0 && u.Requests > q.RequestsPerDay {
				return fmt.Errorf("%s: %d requests over the budget of %d", ten.ID, u.Requests, q.RequestsPerDay)
			}
		}
	}
}

// TestConcurrentSettleAndCancel ends each ticket from two goroutines at once:
// exactly one call wins.
func TestConcurrentSettleAndCancel(t *testing.T) {
	a, _, cat := newAccountant(t, noon)
	m := lookup(t, cat, "lm-4-scout")
	acme := tenant("acme", map[string]auth.Quota{m.Alias: {TokensPerDay: 1 << 40}})
	const n = 500
	var wg sync.WaitGroup
	for range n {
		tk, err := a.Admit(acme, m, 10)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { tk.Settle(10) })
		wg.Go(func() { tk.Cancel() })
		wg.Go(func() { tk.Settle(-1) })
	}
	wg.Wait()
	u := a.Usage("acme", m.Alias)
	if u.Requests != n || u.Reserved != 0 || u.Tokens%10 != 0 || u.Tokens > 10*n {
		t.Errorf("Usage = %+v; want %d requests, nothing reserved, a multiple of 10 up to %d tokens", u, n, 10*n)
	}
}
