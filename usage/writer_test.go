package usage_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/usage"
)

var errDisk = errors.New("disk on fire")

// chat is a chat record of acme's user at t0 with in and out tokens.
func chat(user string, in, out int64) usage.Record {
	return usage.Record{Time: t0, Tenant: "acme", User: user, Kind: usage.KindChat, Alias: "lm-4-scout",
		Backend: "local", Status: 200, InputTokens: in, OutputTokens: out}
}

// stored returns the tenant's totals of today (one group), read from the
// store by a Service of its own.
func (e *env) stored(t *testing.T) usage.Group {
	t.Helper()
	gs, err := e.svc.Totals(context.Background(), usage.Query{Tenant: "acme", From: t0.Add(-time.Hour), To: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) == 0 {
		return usage.Group{}
	}
	return gs[0]
}

// flushed is what the store took by the end of a test: its write
// transactions in all, and the totals of the records it holds.
type flushed struct {
	Transactions, Requests, InputTokens, OutputTokens int64
}

// checkFlushed flushes e's Service and compares what the store took with
// want.
func (e *env) checkFlushed(t *testing.T, want flushed) {
	t.Helper()
	if err := e.svc.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	g := e.stored(t)
	testkit.Diff(t, "flushed", want, flushed{e.st.updates.Load(), g.Requests, g.InputTokens, g.OutputTokens})
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWriterBatches: many records are written in few transactions, one per
// MaxBatch records; the writer writes as soon as a batch is full, and not
// before (its interval is an hour here).
func TestWriterBatches(t *testing.T) {
	e := newEnv(t, usage.Config{MaxBatch: 100})
	for range 99 {
		e.svc.Record(chat("alice", 1, 2))
	}
	time.Sleep(20 * time.Millisecond)
	if n := e.st.updates.Load(); n != 0 {
		t.Fatalf("%d transactions before a batch was full", n)
	}
	e.svc.Record(chat("alice", 1, 2)) // the 100th wakes the writer
	waitFor(t, "the full batch to be written", func() bool { return e.svc.Buffered() == 0 })
	if n := e.st.updates.Load(); n != 1 {
		t.Errorf("%d transactions for one batch, want 1", n)
	}

	// 1000 more: one transaction per 100, whoever writes them.
	for range 1000 {
		e.svc.Record(chat("alice", 1, 2))
	}
	e.checkFlushed(t, flushed{Transactions: 11, Requests: 1100, InputTokens: 1100, OutputTokens: 2200})
}

// TestFlushWritesOnceEach: Flush writes everything buffered in batches of
// MaxBatch, one transaction each.
func TestFlushWritesOnceEach(t *testing.T) {
	e := newEnv(t, usage.Config{MaxBatch: 1000})
	for i := range 2500 {
		e.svc.Record(chat(fmt.Sprint("u", i%7), 3, 4))
	}
	// The writer may have woken at 1000 and written that batch already.
	e.checkFlushed(t, flushed{Transactions: 3, Requests: 2500, InputTokens: 7500, OutputTokens: 10000})
}

// TestStoreFailing: while the store fails the records wait, oldest first, and
// are written once it recovers; Record never fails or waits meanwhile.
func TestStoreFailing(t *testing.T) {
	var logs testkit.Buffer
	e := newEnv(t, usage.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.st.FailWith(func(op string) error {
		if op == "View" {
			return nil
		}
		return errDisk
	})
	for i := range 10 {
		e.svc.Record(chat("alice", int64(i), 1))
	}
	for range 3 {
		if err := e.svc.Flush(context.Background()); !errors.Is(err, errDisk) {
			t.Fatalf("Flush with the store failing = %v", err)
		}
	}
	if n := e.svc.Buffered(); n != 10 {
		t.Errorf("%d records buffered while the store fails, want 10", n)
	}
	e.svc.Record(chat("alice", 100, 1)) // while it fails, more come
	if g := e.stored(t); g.Requests != 0 {
		t.Errorf("stored %+v while the store fails", g)
	}
	e.st.FailWith(nil)
	if err := e.svc.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g := e.stored(t); g.Requests != 11 || g.InputTokens != 145 || g.OutputTokens != 11 {
		t.Errorf("stored after recovery %+v, want 11 requests, 145 input and 11 output tokens", g)
	}
	if n, d := e.svc.Buffered(), e.svc.Dropped(); n != 0 || d != 0 {
		t.Errorf("after recovery: %d buffered, %d dropped", n, d)
	}
	// One line when the failures begin, one when they end: not one a round.
	if got := strings.Count(logs.String(), "usage records not written"); got != 1 {
		t.Errorf("%d failure lines, want 1:\n%s", got, logs.String())
	}
	if got := strings.Count(logs.String(), "usage records written again"); got != 1 {
		t.Errorf("%d recovery lines, want 1:\n%s", got, logs.String())
	}
	if strings.Contains(logs.String(), "alice") {
		t.Errorf("a log line names a user:\n%s", logs.String())
	}
}

// TestOverflow: the buffer holds MaxBuffered records; what overflows is
// dropped, counted and logged at most once a second (the fake clock's).
func TestOverflow(t *testing.T) {
	var logs testkit.Buffer
	e := newEnv(t, usage.Config{MaxBuffered: 5, MaxBatch: 100, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.st.FailNext(errDisk)
	for range 8 {
		e.svc.Record(chat("alice", 1, 1))
	}
	if d := e.svc.Dropped(); d != 3 {
		t.Errorf("Dropped = %d, want 3", d)
	}
	_ = e.svc.Flush(context.Background()) // fails: the 5 stay
	lines := func() int { return strings.Count(logs.String(), "usage records dropped") }
	if n := lines(); n != 1 || !strings.Contains(logs.String(), "dropped=3") {
		t.Errorf("%d dropped lines, want 1 saying 3:\n%s", n, logs.String())
	}
	// Records that wait for a failed write still count against the bound.
	e.svc.Record(chat("alice", 1, 1))
	if d := e.svc.Dropped(); d != 4 {
		t.Errorf("Dropped = %d, want 4", d)
	}
	if err := e.svc.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := lines(); n != 1 {
		t.Errorf("a second dropped line within a second:\n%s", logs.String())
	}
	e.clk.Advance(time.Second)
	if err := e.svc.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := lines(); n != 2 || !strings.Contains(logs.String(), "dropped=1 dropped_total=4") {
		t.Errorf("%d dropped lines, want 2, the second saying 1 of 4:\n%s", n, logs.String())
	}
	if g := e.stored(t); g.Requests != 5 {
		t.Errorf("stored %d records, want the 5 buffered", g.Requests)
	}
}

// TestCloseFlushes: Close writes what is buffered; records after Close are
// dropped.
func TestCloseFlushes(t *testing.T) {
	e := newEnv(t, usage.Config{})
	for range 42 {
		e.svc.Record(chat("alice", 2, 3))
	}
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if g := e.stored(t); g.Requests != 42 || g.InputTokens != 84 || g.OutputTokens != 126 {
		t.Errorf("stored after Close %+v", g)
	}
	e.svc.Record(chat("alice", 2, 3))
	if d := e.svc.Dropped(); d != 1 {
		t.Errorf("Dropped after a record after Close = %d, want 1", d)
	}
}

// TestCloseWithStoreDown: what Close cannot write is counted, logged and
// reported.
func TestCloseWithStoreDown(t *testing.T) {
	var logs testkit.Buffer
	e := newEnv(t, usage.Config{CloseTimeout: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.st.FailWith(func(string) error { return errDisk })
	for range 7 {
		e.svc.Record(chat("alice", 1, 1))
	}
	if err := e.svc.Close(); !errors.Is(err, errDisk) {
		t.Errorf("Close = %v, want the store's error", err)
	}
	if d := e.svc.Dropped(); d != 7 {
		t.Errorf("Dropped = %d, want 7", d)
	}
	if !strings.Contains(logs.String(), "lost=7") {
		t.Errorf("no log line of the 7 lost records:\n%s", logs.String())
	}
}

// TestRetriedWriteCountsOnce: a write whose commit was reported failed but
// happened is written again with the same keys: each record counts once.
func TestRetriedWriteCountsOnce(t *testing.T) {
	e := newEnv(t, usage.Config{})
	lying := &lyingStore{counting: e.st}
	s := e.start(t, usage.Config{Store: lying})
	lying.lies = 1
	for range 3 {
		s.Record(chat("alice", 5, 1))
	}
	if err := s.Flush(context.Background()); err == nil {
		t.Fatal("Flush after a commit reported failed = nil")
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g := e.stored(t); g.Requests != 3 || g.InputTokens != 15 {
		t.Errorf("stored %+v, want 3 requests and 15 input tokens", g)
	}
}

// lyingStore commits its next lies Updates and reports them failed, as a
// database connection lost during the commit does.
type lyingStore struct {
	*counting
	lies int
}

func (l *lyingStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	err := l.counting.Update(ctx, fn)
	if err == nil && l.lies > 0 {
		l.lies--
		return errors.New("connection lost during commit")
	}
	return err
}

// TestRecordConcurrent: requests record at once with the writer running
// (run with -race); every record is written exactly once.
func TestRecordConcurrent(t *testing.T) {
	e := newEnv(t, usage.Config{MaxBatch: 64, FlushInterval: time.Millisecond})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 500 {
				e.svc.Record(chat(fmt.Sprint("u", g), 1, 1))
			}
		})
	}
	wg.Wait()
	if err := e.svc.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g := e.stored(t); g.Requests != 4000 || g.InputTokens != 4000 {
		t.Errorf("stored %+v, want 4000 requests", g)
	}
}
