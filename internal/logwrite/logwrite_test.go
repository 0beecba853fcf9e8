package logwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recorder is the file under a Writer: it keeps each write apart, and, with
// gate set, holds every write until the gate is closed, announcing it on
// started first.
type recorder struct {
	mu      sync.Mutex
	writes  []string
	gate    chan struct{}
	started chan struct{}
	err     error
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.gate != nil {
		r.started <- struct{}{}
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, string(p))
	return len(p), r.err
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.writes, "")
}

func gated() *recorder {
	return &recorder{gate: make(chan struct{}), started: make(chan struct{}, 1000)}
}

func line(i int) string { return fmt.Sprintf("line %d\n", i) }

func TestWriterGathersWhatArrivesDuringAWrite(t *testing.T) {
	rec := gated()
	w := New(rec)
	w.Write([]byte(line(0)))
	<-rec.started // the first line is being written, alone
	var want strings.Builder
	for i := 1; i <= 99; i++ {
		w.Write([]byte(line(i)))
		want.WriteString(line(i))
	}
	close(rec.gate)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{line(0), want.String()}, rec.writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

// TestWriterLingersAfterAWrite: after a write the Writer waits for the
// linger before the next, and the lines that came meanwhile go out in one
// write; a line after the linger goes out at once, and Close does not wait
// for the linger.
func TestWriterLingersAfterAWrite(t *testing.T) {
	rec := &recorder{}
	lingering := make(chan chan time.Time, 1)
	w := start(rec, func() <-chan time.Time {
		c := make(chan time.Time)
		lingering <- c
		return c
	})
	w.Write([]byte(line(0)))
	c := <-lingering // line 0 is written, and the goroutine waits
	var batch strings.Builder
	for i := 1; i <= 9; i++ {
		w.Write([]byte(line(i)))
		batch.WriteString(line(i))
	}
	if diff := cmp.Diff([]string{line(0)}, rec.list()); diff != "" {
		t.Errorf("writes while lingering (-want +got):\n%s", diff)
	}
	close(c)
	close(<-lingering) // lines 1-9 are written
	w.Write([]byte(line(10)))
	<-lingering // line 10 went out without waiting for another linger
	w.Write([]byte(line(11)))
	if err := w.Close(); err != nil { // while lingering
		t.Fatal(err)
	}
	want := []string{line(0), batch.String(), line(10), line(11)}
	if diff := cmp.Diff(want, rec.list()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes...)
}

func TestWriterKeepsEveryLineWholeAndInOrder(t *testing.T) {
	const goroutines, lines = 8, 500
	rec := &recorder{}
	w := New(rec)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(w, "g%d %d %s\n", g, i, strings.Repeat("x", i%300))
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, goroutines)
	for _, l := range strings.Split(strings.TrimSuffix(rec.all(), "\n"), "\n") {
		var g, i int
		if _, err := fmt.Sscanf(l, "g%d %d ", &g, &i); err != nil || g < 0 || g >= goroutines {
			t.Fatalf("line %q: %v", l, err)
		}
		if i != next[g] || l != fmt.Sprintf("g%d %d %s", g, i, strings.Repeat("x", i%300)) {
			t.Fatalf("line %q: want line %d of g%d, whole", l, next[g], g)
		}
		next[g]++
	}
	for g, n := range next {
		if n != lines {
			t.Errorf("g%d: %d lines, want %d", g, n, lines)
		}
	}
}

func TestWriterClose(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		wantErr bool
	}{
		{name: "writes what is queued"},
		{name: "returns the file's error", err: errors.New("disk full"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{err: tt.err}
			w := New(rec)
			for i := range 10 {
				w.Write([]byte(line(i)))
			}
			err := w.Close()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Close: %v, want an error: %v", err, tt.wantErr)
			}
			if err := w.Close(); (err != nil) != tt.wantErr {
				t.Errorf("second Close: %v", err)
			}
			w.Write([]byte("after\n")) // straight to the file
			var want strings.Builder
			for i := range 10 {
				want.WriteString(line(i))
			}
			want.WriteString("after\n")
			if got := rec.all(); got != want.String() {
				t.Errorf("written %q, want %q", got, want.String())
			}
		})
	}
}

// TestWriterWaitsForASlowFile: a file that does not take its writes holds
// back Writes once MaxPending bytes are queued, rather than the Writer
// growing without bound.
func TestWriterWaitsForASlowFile(t *testing.T) {
	rec := gated()
	w := New(rec)
	w.Write([]byte("first\n"))
	<-rec.started
	chunk := strings.Repeat("y", 4095) + "\n"
	const chunks = MaxPending/4096 + 10
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for range chunks {
			w.Write([]byte(chunk))
		}
	}()
	for !w.held() {
		select {
		case <-finished:
			t.Fatal("every Write returned while the file took nothing")
		default:
			runtime.Gosched()
		}
	}
	if q := w.queued(); q > MaxPending || q < MaxPending-len(chunk) {
		t.Errorf("%d bytes queued while a Write waits, want MaxPending less at most a line", q)
	}
	close(rec.gate)
	<-finished
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.all(), "first\n"+strings.Repeat(chunk, chunks); got != want {
		t.Errorf("written %d bytes, want %d", len(got), len(want))
	}
}

// held reports whether a Write waits for room.
func (w *Writer) held() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waiting > 0
}

func (w *Writer) queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

func TestLog(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{AddSource: true, Level: slog.LevelInfo}))
	ctx := context.Background()
	Log(ctx, l, slog.LevelDebug, "hidden", slog.String("a", "b"))
	Log(ctx, l, slog.LevelWarn, "request", slog.String("request_id", "req_1"), slog.Int("status", 502))
	got := buf.String()
	for _, want := range []string{`"level":"WARN"`, `"msg":"request"`, `"request_id":"req_1"`, `"status":502`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s: no %s", got, want)
		}
	}
	if strings.Contains(got, "hidden") || strings.Contains(got, "source") || strings.Count(got, "\n") != 1 {
		t.Errorf("want one line, the warning, without a source: %s", got)
	}
}

// BenchmarkLogLine is a request's log line through slog's JSON handler from
// parallel goroutines to a file: written straight to it, a write system call
// each, and through a Writer.
func BenchmarkLogLine(b *testing.B) {
	for _, via := range []string{"file", "writer"} {
		b.Run(via, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var out io.Writer = f
			if via == "writer" {
				w := New(f)
				defer w.Close()
				out = w
			}
			l := slog.New(slog.NewJSONHandler(out, nil))
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					Log(ctx, l, slog.LevelInfo, "request", slog.String("request_id", "req_2amksemc8dhej"),
						slog.String("tenant", "bench"), slog.String("method", "POST"), slog.String("route", "/v1/chat/completions"),
						slog.Int("status", 200), slog.Float64("duration_ms", 0.412), slog.Int64("bytes", 294))
				}
			})
		})
	}
}
