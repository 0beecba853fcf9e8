package usage

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/chatgw/gateway/internal/redact"
)

// writeTimeout bounds one write transaction of the writer, so that a store
// that hangs does not stop it: the records wait for the next round.
const writeTimeout = 30 * time.Second

// logEvery is the least time between two log lines about dropped records.
const logEvery = time.Second

// runWriter writes the buffered records every interval, and as soon as a
// batch is full, until ctx ends.
func (s *Service) runWriter(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.flush(ctx, true)
		case <-s.wake:
			// Full batches only: under load every transaction carries
			// MaxBatch records, and the rest waits for the next wake or tick.
			_ = s.flush(ctx, false)
		}
	}
}

// Flush writes the records buffered now, in transactions of at most
// Config.MaxBatch records, and returns the first store error; the records it
// could not write stay buffered, oldest first, for the next round. The
// writer calls it every Config.FlushInterval; tests and embedders may call
// it to write at once. It also logs, at most once a second, the records
// dropped since the last such line.
func (s *Service) Flush(ctx context.Context) error { return s.flush(ctx, true) }

// flush is Flush, of every record buffered (all) or of the full batches
// only.
func (s *Service) flush(ctx context.Context, all bool) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	defer s.logDropped()

	s.mu.Lock()
	batch := s.buf
	if n := len(batch) / s.maxBatch * s.maxBatch; !all && n < len(batch) {
		batch = batch[:n:n]
		s.buf = append(s.spare[:0], s.buf[n:]...)
	} else {
		s.buf = s.spare[:0]
	}
	s.spare = nil
	s.inFlight = len(batch)
	s.mu.Unlock()

	var err error
	done := 0
	for done < len(batch) && err == nil {
		n := min(len(batch)-done, s.maxBatch)
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err = s.write(wctx, batch[done:done+n])
		cancel()
		if err == nil {
			done += n
		}
	}
	s.noteWrite(ctx, err, len(batch)-done)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight = 0
	if rest := batch[done:]; len(rest) > 0 {
		// Oldest first: the records that failed go before those that came
		// meanwhile. Record counted them in inFlight, so the bound holds.
		s.buf = append(append(make([]pending, 0, len(rest)+len(s.buf)), rest...), s.buf...)
	}
	clear(batch) // let the strings go
	if s.spare == nil {
		s.spare = batch[:0]
	}
	return err
}

// noteWrite logs the first failure of a run of failures and the recovery,
// not every round of an outage; a write cut by ctx (Close stopping the
// writer, whose records Close then writes) is no failure. s.flushMu is held.
func (s *Service) noteWrite(ctx context.Context, err error, waiting int) {
	switch {
	case err != nil && ctx.Err() != nil:
	case err != nil && !s.failing:
		s.failing = true
		s.log.LogAttrs(context.Background(), slog.LevelWarn, "usage records not written; they wait in the buffer",
			slog.Int("waiting", waiting), slog.String("error", redact.Error(err)))
	case err == nil && s.failing:
		s.failing = false
		s.log.LogAttrs(context.Background(), slog.LevelInfo, "usage records written again")
	}
}

// logDropped logs the records dropped since the last line, at most once a
// second; s.flushMu is held.
func (s *Service) logDropped() {
	n := s.dropped.Load()
	now := s.clock.Now()
	if n == s.logged || (!s.loggedAt.IsZero() && now.Sub(s.loggedAt) < logEvery) {
		return
	}
	s.log.LogAttrs(context.Background(), slog.LevelWarn, "usage records dropped: the buffer is full",
		slog.Uint64("dropped", n-s.logged), slog.Uint64("dropped_total", n), slog.Int("max_buffered", s.maxBuffer))
	s.logged, s.loggedAt = n, now
}

// closeFlush writes what is buffered once the writer stopped and Record
// drops; what is left when ctx ends or the store fails is dropped.
func (s *Service) closeFlush(ctx context.Context) error {
	var err error
	for s.Buffered() > 0 {
		if err = s.Flush(ctx); err != nil {
			break
		}
	}
	s.mu.Lock()
	lost := len(s.buf)
	s.buf = nil
	s.mu.Unlock()
	if lost == 0 {
		return nil
	}
	s.dropped.Add(uint64(lost))
	s.log.LogAttrs(ctx, slog.LevelError, "usage records lost at close: the store could not take them",
		slog.Int("lost", lost), slog.String("error", redact.Error(err)))
	return fmt.Errorf("usage.Close: %d records not written: %w", lost, err)
}
