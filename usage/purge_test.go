package usage_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatgw/gateway/usage"
)

const day = 24 * time.Hour

// all returns the tenant's totals of every record the store holds.
func (e *env) all(t *testing.T, tenant string) usage.Group {
	t.Helper()
	gs, err := e.svc.Totals(context.Background(), usage.Query{Tenant: tenant, From: time.Unix(0, 0), To: t0.Add(365 * day)})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) == 0 {
		return usage.Group{}
	}
	return gs[0]
}

// TestPurgeExpired: records older than the retention go, tenant by tenant;
// younger ones stay, however many there are.
func TestPurgeExpired(t *testing.T) {
	e := newEnv(t, usage.Config{Retention: 90 * day})
	at := func(tenant string, ago time.Duration, in int64) usage.Record {
		r := chat("alice", in, 0)
		r.Tenant, r.Time = tenant, t0.Add(-ago)
		return r
	}
	var recs []usage.Record
	for i := range 2500 { // more than one purge transaction
		recs = append(recs, at("acme", 100*day+time.Duration(i)*time.Second, 1))
	}
	recs = append(recs,
		at("acme", 90*day+time.Nanosecond, 10), // just expired
		at("acme", 90*day, 100),                // exactly the retention: kept
		at("acme", 89*day, 1000),
		at("acme", 0, 10000),
		at("globex", 91*day, 1),
		at("initech", 95*day, 1), // a tenant with only expired records
	)
	e.record(recs...)

	n, err := e.svc.PurgeExpired(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != 2503 {
		t.Errorf("PurgeExpired deleted %d, want 2503", n)
	}
	if g := e.all(t, "acme"); g.Requests != 3 || g.InputTokens != 11100 {
		t.Errorf("acme after the purge: %+v, want the 3 records of 90 days or less", g)
	}
	for _, tenant := range []string{"globex", "initech"} {
		if g := e.all(t, tenant); g.Requests != 0 {
			t.Errorf("%s after the purge: %+v", tenant, g)
		}
	}
	if n, err := e.svc.PurgeExpired(context.Background()); n != 0 || err != nil {
		t.Errorf("second PurgeExpired = %d, %v", n, err)
	}

	e.clk.Advance(day) // the records of 90 and 89 days ago are 91 and 90 now
	if n, err := e.svc.PurgeExpired(context.Background()); n != 1 || err != nil {
		t.Errorf("PurgeExpired a day later = %d, %v; want 1", n, err)
	}
	// A tenant forgotten by the purge is purged again once it has records.
	e.record(at("initech", 91*day, 1), at("initech", 0, 2))
	if n, err := e.svc.PurgeExpired(context.Background()); n != 1 || err != nil {
		t.Errorf("PurgeExpired of a returning tenant = %d, %v; want 1", n, err)
	}
	if g := e.all(t, "initech"); g.Requests != 1 || g.InputTokens != 2 {
		t.Errorf("initech: %+v", g)
	}
}

// TestPurgeKeepsForever: a negative retention purges nothing.
func TestPurgeKeepsForever(t *testing.T) {
	e := newEnv(t, usage.Config{Retention: -1})
	r := chat("alice", 1, 1)
	r.Time = t0.Add(-1000 * day)
	e.record(r)
	if n, err := e.svc.PurgeExpired(context.Background()); n != 0 || err != nil {
		t.Errorf("PurgeExpired = %d, %v", n, err)
	}
	if g := e.all(t, "acme"); g.Requests != 1 {
		t.Errorf("stored %+v", g)
	}
}

// TestPurgerLease: of two Services over one store (two replicas), only the
// holder of the purge lease purges; the other takes over when the lease
// expires (its holder died) or is released (its holder closed).
func TestPurgerLease(t *testing.T) {
	e := newEnv(t, usage.Config{Retention: day, PurgeLease: 2 * time.Hour})
	a := e.svc
	b := e.start(t, usage.Config{Retention: day, PurgeLease: 2 * time.Hour})
	ctx := context.Background()
	expired := func() {
		r := chat("alice", 1, 1)
		r.Time = e.clk.Now().Add(-2 * day)
		e.record(r)
	}
	for _, step := range []struct {
		name    string
		expired bool          // one expired record first
		advance time.Duration // then the clock moves
		round   *usage.Service
		closeA  bool
		purged  bool
		stored  int64
	}{
		{name: "a takes the free lease", expired: true, round: a, purged: true},
		{name: "b does not purge while a holds it", expired: true, advance: time.Hour, round: b, stored: 1},
		{name: "a purges and renews", round: a, purged: true},
		{name: "a dies; b waits for its lease", expired: true, advance: time.Hour, round: b, stored: 1},
		{name: "b takes over at expiry", advance: time.Hour, round: b, purged: true},
		{name: "a, back, does not purge", expired: true, round: a, stored: 1},
		{name: "a closes, releasing nothing it does not hold; b purges", closeA: true, round: b, purged: true},
	} {
		if step.expired {
			expired()
		}
		e.clk.Advance(step.advance)
		if step.closeA {
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if got := usage.PurgeRound(ctx, step.round); got != step.purged {
			t.Errorf("%s: round purged %v, want %v", step.name, got, step.purged)
		}
		if g := e.all(t, "acme"); g.Requests != step.stored {
			t.Errorf("%s: %d records stored, want %d", step.name, g.Requests, step.stored)
		}
	}
	// b closes holding the lease: it releases it, and a new replica takes it
	// at once.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c := e.start(t, usage.Config{Retention: day, PurgeLease: 2 * time.Hour})
	if !usage.PurgeRound(ctx, c) {
		t.Error("the lease was not released by b's Close")
	}
}
