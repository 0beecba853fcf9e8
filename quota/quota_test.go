package quota_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store/memstore"
)

// op is one step of an admission scenario on tenant "acme", alias lm-4-scout.
type op struct {
	admit  int64 // reserve of an Admit when ticket < 0
	ticket int   // index of an earlier admitted ticket to end, or -1
	settle int64 // with ticket >= 0: Settle(settle) unless cancel
	cancel bool
	refuse bool // the Admit must be refused
}

func admit(reserve int64) op        { return op{admit: reserve, ticket: -1} }
func refused(reserve int64) op      { return op{admit: reserve, ticket: -1, refuse: true} }
func settle(ticket int, n int64) op { return op{ticket: ticket, settle: n} }
func cancel(ticket int) op          { return op{ticket: ticket, cancel: true} }

func TestAdmit(t *testing.T) {
	tests := []struct {
		name  string
		quota auth.Quota
		ops   []op
		want  quota.Usage
	}{
		{"requests_per_day boundary", auth.Quota{RequestsPerDay: 3},
			[]op{admit(10), admit(10), admit(10), refused(0), refused(10)},
			quota.Usage{Requests: 3, Reserved: 30}},
		{"requests_per_day 1", auth.Quota{RequestsPerDay: 1},
			[]op{admit(0), refused(0)},
			quota.Usage{Requests: 1}},
		{"refusals are not counted", auth.Quota{RequestsPerDay: 2, TokensPerDay: 100},
			[]op{refused(101), refused(500), admit(100), settle(0, 10), admit(90), refused(1)},
			quota.Usage{Requests: 2, Tokens: 10, Reserved: 90}},
		{"tokens: reservations add up to the budget exactly", auth.Quota{TokensPerDay: 100},
			[]op{admit(40), admit(60), refused(1), refused(0)},
			quota.Usage{Requests: 2, Reserved: 100}},
		{"tokens: overestimate settles lower and frees budget", auth.Quota{TokensPerDay: 100},
			[]op{admit(80), refused(30), settle(0, 20), admit(30), admit(50), refused(1)},
			quota.Usage{Requests: 3, Tokens: 20, Reserved: 80}},
		{"tokens: underestimate settles higher", auth.Quota{TokensPerDay: 100},
			[]op{admit(60), settle(0, 90), refused(20), admit(10)},
			quota.Usage{Requests: 2, Tokens: 90, Reserved: 10}},
		{"tokens: usage beyond the budget is charged and blocks", auth.Quota{TokensPerDay: 100},
			[]op{admit(50), settle(0, 150), refused(0), refused(1)},
			quota.Usage{Requests: 1, Tokens: 150}},
		{"tokens: reserve above the whole budget", auth.Quota{TokensPerDay: 100},
			[]op{refused(101), refused(1 << 62), admit(100)},
			quota.Usage{Requests: 1, Reserved: 100}},
		{"tokens: negative reserve counts as zero", auth.Quota{TokensPerDay: 100},
			[]op{admit(-5), admit(100), settle(0, 0)},
			quota.Usage{Requests: 2, Reserved: 100}},
		{"tokens only: requests unlimited", auth.Quota{TokensPerDay: 10},
			[]op{admit(1), admit(1), admit(1), admit(1), admit(1)},
			quota.Usage{Requests: 5, Reserved: 5}},
		{"settle unknown usage charges the reservation", auth.Quota{TokensPerDay: 100},
			[]op{admit(70), settle(0, -1), refused(31), admit(30)},
			quota.Usage{Requests: 2, Tokens: 70, Reserved: 30}},
		{"cancel releases tokens, the request stays counted", auth.Quota{TokensPerDay: 100, RequestsPerDay: 2},
			[]op{admit(100), refused(1), cancel(0), admit(100), refused(1)},
			quota.Usage{Requests: 2, Reserved: 100}},
		{"settle twice: the first wins", auth.Quota{TokensPerDay: 100},
			[]op{admit(50), settle(0, 10), settle(0, 40), settle(0, -1)},
			quota.Usage{Requests: 1, Tokens: 10}},
		{"cancel after settle does nothing", auth.Quota{TokensPerDay: 100},
			[]op{admit(50), settle(0, 30), cancel(0)},
			quota.Usage{Requests: 1, Tokens: 30}},
		{"settle after cancel does nothing", auth.Quota{TokensPerDay: 100},
			[]op{admit(50), cancel(0), cancel(0), settle(0, 30)},
			quota.Usage{Requests: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, _, cat := newAccountant(t, noon)
			m := lookup(t, cat, "lm-4-scout")
			acme := tenant("acme", map[string]auth.Quota{m.Alias: tc.quota})
			var tickets []*quota.Ticket
			for i, o := range tc.ops {
				if o.ticket >= 0 {
					if o.cancel {
						tickets[o.ticket].Cancel(t.Context())
					} else {
						tickets[o.ticket].Settle(t.Context(), o.settle)
					}
					continue
				}
				tk, err := a.Admit(t.Context(), acme, m, o.admit)
				if o.refuse {
					if tk != nil || errcat.CodeOf(err) != errcat.ModelQuotaExhausted {
						t.Fatalf("op %d: Admit(%d) = %v, %v; want nil, model_quota_exhausted", i, o.admit, tk, err)
					}
					continue
				}
				if err != nil || tk == nil {
					t.Fatalf("op %d: Admit(%d) = %v, %v; want a ticket", i, o.admit, tk, err)
				}
				tickets = append(tickets, tk)
			}
			if diff := cmp.Diff(tc.want, usage(t, a, "acme", m.Alias)); diff != "" {
				t.Errorf("Usage mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCountersAreSeparate(t *testing.T) {
	a, _, cat := newAccountant(t, noon)
	scout, local := lookup(t, cat, "lm-4-scout"), lookup(t, cat, "lm-4-scout-local")
	q := map[string]auth.Quota{scout.Alias: {RequestsPerDay: 1}, local.Alias: {RequestsPerDay: 1}}
	acme, globex := tenant("acme", q), tenant("globex", q)
	for _, c := range []struct {
		tenant *auth.Tenant
		alias  string
	}{{acme, scout.Alias}, {acme, local.Alias}, {globex, scout.Alias}} {
		if _, err := a.Admit(t.Context(), c.tenant, lookup(t, cat, c.alias), 0); err != nil {
			t.Fatalf("Admit(%s, %s) = %v; want a ticket", c.tenant.ID, c.alias, err)
		}
	}
	if _, err := a.Admit(t.Context(), acme, scout, 0); errcat.CodeOf(err) != errcat.ModelQuotaExhausted {
		t.Errorf("second Admit(acme, %s) = %v; want model_quota_exhausted", scout.Alias, err)
	}
}

// A token file reloaded on SIGHUP gives new *auth.Tenant values: counters follow
// the tenant ID and the new limits apply to the day's counts.
func TestReloadedTenantKeepsCounts(t *testing.T) {
	a, _, cat := newAccountant(t, noon)
	m := lookup(t, cat, "lm-4-scout")
	for range 2 {
		if _, err := a.Admit(t.Context(), tenant("acme", map[string]auth.Quota{m.Alias: {RequestsPerDay: 3}}), m, 0); err != nil {
			t.Fatal(err)
		}
	}
	reloaded := tenant("acme", map[string]auth.Quota{m.Alias: {RequestsPerDay: 2}})
	if _, err := a.Admit(t.Context(), reloaded, m, 0); errcat.CodeOf(err) != errcat.ModelQuotaExhausted {
		t.Errorf("Admit after lowering the limit = %v; want model_quota_exhausted", err)
	}
	raised := tenant("acme", map[string]auth.Quota{m.Alias: {RequestsPerDay: 10}})
	if _, err := a.Admit(t.Context(), raised, m, 0); err != nil {
		t.Errorf("Admit after raising the limit = %v; want a ticket", err)
	}
}

// TestNoQuotaFastPath proves that an alias without a budget costs no
// allocation, does not read the clock and does not touch the store (every
// transaction of this one fails).
func TestNoQuotaFastPath(t *testing.T) {
	cat := testCatalog(t)
	m := lookup(t, cat, "lm-4-scout")
	tests := []struct {
		name   string
		tenant *auth.Tenant
	}{
		{"nil quotas", tenant("acme", nil)},
		{"quota for another alias", tenant("acme", map[string]auth.Quota{"lm-4-scout-cloudB": {RequestsPerDay: 1}})},
		{"zero quota", tenant("acme", map[string]auth.Quota{m.Alias: {}})},
		{"nil tenant", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &countingClock{}
			st := memstore.New()
			var txs atomic.Int64
			st.FailWith(func(string) error { txs.Add(1); return errors.New("store touched") })
			a := newOver(t, st, c, cat)
			ctx := t.Context()
			allocs := testing.AllocsPerRun(1000, func() {
				tk, err := a.Admit(ctx, tc.tenant, m, 4096)
				if tk != nil || err != nil {
					t.Fatalf("Admit = %v, %v; want nil, nil", tk, err)
				}
				tk.Settle(ctx, 100)
				tk.Settle(ctx, -1)
				tk.Cancel(ctx)
			})
			if allocs != 0 {
				t.Errorf("Admit without a quota: %v allocations per run, want 0", allocs)
			}
			if n := c.reads.Load(); n != 0 {
				t.Errorf("Admit without a quota read the clock %d times, want 0", n)
			}
			if n := txs.Load(); n != 0 {
				t.Errorf("Admit without a quota began %d transactions, want 0", n)
			}
		})
	}
}

// TestNilAccountant: a gateway without quotas holds a nil *Accountant, whose
// Admit gives the nil ticket, so callers need no nil check of their own.
func TestNilAccountant(t *testing.T) {
	m := lookup(t, testCatalog(t), "lm-4-scout")
	var a *quota.Accountant
	tk, err := a.Admit(t.Context(), tenant("acme", map[string]auth.Quota{m.Alias: {RequestsPerDay: 1}}), m, 10)
	if tk != nil || err != nil {
		t.Errorf("nil Accountant: Admit = %v, %v; want nil, nil", tk, err)
	}
}

func TestNilTicket(t *testing.T) {
	var tk *quota.Ticket
	tk.Settle(t.Context(), 10)
	tk.Settle(t.Context(), -1)
	tk.Cancel(t.Context())
}

func TestNilClockIsWall(t *testing.T) {
	cat := testCatalog(t)
	m := lookup(t, cat, "lm-4-scout")
	a := quota.New(quota.Config{Store: memstore.New()})
	acme := tenant("acme", map[string]auth.Quota{m.Alias: {RequestsPerDay: 1}})
	if _, err := a.Admit(t.Context(), acme, m, 0); err != nil {
		t.Fatal(err)
	}
	_, err := a.Admit(t.Context(), acme, m, 0)
	if e := errcat.As(err); e.Code != errcat.ModelQuotaExhausted || e.RetryAfter < 1 || e.RetryAfter > 86400 {
		t.Errorf("Admit = %v (Retry-After %d); want model_quota_exhausted within a day", err, e.RetryAfter)
	}
}

func TestNewWithoutStorePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New without a store did not panic")
		}
	}()
	quota.New(quota.Config{})
}

// refusal is one call of Config.Refused.
type refusal struct {
	Tenant, Alias string
	Code          errcat.Code
}

// TestRefused: Config.Refused hears of each refusal, once, with its code, and
// of nothing else (an admission, a store failure).
func TestRefused(t *testing.T) {
	cat := testCatalog(t)
	st := memstore.New()
	var got []refusal
	a := quota.New(quota.Config{Store: st, Catalog: cat, Clock: clock.NewFake(noon),
		Refused: func(tenant, alias string, code errcat.Code) { got = append(got, refusal{tenant, alias, code}) }})
	ten := tenant("acme", map[string]auth.Quota{"lm-4-scout": {RequestsPerDay: 1}, "lm-4-scout-cloudB": {RequestsPerDay: 1}})
	ctx := t.Context()
	for _, alias := range []string{"lm-4-scout", "lm-4-scout", "lm-4-scout-cloudB", "lm-4-scout-cloudB", "lm-4-scout-local"} {
		tk, _ := a.Admit(ctx, ten, lookup(t, cat, alias), 10)
		tk.Settle(ctx, 1)
	}
	st.FailNext(errors.New("disk on fire"))
	if _, err := a.Admit(ctx, ten, lookup(t, cat, "lm-4-scout"), 10); errcat.CodeOf(err) != errcat.StorageError {
		t.Fatalf("Admit over a failing store: %v, want storage_error", err)
	}
	want := []refusal{
		{"acme", "lm-4-scout", errcat.ModelQuotaExhausted},
		{"acme", "lm-4-scout-cloudB", errcat.CloudBDailyQuotaExhausted},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refusals mismatch (-want +got):\n%s", diff)
	}
}
