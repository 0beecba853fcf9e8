package sseread_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/chatgw/gateway/internal/sseread"
	"github.com/chatgw/gateway/internal/testkit"
	sse "github.com/tmaxmax/go-sse"
)

// readAll reads every event of r with Next, and the error that ended it.
func readAll(r io.Reader, max int) ([]sseread.Event, error) {
	return read(sseread.NewReader(r, max).Next)
}

// borrowAll is readAll with Borrow, each event copied before the next read.
func borrowAll(r io.Reader, max int) ([]sseread.Event, error) {
	return read(sseread.NewReader(r, max).Borrow)
}

// read calls next until it fails, copying each event at once.
func read(next func() (sseread.Event, error)) ([]sseread.Event, error) {
	var evs []sseread.Event
	for {
		ev, err := next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, sseread.Event{Type: strings.Clone(ev.Type), Data: strings.Clone(ev.Data)})
	}
}

// readFuncs are Next and Borrow, which return the same events.
var readFuncs = map[string]func(io.Reader, int) ([]sseread.Event, error){"Next": readAll, "Borrow": borrowAll}

// readers are the ways a stream arrives: at once, a byte at a time, and with
// its last bytes beside io.EOF.
var readers = map[string]func(string) io.Reader{
	"whole":    func(s string) io.Reader { return strings.NewReader(s) },
	"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
	"data+EOF": func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
}

func TestNext(t *testing.T) {
	big := strings.Repeat("x", 3000)
	for _, tc := range []struct {
		name, in string
		want     []sseread.Event
	}{
		{"openai chunks", "data: {\"a\":1}\n\ndata: [DONE]\n\n",
			[]sseread.Event{{Data: `{"a":1}`}, {Data: "[DONE]"}}},
		{"named event", "event: gw.notice\ndata: x\n\n", []sseread.Event{{Type: "gw.notice", Data: "x"}}},
		{"data lines joined", "data: a\ndata: b\ndata:c\n\n", []sseread.Event{{Data: "a\nb\nc"}}},
		{"CRLF", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", []sseread.Event{{Data: "a\nb"}, {Data: "c"}}},
		{"CR", "data: a\rdata: b\r\rdata: c\r\r", []sseread.Event{{Data: "a\nb"}, {Data: "c"}}},
		{"CR at end of input", "data: a\r", []sseread.Event{{Data: "a"}}},
		{"comments and unknown fields", ": ping\nid: 7\nretry: 10\nfoo: bar\ndata: a\n\n: bye\n\n",
			[]sseread.Event{{Data: "a"}}},
		{"no data: not returned", "event: x\n\nid: 1\n\ndata: a\n\n", []sseread.Event{{Data: "a"}}},
		{"empty data is data", "data\n\ndata:\n\n", []sseread.Event{{}, {}}},
		{"one space only is dropped", "data:  two\n\n", []sseread.Event{{Data: " two"}}},
		{"colon in value", "data: {\"u\":\"a:b\"}\n\n", []sseread.Event{{Data: `{"u":"a:b"}`}}},
		{"last event without blank line", "data: a\n\ndata: b", []sseread.Event{{Data: "a"}, {Data: "b"}}},
		{"byte order mark", "\xEF\xBB\xBFdata: a\n\n", []sseread.Event{{Data: "a"}}},
		{"a later BOM is data", "data: a\n\ndata: \xEF\xBB\xBFb\n\n",
			[]sseread.Event{{Data: "a"}, {Data: "\xEF\xBB\xBFb"}}},
		{"blank lines before", "\n\n\ndata: a\n\n", []sseread.Event{{Data: "a"}}},
		{"events larger than the first buffer", "data: " + big + "\n\ndata: b\n\n",
			[]sseread.Event{{Data: big}, {Data: "b"}}},
		{"event type of the last field", "event: a\nevent: b\ndata: x\n\n", []sseread.Event{{Type: "b", Data: "x"}}},
		{"empty input", "", nil},
	} {
		for how, wrap := range readers {
			for name, readAll := range readFuncs {
				t.Run(tc.name+"/"+how+"/"+name, func(t *testing.T) {
					got, err := readAll(wrap(tc.in), 1<<20)
					if err != io.EOF {
						t.Fatalf("error %v, want io.EOF", err)
					}
					testkit.Diff(t, "events", tc.want, got)
				})
			}
		}
	}
}

func TestTooLarge(t *testing.T) {
	in := "data: a\n\ndata: " + strings.Repeat("x", 5000) + "\n\ndata: b\n\n"
	for how, wrap := range readers {
		for name, readAll := range readFuncs {
			t.Run(how+"/"+name, func(t *testing.T) {
				got, err := readAll(wrap(in), 4096)
				if !errors.Is(err, sseread.ErrTooLarge) {
					t.Fatalf("error %v, want ErrTooLarge", err)
				}
				testkit.Diff(t, "events before the error", []sseread.Event{{Data: "a"}}, got)
			})
		}
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	for name, readAll := range readFuncs {
		r := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
		got, err := readAll(r, 1<<20)
		if err != boom {
			t.Fatalf("%s: error %v, want %v", name, err, boom)
		}
		// The unfinished event is returned before the error, as at io.EOF.
		testkit.Diff(t, name+" events", []sseread.Event{{Data: "a"}, {Data: "b"}}, got)
	}
	rd := sseread.NewReader(iotest.ErrReader(boom), 10)
	for range 2 {
		if _, err := rd.Next(); err != boom {
			t.Fatalf("Next after the error: %v, want it again", err)
		}
	}
}

// TestAllocations pins what the reader is for: once the buffer is there, one
// allocation per event, the data string, and none with Borrow.
func TestAllocations(t *testing.T) {
	event := "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"hello\"}}]}\n\n"
	rd := sseread.NewReader(&repeat{event: event}, 1<<20)
	for _, tc := range []struct {
		name string
		next func() (sseread.Event, error)
		want float64
	}{{"Next", rd.Next, 1}, {"Borrow", rd.Borrow, 0}} {
		tc.next()
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := tc.next(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != tc.want {
			t.Errorf("%s: %v allocations per event, want %v", tc.name, allocs, tc.want)
		}
	}
}

// repeat is an endless stream of one event, a few events a read.
type repeat struct {
	event string
	at    int
}

func (r *repeat) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.event[r.at:])
		n += c
		r.at = (r.at + c) % len(r.event)
	}
	return n, nil
}

func BenchmarkNext(b *testing.B) {
	src := &repeat{event: "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello there\"}}]}\n\n"}
	rd := sseread.NewReader(src, 1<<20)
	b.ReportAllocs()
	b.SetBytes(int64(len(src.event)))
	for b.Loop() {
		if _, err := rd.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzNext checks the reader against go-sse's on any input: the same events
// with data, in the same order, however the input is cut into reads.
func FuzzNext(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "event: e\r\ndata: x\r\ndata: y\r\n\r\n", "data: a\rdata: b\r\r",
		"\xEF\xBB\xBFdata: a\n\n", ": c\nid: 1\ndata\n\n", "data: a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var want []sseread.Event
		for ev, err := range sse.Read(strings.NewReader(in), &sse.ReadConfig{MaxEventSize: 1 << 20}) {
			if err != nil {
				t.Skip("go-sse refuses it:", err)
			}
			if ev.Data != "" {
				want = append(want, sseread.Event{Type: ev.Type, Data: ev.Data})
			}
		}
		for how, wrap := range readers {
			for name, readAll := range readFuncs {
				got, err := readAll(wrap(in), 1<<20)
				if err != io.EOF {
					t.Fatalf("%s, %s: error %v", how, name, err)
				}
				var nonEmpty []sseread.Event
				for _, ev := range got {
					if ev.Data != "" {
						nonEmpty = append(nonEmpty, ev)
					}
				}
				testkit.Diff(t, how+", "+name, want, nonEmpty)
			}
		}
	})
}

// TestBeforeRead: the hook runs before every read of the underlying reader,
// so between events that arrived in one read it does not run.
func TestBeforeRead(t *testing.T) {
	in := "data: a\n\ndata: b\n\ndata: c\n\n"
	var log []string
	rd := sseread.NewReader(iotest.HalfReader(strings.NewReader(in)), 1<<20)
	rd.SetBeforeRead(func() { log = append(log, "read") })
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		log = append(log, ev.Data)
	}
	// HalfReader gives half of each buffer: 256 bytes, the whole stream, then EOF.
	testkit.Diff(t, "reads and events", []string{"read", "a", "b", "c", "read"}, log)
}

// TestReadsFollowTheStream: a burst of events is taken in few reads (the
// buffer grows to 4 KiB while reads fill it), and a slow stream, one event a
// read, never grows it (no allocation but the event's data).
func TestReadsFollowTheStream(t *testing.T) {
	event := "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"hello\"}}]}\n\n"
	reads := 0
	rd := sseread.NewReader(&repeat{event: event}, 1<<20)
	rd.SetBeforeRead(func() { reads++ })
	const events = 1000
	for range events {
		if _, err := rd.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if most := events*len(event)/4096 + 4; reads > most {
		t.Errorf("%d reads for a burst of %d events, want at most %d", reads, events, most)
	}

	slow := sseread.NewReader(&oneEach{event: event}, 1<<20)
	slow.Next()
	if allocs := testing.AllocsPerRun(100, func() { slow.Next() }); allocs != 1 {
		t.Errorf("%v allocations per event of a slow stream, want 1", allocs)
	}
}

// oneEach is a stream that brings one event per read.
type oneEach struct{ event string }

func (o *oneEach) Read(p []byte) (int, error) { return copy(p, o.event), nil }

// sizes is a stream that brings what it is asked for of a burst of events,
// and notes how much each read asked for.
type sizes struct {
	repeat
	asked []int
}

func (s *sizes) Read(p []byte) (int, error) {
	s.asked = append(s.asked, len(p))
	return s.repeat.Read(p)
}

// TestBufferSizes: a read that fills the 512-byte buffer grows it to 4 KiB
// for the next read at once, so that the rest of a burst comes in one read
// (a relay flushes before each read); a stream that never fills 512 bytes
// keeps them.
func TestBufferSizes(t *testing.T) {
	event := "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"hello\"}}]}\n\n"
	burst := &sizes{repeat: repeat{event: event}}
	rd := sseread.NewReader(burst, 1<<20)
	for range 4096/len(event) + 1 {
		if _, err := rd.Next(); err != nil {
			t.Fatal(err)
		}
	}
	// The second read fills a 4 KiB buffer behind the part of an event the
	// first one left.
	testkit.Diff(t, "read sizes of a burst", []int{512, 4096 - 512%len(event)}, burst.asked[:2])

	var asked []int
	slow := sseread.NewReader(readFunc(func(p []byte) (int, error) {
		asked = append(asked, len(p))
		return copy(p, event), nil
	}), 1<<20)
	for range 3 {
		if _, err := slow.Next(); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Diff(t, "read sizes of a slow stream", []int{512, 512, 512}, asked)
}

// readFunc is an io.Reader of its function.
type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

// TestDrain: after the event a relay stops at, Drain discards the rest of
// the input up to its limit, without the before-read function; Next then
// returns how the input ended, or ErrDrained when the limit came first.
func TestDrain(t *testing.T) {
	boom := errors.New("boom")
	const done = "data: a\n\ndata: [DONE]\n\n"
	tests := []struct {
		name    string
		rest    string
		end     error // what the input ends with after rest
		wantErr error
	}{
		{"the end follows", "", io.EOF, io.EOF},
		{"events and comments follow", ": bye\n\ndata: b\n\n", io.EOF, io.EOF},
		{"more than the limit follows", strings.Repeat(": x\n", 1024), io.EOF, sseread.ErrDrained},
		{"a read error follows", "", boom, boom},
	}
	for _, tt := range tests {
		for name, reader := range readers {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				rd := sseread.NewReader(io.MultiReader(reader(done+tt.rest), iotest.ErrReader(tt.end)), 1<<10)
				for _, want := range []string{"a", "[DONE]"} {
					if ev, err := rd.Borrow(); err != nil || ev.Data != want {
						t.Fatalf("Borrow() = %+v, %v; want %q", ev, err, want)
					}
				}
				waits := 0
				rd.SetBeforeRead(func() { waits++ })
				rd.Drain(1 << 10)
				if !rd.Ended() || waits != 0 {
					t.Errorf("after Drain: Ended() = %v, %d calls of the before-read function; want ended, none", rd.Ended(), waits)
				}
				if _, err := rd.Next(); !errors.Is(err, tt.wantErr) {
					t.Errorf("Next after Drain: %v, want %v", err, tt.wantErr)
				}
			})
		}
	}
}
