package quota_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store/boltstore"
	"github.com/chatgw/gateway/store/memstore"
)

var errDisk = errors.New("disk on fire")

// TestReplicasShareBudget: two Accountants over one store, as two replicas
// over one database, count against one budget.
func TestReplicasShareBudget(t *testing.T) {
	st, fc, cat := memstore.New(), clock.NewFake(noon), testCatalog(t)
	one, two := newOver(t, st, fc, cat), newOver(t, st, fc, cat)
	m := lookup(t, cat, "lm-4-scout")
	acme := tenant("acme", map[string]auth.Quota{m.Alias: {TokensPerDay: 100, RequestsPerDay: 3}})
	ctx := t.Context()

	first, err := one.Admit(ctx, acme, m, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := two.Admit(ctx, acme, m, 41); errcat.CodeOf(err) != errcat.ModelQuotaExhausted {
		t.Fatalf("second replica over the shared tokens: Admit = %v; want model_quota_exhausted", err)
	}
	second, err := two.Admit(ctx, acme, m, 40)
	if err != nil {
		t.Fatal(err)
	}
	first.Settle(ctx, 10) // frees 50 for both
	if _, err := two.Admit(ctx, acme, m, 50); err != nil {
		t.Fatalf("Admit after the other replica settled = %v; want a ticket", err)
	}
	if _, err := one.Admit(ctx, acme, m, 0); errcat.CodeOf(err) != errcat.ModelQuotaExhausted {
		t.Fatalf("fourth request of three across replicas: Admit = %v; want model_quota_exhausted", err)
	}
	second.Cancel(ctx)
	want := quota.Usage{Requests: 3, Tokens: 10, Reserved: 50}
	for i, a := range []*quota.Accountant{one, two} {
		if diff := cmp.Diff(want, usage(t, a, "acme", m.Alias)); diff != "" {
			t.Errorf("replica %d: Usage mismatch (-want +got):\n%s", i+1, diff)
		}
	}
}

// TestReservationExpires: a ticket that is never ended (its replica died)
// stops holding budget ReservationTTL after its admission; the request stays
// counted, and a late Settle charges nothing and is logged.
func TestReservationExpires(t *testing.T) {
	const ttl = 20 * time.Minute
	st, fc, cat := memstore.New(), clock.NewFake(noon), testCatalog(t)
	var logs bytes.Buffer
	dead := quota.New(quota.Config{Store: st, Clock: fc, Catalog: cat, ReservationTTL: ttl,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	alive := newOver(t, st, fc, cat)
	m := lookup(t, cat, "lm-4-scout")
	acme := tenant("acme", map[string]auth.Quota{m.Alias: {TokensPerDay: 100}})
	ctx := t.Context()

	orphan, err := dead.Admit(ctx, acme, m, 100)
	if err != nil {
		t.Fatal(err)
	}
	fc.Advance(ttl - time.Nanosecond)
	if _, err := alive.Admit(ctx, acme, m, 1); errcat.CodeOf(err) != errcat.ModelQuotaExhausted {
		t.Fatalf("Admit before the reservation expired = %v; want model_quota_exhausted", err)
	}
	fc.Advance(time.Nanosecond)
	if diff := cmp.Diff(quota.Usage{Requests: 1}, usage(t, alive, "acme", m.Alias)); diff != "" {
		t.Errorf("Usage at expiry mismatch (-want +got):\n%s", diff)
	}
	tk, err := alive.Admit(ctx, acme, m, 100)
	if err != nil {
		t.Fatalf("Admit once the reservation expired = %v; want a ticket", err)
	}
	tk.Settle(ctx, 30)

	orphan.Settle(ctx, 100) // its hold was dropped by the admission
	if diff := cmp.Diff(quota.Usage{Requests: 2, Tokens: 30}, usage(t, alive, "acme", m.Alias)); diff != "" {
		t.Errorf("Usage after the late Settle mismatch (-want +got):\n%s", diff)
	}
	line := logLine(t, &logs)
	if line["level"] != "WARN" || line["tenant"] != "acme" || line["alias"] != m.Alias || line["op"] != "settle" {
		t.Errorf("log line of the late Settle = %v; want a WARN naming acme, %s and settle", line, m.Alias)
	}
}

// TestDefaultReservationTTL: a zero ReservationTTL is DefaultReservationTTL.
func TestDefaultReservationTTL(t *testing.T) {
	a, fc, cat := newAccountant(t, noon)
	m := lookup(t, cat, "lm-4-scout")
	acme := tenant("acme", map[string]auth.Quota{m.Alias: {TokensPerDay: 100}})
	if _, err := a.Admit(t.Context(), acme, m, 100); err != nil {
		t.Fatal(err)
	}
	fc.Advance(quota.DefaultReservationTTL - time.Second)
	if got := usage(t, a, "acme", m.Alias).Reserved; got != 100 {
		t.Errorf("reserved %d a second before the default TTL, want 100", got)
	}
	fc.Advance(time.Second)
	if got := usage(t, a, "acme", m.Alias).Reserved; got != 0 {
		t.Errorf("reserved %d at the default TTL, want 0", got)
	}
}

// TestAdmitStorageFailure: a budget that cannot be read admits nothing
// (500 storage_error) and counts nothing.
func TestAdmitStorageFailure(t *testing.T) {
	st, cat := memstore.New(), testCatalog(t)
	a := newOver(t, st, clock.NewFake(noon), cat)
	for _, alias := range []string{"lm-4-scout", pinned} {
		m := lookup(t, cat, alias)
		acme := tenant("acme", map[string]auth.Quota{alias: {RequestsPerDay: 5}})
		st.FailWith(func(op string) error {
			if op == "View" {
				return nil
			}
			return errDisk
		})
		tk, err := a.Admit(t.Context(), acme, m, 10)
		st.FailWith(nil)
		if e := errcat.As(err); tk != nil || e.Code != errcat.StorageError || errcat.Status(err) != 500 || !errors.Is(err, errDisk) {
			t.Errorf("%s: Admit with a failing store = %v, %v; want nil, storage_error (500) wrapping the failure", alias, tk, err)
		}
		if diff := cmp.Diff(quota.Usage{}, usage(t, a, "acme", alias)); diff != "" {
			t.Errorf("%s: Usage after the failure mismatch (-want +got):\n%s", alias, diff)
		}
	}
}

// TestPurgeFailureDoesNotRefuse: deleting past days is housekeeping; its
// failure is logged and the admission goes on.
func TestPurgeFailureDoesNotRefuse(t *testing.T) {
	st, cat := memstore.New(), testCatalog(t)
	var logs bytes.Buffer
	a := quota.New(quota.Config{Store: st, Clock: clock.NewFake(noon), Catalog: cat, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	m := lookup(t, cat, "lm-4-scout")
	st.FailNext(errDisk) // the first admission's purge
	if _, err := a.Admit(t.Context(), tenant("acme", map[string]auth.Quota{m.Alias: {RequestsPerDay: 5}}), m, 10); err != nil {
		t.Fatalf("Admit with a failing purge = %v; want a ticket", err)
	}
	if line := logLine(t, &logs); line["level"] != "WARN" || line["error"] == nil {
		t.Errorf("log line of the failed purge = %v; want a WARN with the error", line)
	}
}

// TestEndRetriesOnceThenLogs: Settle and Cancel try a failed write once more,
// then log the ticket's ids; a client that went away does not stop them.
func TestEndRetriesOnceThenLogs(t *testing.T) {
	tests := []struct {
		name     string
		failures int
		end      func(ctx context.Context, tk *quota.Ticket)
		want     quota.Usage
		logged   bool
	}{
		{"settle", 0, func(ctx context.Context, tk *quota.Ticket) { tk.Settle(ctx, 7) }, quota.Usage{Requests: 1, Tokens: 7}, false},
		{"settle after one failure", 1, func(ctx context.Context, tk *quota.Ticket) { tk.Settle(ctx, 7) }, quota.Usage{Requests: 1, Tokens: 7}, false},
		{"cancel after one failure", 1, func(ctx context.Context, tk *quota.Ticket) { tk.Cancel(ctx) }, quota.Usage{Requests: 1}, false},
		{"settle after two failures", 2, func(ctx context.Context, tk *quota.Ticket) { tk.Settle(ctx, 7) }, quota.Usage{Requests: 1, Reserved: 10}, true},
		{"cancel after two failures", 2, func(ctx context.Context, tk *quota.Ticket) { tk.Cancel(ctx) }, quota.Usage{Requests: 1, Reserved: 10}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, cat := memstore.New(), testCatalog(t)
			var logs bytes.Buffer
			a := quota.New(quota.Config{Store: st, Clock: clock.NewFake(noon), Catalog: cat, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			m := lookup(t, cat, "lm-4-scout")
			tk, err := a.Admit(t.Context(), tenant("acme", map[string]auth.Quota{m.Alias: {TokensPerDay: 100}}), m, 10)
			if err != nil {
				t.Fatal(err)
			}
			for range tc.failures {
				st.FailNext(errDisk)
			}
			gone, cancel := context.WithCancel(t.Context())
			cancel() // the client went away
			tc.end(gone, tk)
			if diff := cmp.Diff(tc.want, usage(t, a, "acme", m.Alias)); diff != "" {
				t.Errorf("Usage mismatch (-want +got):\n%s", diff)
			}
			if !tc.logged {
				if logs.Len() > 0 {
					t.Errorf("unexpected log: %s", &logs)
				}
				return
			}
			line := logLine(t, &logs)
			if line["level"] != "ERROR" || line["tenant"] != "acme" || line["ticket"] == "" || line["error"] == nil {
				t.Errorf("log line = %v; want an ERROR with the tenant, the ticket id and the error", line)
			}
		})
	}
}

// TestRestartKeepsCounts: a new Accountant on the store of an old one (a
// restart) sees the day's counts and ends the old one's tickets; on bbolt,
// across closing and reopening the file.
func TestRestartKeepsCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.db")
	fc, cat := clock.NewFake(noon), testCatalog(t)
	m := lookup(t, cat, "lm-4-scout")
	acme := tenant("acme", map[string]auth.Quota{m.Alias: {TokensPerDay: 100, RequestsPerDay: 2}})
	ctx := t.Context()

	db, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	before := newOver(t, db, fc, cat)
	if _, err := before.Admit(ctx, acme, m, 60); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	after := newOver(t, db, fc, cat)
	if diff := cmp.Diff(quota.Usage{Requests: 1, Reserved: 60}, usage(t, after, "acme", m.Alias)); diff != "" {
		t.Errorf("Usage on reopening mismatch (-want +got):\n%s", diff)
	}
	if _, err := after.Admit(ctx, acme, m, 41); errcat.CodeOf(err) != errcat.ModelQuotaExhausted {
		t.Errorf("Admit over the budget kept across the restart = %v; want model_quota_exhausted", err)
	}
	tk, err := after.Admit(ctx, acme, m, 40)
	if err != nil {
		t.Fatal(err)
	}
	tk.Settle(ctx, 20)
	if _, err := after.Admit(ctx, acme, m, 0); errcat.CodeOf(err) != errcat.ModelQuotaExhausted {
		t.Errorf("third request of two: Admit = %v; want model_quota_exhausted", err)
	}
	// The old process's ticket died with it; its hold expires.
	if diff := cmp.Diff(quota.Usage{Requests: 2, Tokens: 20, Reserved: 60}, usage(t, after, "acme", m.Alias)); diff != "" {
		t.Errorf("Usage after the restart mismatch (-want +got):\n%s", diff)
	}
	fc.Advance(quota.DefaultReservationTTL)
	if diff := cmp.Diff(quota.Usage{Requests: 2, Tokens: 20}, usage(t, after, "acme", m.Alias)); diff != "" {
		t.Errorf("Usage once the old hold expired mismatch (-want +got):\n%s", diff)
	}
}

// logLine decodes the one JSON log line in logs.
func logLine(t *testing.T, logs *bytes.Buffer) map[string]any {
	t.Helper()
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("log %q: want one JSON line: %v", logs, err)
	}
	return line
}
