package quota

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/chatgw/gateway/internal/redact"
	"github.com/chatgw/gateway/store"
)

// endTimeout bounds each attempt to end a ticket: the caller's context is no
// longer cancelled by the client (see end), so this is what stops a store
// that hangs.
const endTimeout = 10 * time.Second

// Ticket is one admitted request's hold on its budget. The first call of Settle
// or Cancel ends it; later calls do nothing. A nil *Ticket (no budget for the
// alias) is valid and all its methods do nothing. A Ticket is safe for
// concurrent use.
type Ticket struct {
	a             *Accountant
	key           []byte // the counter of the day the request was admitted on
	id            string // the hold's id in that counter
	tenant, alias string // for log lines
	reserved      int64
	done          atomic.Bool
}

// Settle ends the ticket with the request's real usage: usedTokens (the
// upstream's usage.total_tokens) replaces the reservation, whether it is lower or
// higher. A negative usedTokens means the usage is unknown and charges the whole
// reservation. The request stays counted. See Cancel for ctx and failures.
func (t *Ticket) Settle(ctx context.Context, usedTokens int64) {
	if t == nil || !t.done.CompareAndSwap(false, true) {
		return
	}
	if usedTokens < 0 {
		usedTokens = t.reserved
	}
	t.end(ctx, "settle", usedTokens)
}

// Cancel ends the ticket of a request whose upstream call failed before any
// answer reached the client: the reservation is released and no tokens are
// charged, but the request stays counted against requests_per_day.
//
// Settle and Cancel write to the store even when ctx is cancelled (a client
// that went away still spent its budget): they keep ctx's values only. A
// failed write is tried once more, then logged with the ticket's ids; the
// reservation then lapses after the ReservationTTL.
func (t *Ticket) Cancel(ctx context.Context) {
	if t == nil || !t.done.CompareAndSwap(false, true) {
		return
	}
	t.end(ctx, "cancel", 0)
}

// endResult is what one transaction of end found.
type endResult struct {
	counter, hold bool // the day's counter exists; the ticket's hold was in it
}

// end removes the ticket's hold and charges used tokens, in one transaction.
// It is idempotent in the store: a hold that is gone (ended by an earlier
// attempt whose commit was reported failed, or expired) charges nothing, so
// the second attempt cannot charge twice.
func (t *Ticket) end(ctx context.Context, op string, used int64) {
	ctx = context.WithoutCancel(ctx)
	var err error
	for attempt := 1; attempt <= 2; attempt++ {
		var res endResult
		if res, err = t.endOnce(ctx, used); err == nil {
			if attempt == 1 && res.counter && !res.hold {
				t.logEnd(ctx, slog.LevelWarn, "quota: ticket ended after its reservation expired; usage not charged", op, used, nil)
			}
			return
		}
	}
	t.logEnd(ctx, slog.LevelError, "quota: ticket not ended; its reservation lapses after the reservation TTL", op, used, err)
}

// endOnce is one attempt of end, bounded by endTimeout.
func (t *Ticket) endOnce(ctx context.Context, used int64) (endResult, error) {
	ctx, cancel := context.WithTimeout(ctx, endTimeout)
	defer cancel()
	var res endResult
	err := t.a.st.Batch(ctx, func(tx store.Tx) error {
		rec, found, err := readRecord(tx, t.key)
		res = endResult{counter: found}
		if err != nil || !found {
			return err // no counter: its day was deleted, nothing to end
		}
		if res.hold = rec.end(t.id, used); !res.hold {
			return nil
		}
		return store.PutJSON(tx, bucketCounters, t.key, rec)
	})
	return res, err
}

// logEnd logs a ticket that did not end normally, with ids and counts only.
func (t *Ticket) logEnd(ctx context.Context, level slog.Level, msg, op string, used int64, err error) {
	attrs := []slog.Attr{
		slog.String("tenant", t.tenant), slog.String("alias", t.alias), slog.String("ticket", t.id),
		slog.String("op", op), slog.Int64("reserved_tokens", t.reserved), slog.Int64("used_tokens", used),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", redact.Error(err)))
	}
	t.a.log.LogAttrs(ctx, level, msg, attrs...)
}
