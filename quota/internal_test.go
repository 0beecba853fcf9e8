package quota

import (
	"fmt"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
)

var scout = &upstream.ModelInfo{Alias: "lm-4-scout", Kind: upstream.KindChat,
	Backends: []upstream.BackendInfo{{Provider: upstream.ProviderLocal}}}

// TestRolloverDropsPastDays checks that the first Admit of a new day deletes
// the counters of every tenant of past days, not only its own, and keeps the
// new day's, also those another Accountant wrote.
func TestRolloverDropsPastDays(t *testing.T) {
	fc := clock.NewFake(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	st := memstore.New()
	a, other := New(Config{Store: st, Clock: fc}), New(Config{Store: st, Clock: fc})
	q := map[string]auth.Quota{scout.Alias: {RequestsPerDay: 10}}
	admit := func(a *Accountant, tenant string) {
		t.Helper()
		if _, err := a.Admit(t.Context(), &auth.Tenant{ID: tenant, Quotas: q}, scout, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1000 {
		admit(a, fmt.Sprint("tenant-", i))
	}
	if got := counters(t, st); got != 1000 {
		t.Fatalf("%d counters on day one, want 1000", got)
	}
	fc.Advance(24 * time.Hour)
	admit(other, "tenant-1")
	admit(a, "tenant-0")
	if got := counters(t, st); got != 2 {
		t.Errorf("%d counters after the rollover, want 2", got)
	}
}

// counters returns the number of counters in the store.
func counters(t *testing.T, st store.Store) int {
	t.Helper()
	n, err := store.ViewValue(t.Context(), st, func(tx store.Tx) (int, error) {
		n := 0
		err := tx.Scan(bucketCounters, nil, false, func(_, _ []byte) (bool, error) { n++; return true, nil })
		return n, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDayKeysSortByDay: the purge relies on day keys sorting as the days do,
// also across 1970 (the sign of the day number).
func TestDayKeysSortByDay(t *testing.T) {
	days := []int64{-20000, -1, 0, 1, 20241}
	for i := 1; i < len(days); i++ {
		lo, hi := counterKey(days[i-1], "\xff\xff", "\xff"), counterKey(days[i], "", "")
		if string(lo) >= string(hi) {
			t.Errorf("key of day %d sorts after the key of day %d", days[i-1], days[i])
		}
	}
}
