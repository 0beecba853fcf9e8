package quota

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
)

// DefaultReservationTTL is the lifetime of a reservation whose ticket is never
// ended: longer than the upstream's default total time-out (600 s, which
// bounds a whole call, answer included), with time to spare for storing the
// turn and settling.
const DefaultReservationTTL = 15 * time.Minute

// Config configures an Accountant.
type Config struct {
	// Store holds the counters (bucket quota/counters). It must not be nil.
	// Accountants over one store (replicas on one database, or a gateway
	// restarted on its file) share the budgets.
	Store store.Store
	// Clock gives the time. Nil means clock.Wall.
	Clock clock.Clock
	// Catalog is the model catalog available_fallbacks is chosen from,
	// typically the router's status view (upstream.Router.Catalog) so that a
	// backend without a configured URL does not count as usable. Nil lists no
	// fallbacks. New reads it once and keeps nothing of it.
	Catalog *upstream.Catalog
	// Logger receives the tickets that could not be ended (a store failure)
	// and those ended after their reservation expired. Nil means
	// slog.Default().
	Logger *slog.Logger
	// ReservationTTL is how long a reservation holds budget when its ticket
	// is neither settled nor cancelled (the replica that admitted the request
	// died). It must be longer than any request takes from admission to its
	// end, so it should exceed the upstream's total time-out. Zero or
	// negative means DefaultReservationTTL.
	ReservationTTL time.Duration
	// Refused, when not nil, is called once for each request Admit refuses
	// for want of budget, with the tenant's ID, the alias and the code of the
	// refusal (model_quota_exhausted or cloudB_daily_quota_exhausted), after
	// the transaction: the gateway counts refusals in its metrics. A store
	// failure is not a refusal. It runs on the caller's goroutine and must
	// not block. Nil calls nothing.
	Refused func(tenantID, alias string, code errcat.Code)
}

// Accountant keeps the daily counters of every tenant and alias with a budget
// in a store.Store. It is safe for concurrent use. Create it with New; the
// zero value is not usable.
type Accountant struct {
	st         store.Store
	clock      clock.Clock
	log        *slog.Logger
	ttl        time.Duration
	refused    func(tenantID, alias string, code errcat.Code)
	candidates []candidate  // possible available_fallbacks, in catalog order
	latest     atomic.Int64 // latest UTC day seen: a clock stepping back keeps it
	purged     atomic.Int64 // the day before which this Accountant deleted the counters
	purging    atomic.Bool  // a purge runs
}

// candidate is a chat alias with a usable backend that is not on cloudB.
type candidate struct {
	alias, family string
}

// Usage is a snapshot of one counter.
type Usage struct {
	Requests int64 // requests admitted today
	Tokens   int64 // tokens charged by settled requests
	Reserved int64 // tokens reserved by requests in flight (unexpired)
}

// New returns an Accountant over cfg. It panics when cfg.Store is nil (a
// wiring bug, not a run-time condition).
func New(cfg Config) *Accountant {
	if cfg.Store == nil {
		panic("quota.New: Config.Store is nil")
	}
	a := &Accountant{st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, ttl: cfg.ReservationTTL, refused: cfg.Refused}
	if a.clock == nil {
		a.clock = clock.Wall{}
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	if a.ttl <= 0 {
		a.ttl = DefaultReservationTTL
	}
	if cat := cfg.Catalog; cat != nil {
		for i := range cat.Models {
			m := &cat.Models[i]
			if m.Kind == upstream.KindChat && servesOffCloudB(m) {
				a.candidates = append(a.candidates, candidate{alias: m.Alias, family: m.Family})
			}
		}
	}
	return a
}

// Admit counts one request of tenant t for model m and reserves reserve tokens
// (the request's max_tokens plus its prompt estimate; a negative value counts as
// 0) against t's budget for m.Alias, in one store transaction.
//
// When a is nil (no quotas), or t has no budget for the alias, Admit returns
// (nil, nil) without touching the store or allocating; the nil *Ticket's
// methods do nothing. When the request fits, it returns a ticket that the
// caller must Settle or Cancel once the upstream call ends. When it does not
// fit, nothing is counted and the error is an *errcat.Error:
// cloudB_daily_quota_exhausted for an alias pinned to cloudB,
// model_quota_exhausted otherwise (see the package documentation). When the
// store fails, nothing is counted and the error is storage_error: a budget
// that cannot be read admits nothing.
func (a *Accountant) Admit(ctx context.Context, t *auth.Tenant, m *upstream.ModelInfo, reserve int64) (*Ticket, error) {
	if a == nil || t == nil || m == nil {
		return nil, nil
	}
	q, ok := t.Quotas[m.Alias]
	if !ok || (q.TokensPerDay <= 0 && q.RequestsPerDay <= 0) {
		return nil, nil
	}
	now := a.clock.Now()
	day := a.today(now)
	a.purge(ctx, day)
	tk := &Ticket{a: a, key: counterKey(day, t.ID, m.Alias), id: rand.Text(),
		tenant: t.ID, alias: m.Alias, reserved: max(reserve, 0)}
	h := hold{ID: tk.id, Tokens: tk.reserved, Expires: now.Add(a.ttl).UnixNano()}
	err := a.st.Batch(ctx, func(tx store.Tx) error {
		rec, _, err := readRecord(tx, tk.key)
		if err != nil {
			return err
		}
		rec.dropExpired(now.UnixNano())
		if !rec.fits(q, h.Tokens) {
			return a.refusal(tx, t, m, q, &rec, h.Tokens, now, day)
		}
		rec.Requests++
		rec.Holds = append(rec.Holds, h)
		return store.PutJSON(tx, bucketCounters, tk.key, rec)
	})
	if err != nil {
		// A refusal is the *errcat.Error fn returned; anything else is the store's.
		err = errcat.FromStore(fmt.Errorf("quota.Admit: tenant %q alias %q: %w", t.ID, m.Alias, err))
		if code := errcat.CodeOf(err); a.refused != nil && (code == errcat.ModelQuotaExhausted || code == errcat.CloudBDailyQuotaExhausted) {
			a.refused(t.ID, m.Alias, code)
		}
		return nil, err
	}
	return tk, nil
}

// Usage returns today's counter of the tenant with ID tenantID for alias, zero
// when there is none; expired reservations are not counted. It is meant for
// diagnostics and tests.
func (a *Accountant) Usage(ctx context.Context, tenantID, alias string) (Usage, error) {
	now := a.clock.Now()
	key := counterKey(a.today(now), tenantID, alias)
	rec, err := store.ViewValue(ctx, a.st, func(tx store.Tx) (record, error) {
		rec, _, err := readRecord(tx, key)
		return rec, err
	})
	if err != nil {
		return Usage{}, fmt.Errorf("quota.Usage: %w", err)
	}
	rec.dropExpired(now.UnixNano())
	return Usage{Requests: rec.Requests, Tokens: rec.Tokens, Reserved: rec.reserved()}, nil
}

// today returns the UTC day of now, or the latest day this Accountant saw
// when that is later: a clock that steps back does not bring back a past day,
// whose counters may be deleted already.
func (a *Accountant) today(now time.Time) int64 {
	day := clock.Day(now)
	for {
		last := a.latest.Load()
		if day <= last {
			return last
		}
		if a.latest.CompareAndSwap(last, day) {
			return day
		}
	}
}

// purge deletes the counters of the days before day the first time this
// Accountant sees day (after a start, that is its first admission), so that
// the bucket holds about one day of counters. One caller purges while the
// others go on; a purge that fails is logged and tried again by a later
// admission (it loses nothing: past days' counters are never read).
func (a *Accountant) purge(ctx context.Context, day int64) {
	if day <= a.purged.Load() || !a.purging.CompareAndSwap(false, true) {
		return
	}
	defer a.purging.Store(false)
	err := a.st.Update(ctx, func(tx store.Tx) error { return deletePast(tx, day) })
	if err != nil {
		a.log.LogAttrs(ctx, slog.LevelWarn, "quota: past days' counters not deleted",
			slog.Int64("day", day), slog.String("error", redact.Error(err)))
		return
	}
	a.purged.Store(max(a.purged.Load(), day)) // only the purger stores
}

// untilNextDay returns the time from now to the 00:00 UTC that ends day.
func untilNextDay(now time.Time, day int64) time.Duration {
	return clock.DayStart(day + 1).Sub(now)
}
