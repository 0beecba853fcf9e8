package quota

import (
	"fmt"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/upstream"
)

var scout = &upstream.ModelInfo{Alias: "lm-4-scout", Kind: upstream.KindChat,
	Backends: []upstream.BackendInfo{{Provider: upstream.ProviderLocal}}}

// TestNoQuotaTakesNoLock holds every shard's lock: an Admit that locked any
// of them would block.
func TestNoQuotaTakesNoLock(t *testing.T) {
	a := New(clock.NewFake(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)), nil)
	for i := range a.shards {
		a.shards[i].mu.Lock()
		defer a.shards[i].mu.Unlock()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk, err := a.Admit(&auth.Tenant{ID: "acme", Quotas: map[string]auth.Quota{"other": {RequestsPerDay: 1}}}, scout, 100)
		tk.Settle(10)
		tk.Cancel()
		if tk != nil || err != nil {
			t.Errorf("Admit = %v, %v; want nil, nil", tk, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Admit without a quota blocked on a shard lock")
	}
}

// TestRolloverDropsPastDays checks that the first Admit of a new day empties
// every shard, not only its own.
func TestRolloverDropsPastDays(t *testing.T) {
	fc := clock.NewFake(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	a := New(fc, nil)
	q := map[string]auth.Quota{scout.Alias: {RequestsPerDay: 10}}
	for i := range 1000 {
		if _, err := a.Admit(&auth.Tenant{ID: fmt.Sprint("tenant-", i), Quotas: q}, scout, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.counters(); got != 1000 {
		t.Fatalf("%d counters on day one, want 1000", got)
	}
	fc.Advance(24 * time.Hour)
	if _, err := a.Admit(&auth.Tenant{ID: "tenant-0", Quotas: q}, scout, 0); err != nil {
		t.Fatal(err)
	}
	if got := a.counters(); got != 1 {
		t.Errorf("%d counters after the rollover, want 1", got)
	}
}

// counters returns the number of counters over all shards.
func (a *Accountant) counters() int {
	n := 0
	for i := range a.shards {
		s := &a.shards[i]
		s.mu.Lock()
		n += len(s.counters)
		s.mu.Unlock()
	}
	return n
}

func TestDayOf(t *testing.T) {
	tests := []struct {
		at   time.Time
		want int64
	}{
		{time.Unix(0, 0), 0},
		{time.Unix(86399, 999_999_999), 0},
		{time.Unix(86400, 0), 1},
		{time.Unix(-1, 0), -1},
		{time.Unix(-86400, 0), -1},
		{time.Unix(-86401, 0), -2},
		{time.Date(2025, 6, 1, 23, 59, 59, 0, time.FixedZone("UTC-5", -5*3600)), 20241}, // 2025-06-02 04:59:59 UTC
	}
	for _, tc := range tests {
		if got := dayOf(tc.at); got != tc.want {
			t.Errorf("dayOf(%v) = %d, want %d", tc.at, got, tc.want)
		}
	}
}
