package usage

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/chatgw/gateway/internal/lease"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/chatgw/gateway/store"
)

// purgeBatch bounds the records one purge transaction deletes.
const purgeBatch = 1000

// leasesPerInterval is the default purge lease in purge intervals: the
// holder keeps it across a round that ran late.
const leasesPerInterval = 3

// startPurger starts the purger: a lease.Worker running purge every
// interval (no goroutine when every is negative or the records are kept for
// ever: rounds then run only by hand).
func (s *Service) startPurger(every, leaseTTL time.Duration) {
	if every == 0 {
		every = DefaultPurgeInterval
	}
	if leaseTTL <= 0 {
		leaseTTL = leasesPerInterval * max(every, DefaultFlushInterval)
	}
	purgeLease := &lease.Named{Store: s.st, Clock: s.clock, Bucket: bucketLease, Key: leaseKey,
		Holder: lease.NewHolder(), TTL: leaseTTL}
	if s.retention < 0 {
		every = -1
	}
	s.purger = lease.StartWorker(purgeLease, every, s.purge, func(ctx context.Context, err error) {
		s.log.LogAttrs(ctx, slog.LevelWarn, "usage purge lease not taken", slog.String("error", redact.Error(err)))
	})
}

// stopPurger stops the purge goroutine and releases the lease if this
// Service held it, so that another replica takes over at its next round.
func (s *Service) stopPurger() {
	if err := s.purger.Stop(); err != nil {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, "usage purge lease not released", slog.String("error", redact.Error(err)))
	}
}

// purge is a round of the purger, run while this Service holds the purge
// lease: of several replicas over one store, one purges. Failures are logged
// and retried next round.
func (s *Service) purge(ctx context.Context) {
	n, err := s.PurgeExpired(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		s.log.LogAttrs(ctx, slog.LevelWarn, "usage purge failed", slog.Int("purged", n), slog.String("error", redact.Error(err)))
	case n > 0:
		s.log.LogAttrs(ctx, slog.LevelInfo, "expired usage records purged", slog.Int("purged", n))
	}
}

// PurgeExpired deletes every record older than Config.Retention (from
// Clock.Now()), tenant by tenant from each one's oldest record, in
// transactions of at most 1000 records, and forgets the tenants left without
// records. It returns the number of records deleted; a store failure is
// returned wrapped, with the count deleted before it. With a negative
// Retention it deletes nothing.
func (s *Service) PurgeExpired(ctx context.Context) (int, error) {
	if s.retention < 0 {
		return 0, nil
	}
	cutoff := s.clock.Now().Add(-s.retention).UnixNano()
	tenants, err := store.ViewValue(ctx, s.st, func(tx store.Tx) ([][]byte, error) {
		var ts [][]byte
		err := tx.Scan(bucketTenants, nil, false, func(k, _ []byte) (bool, error) {
			ts = append(ts, bytes.Clone(k))
			return true, nil
		})
		return ts, err
	})
	if err != nil {
		return 0, fmt.Errorf("usage.PurgeExpired: %w", err)
	}
	total := 0
	for _, t := range tenants {
		for {
			n, more, err := s.purgeTenant(ctx, t, cutoff)
			total += n
			if err != nil {
				return total, fmt.Errorf("usage.PurgeExpired: %w", err)
			}
			if !more {
				break
			}
		}
	}
	return total, nil
}

// purgeTenant deletes up to purgeBatch records of the tenant whose key
// prefix is prefix, older than cutoff (unix nanos), in one transaction; when
// none is left at all it removes the tenant from usage/tenants. more reports
// that the batch was full, so more may be expired.
func (s *Service) purgeTenant(ctx context.Context, prefix []byte, cutoff int64) (n int, more bool, err error) {
	err = s.st.Update(ctx, func(tx store.Tx) error {
		n, more = 0, false // the callback may run more than once
		var keys [][]byte
		live := false
		err := tx.Scan(bucketRecords, prefix, false, func(k, _ []byte) (bool, error) {
			_, at, err := keyTime(k[len(prefix):])
			if err != nil {
				return false, fmt.Errorf("record key: %w", err)
			}
			if at >= cutoff {
				live = true
				return false, nil
			}
			keys = append(keys, bytes.Clone(k))
			return len(keys) < purgeBatch, nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := tx.Delete(bucketRecords, k); err != nil {
				return err
			}
		}
		n, more = len(keys), len(keys) == purgeBatch
		if !live && !more {
			return tx.Delete(bucketTenants, prefix)
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return n, more, nil
}
