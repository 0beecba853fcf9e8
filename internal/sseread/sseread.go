// Package sseread reads the server-sent events of an upstream's stream with
// one small buffer per stream.
//
// A gateway holds thousands of streams open, each waiting for its next event
// most of the time, so what a stream's reader holds while it waits is paid
// thousands of times. go-sse's reader (which the tests still use, as an
// independent check of what the gateway writes) keeps a 4 KiB scanner buffer
// per stream and allocates two strings per event. This reader waits with
// 512 bytes, grows to 4 KiB once a read fills it (events come faster than
// it reads them) and, for an event that still does not fit, on up to the
// limit it is given; it shrinks back after, and allocates one string per
// event, its data, or none with Borrow.
//
// It follows the event-stream format: lines end in CRLF, LF or CR; a line
// starting with a colon is a comment; "data" lines are joined with "\n";
// "event" names the event; a blank line ends the event; a byte order mark
// at the start is skipped. Events without a data line are not returned; the
// id and retry fields, which a relay has no use for, are ignored. At the end
// of input an event missing its closing blank line is still returned (as
// go-sse's Read does), then io.EOF.
package sseread

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// Event is one event of a stream.
type Event struct {
	// Type is the event's "event" field, or "" for an unnamed event.
	Type string
	// Data is the event's data lines joined by "\n".
	Data string
}

// ErrTooLarge is wrapped by the error of an event larger than the Reader's
// limit.
var ErrTooLarge = errors.New("sseread: event too large")

// ErrDrained is wrapped by the error of a Reader that Drain stopped before
// the input's end.
var ErrDrained = errors.New("sseread: drained")

const (
	// minBuffer is a new Reader's buffer: a chat completion chunk fits.
	minBuffer = 512
	// fastBuffer is the largest buffer a Reader grows to for a stream whose
	// events come faster than it reads them.
	fastBuffer = 4 << 10
	// keepBuffer is the largest buffer a Reader keeps once the event that
	// needed it is consumed.
	keepBuffer = 16 << 10
)

// Reader reads events from an io.Reader. It is not safe for concurrent use.
type Reader struct {
	r     io.Reader
	max   int
	buf   []byte // buf[start:end] is read and not consumed
	start int
	end   int
	err   error  // the read error that ended the input, returned once buf is consumed
	wait  func() // called before each read of r (SetBeforeRead)
	// What the last read brought: its bytes, and whether it filled buf.
	last     int
	lastFull bool
	begun    bool // the byte order mark check is done
	// The event being read: lines from buf[start:] are parsed up to scan,
	// which stays relative to start when buf is compacted.
	scan            int
	typeAt, typeEnd int    // the last event field's value in buf, relative to start, or -1
	dataAt, dataEnd int    // the first data line's value, relative to start, or -1
	data            []byte // the joined data lines when there is more than one
	lines           int    // data lines of the event
}

// NewReader returns a Reader of r whose events are at most max bytes long
// (the event's lines as sent, terminators included).
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{r: r, max: max, typeAt: -1, dataAt: -1}
}

// SetBeforeRead has f called before each read of the underlying reader by
// Next and Borrow, which may wait for the upstream's next bytes: a writer
// that relays events can flush there, once for all the events that arrived
// together, instead of once per event. Drain does not call it.
func (r *Reader) SetBeforeRead(f func()) { r.wait = f }

// Next returns the next event with data. Its error is io.EOF at the end of
// input, an error wrapping ErrTooLarge for an event over the limit, or the
// underlying reader's error; after an error Next returns it again.
func (r *Reader) Next() (Event, error) { return r.next(false) }

// Borrow is Next without copies: the event's Type and Data point into the
// Reader's buffer, valid only until the next call of Next or Borrow, which
// may overwrite them. A caller that keeps any part of them longer (a
// substring too) must copy it, with strings.Clone or a conversion to
// []byte. A relay that writes each event out before it reads the next then
// allocates nothing per event: a thousand slow streams make no garbage while
// they wait.
func (r *Reader) Borrow() (Event, error) { return r.next(true) }

// Ended reports whether the input has ended: a read returned an error (io.EOF
// at its end), which Next and Borrow return once the buffered events are
// consumed.
func (r *Reader) Ended() bool { return r.err != nil }

// Drain ends the reading: it discards what is buffered and reads the rest
// of the input, at most limit bytes. Next and Borrow then return the
// input's error (io.EOF when it ended within the limit), or an error
// wrapping ErrDrained when the limit came first. A relay drains after a
// stream's last event because an HTTP client puts a connection back in its
// pool only once its body was read to the end: the terminator of a chunked
// body often arrives just after the last event. Drain does not call the
// SetBeforeRead function: nothing it reads is relayed, and a relay that
// holds events can write them with its last write, after the drain.
func (r *Reader) Drain(limit int64) {
	r.start, r.end = 0, 0
	r.scan, r.lines, r.typeAt, r.dataAt = 0, 0, -1, -1
	if r.err == nil {
		_, err := io.CopyN(io.Discard, r.r, limit)
		if err == nil {
			err = fmt.Errorf("%w after %d bytes", ErrDrained, limit)
		}
		r.err = err
	}
}

// next returns the next event with data, borrowed or copied.
func (r *Reader) next(borrow bool) (Event, error) {
	for {
		line, term, ok := r.line()
		if !ok {
			err := r.fill()
			if err == nil {
				continue
			}
			// At the end of input a last CR ends its line.
			if line, term, ok = r.line(); !ok {
				return r.atEnd(err, borrow)
			}
		}
		if line == r.scan { // a blank line ends the event
			r.scan = term
			if ev, ok := r.dispatch(borrow); ok {
				return ev, nil
			}
			continue
		}
		r.field(line, term)
	}
}

// line finds the end of the line at scan: it returns the offsets (relative to
// start) of the line's end and of the next line's start. ok is false when the
// line's end has not been read yet, including a CR that is the last byte
// read, which may be the first half of a CRLF.
func (r *Reader) line() (end, next int, ok bool) {
	if !r.begun {
		return 0, 0, false // the byte order mark check needs three bytes
	}
	rest := r.buf[r.start+r.scan : r.end]
	lf := bytes.IndexByte(rest, '\n')
	upTo := rest
	if lf >= 0 {
		upTo = rest[:lf]
	}
	if cr := bytes.IndexByte(upTo, '\r'); cr >= 0 {
		switch {
		case cr+1 < len(rest) && rest[cr+1] == '\n':
			return r.scan + cr, r.scan + cr + 2, true
		case cr+1 < len(rest) || r.err != nil:
			return r.scan + cr, r.scan + cr + 1, true
		}
		return 0, 0, false
	}
	if lf < 0 {
		return 0, 0, false
	}
	return r.scan + lf, r.scan + lf + 1, true
}

// field takes in the line buf[start+scan : start+end] and moves scan to next.
func (r *Reader) field(end, next int) {
	at := r.scan
	r.scan = next
	line := r.buf[r.start+at : r.start+end]
	if line[0] == ':' {
		return // a comment
	}
	name, value := line, len(line)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], i+1
		if value < len(line) && line[value] == ' ' {
			value++
		}
	}
	switch string(name) { // no allocation: the compiler compares in place
	case "data":
		r.addData(at+value, end)
	case "event":
		r.typeAt, r.typeEnd = at+value, end
	}
}

// addData adds the data line buf[start+at : start+end] to the event.
func (r *Reader) addData(at, end int) {
	r.lines++
	if r.lines == 1 {
		r.dataAt, r.dataEnd = at, end
		return
	}
	if r.lines == 2 {
		r.data = append(r.data[:0], r.buf[r.start+r.dataAt:r.start+r.dataEnd]...)
	}
	r.data = append(r.data, '\n')
	r.data = append(r.data, r.buf[r.start+at:r.start+end]...)
}

// dispatch ends the event whose lines end at scan: it returns it when it has
// data, its strings borrowed from buf and data or copied, and consumes its
// bytes.
func (r *Reader) dispatch(borrow bool) (ev Event, ok bool) {
	str := copied
	if borrow {
		str = borrowed
	}
	if r.lines > 0 {
		ok = true
		if r.typeAt >= 0 {
			ev.Type = str(r.buf[r.start+r.typeAt : r.start+r.typeEnd])
		}
		if r.lines == 1 {
			ev.Data = str(r.buf[r.start+r.dataAt : r.start+r.dataEnd])
		} else {
			ev.Data = str(r.data)
		}
	}
	r.start += r.scan
	r.scan, r.lines, r.typeAt, r.dataAt = 0, 0, -1, -1
	if cap(r.data) > keepBuffer {
		r.data = nil
	}
	return ev, ok
}

func copied(b []byte) string { return string(b) }

// borrowed is b as a string without a copy. Borrow's contract (the string
// is not used after the next read) is what makes it safe: the bytes are not
// changed while the string is in use.
func borrowed(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// atEnd answers Next once no more input comes: the event that was being
// read, if it has data, then err. An event over the limit is not returned
// cut.
func (r *Reader) atEnd(err error, borrow bool) (Event, error) {
	if errors.Is(err, ErrTooLarge) {
		return Event{}, err
	}
	if r.scan < r.end-r.start { // a last line without its line end
		r.field(r.end-r.start, r.end-r.start)
	}
	if ev, ok := r.dispatch(borrow); ok {
		return ev, nil
	}
	return Event{}, err
}

// fill reads more input after the event being read, compacting or growing
// buf as needed; it returns the error that ends the input once one arrived.
func (r *Reader) fill() error {
	if r.err != nil {
		return r.err
	}
	if r.start == r.end {
		r.start, r.end = 0, 0
	}
	if r.end == len(r.buf) || r.end == 0 {
		if err := r.makeRoom(); err != nil {
			r.err = err
			return err
		}
	}
	if r.wait != nil {
		r.wait()
	}
	n, err := r.r.Read(r.buf[r.end:])
	r.last, r.lastFull = n, r.end+n == len(r.buf)
	r.end += n
	if !r.begun && (r.end >= 3 || err != nil) {
		r.skipBOM()
	}
	if err != nil {
		r.err = err
		if n > 0 {
			return nil // take in what arrived with the error first
		}
	}
	return err
}

// makeRoom gives buf space after end, sized from what the last read said
// of the upstream: one that filled buf says more is waiting, and buf then
// grows at once to 4 KiB, which takes the rest of a burst in one read (and
// the relay flushes it in one write; doubling from 512 bytes took a /v1
// stream of 4 KiB one read and one write more); one that brought less than
// a small buf says the stream is slow, and a slow stream, which spends its
// time waiting, waits with a small buf. An event that fills a buf of 4 KiB
// or more doubles it, up to max; a buf an outsized event needed goes once
// it is consumed. What is held moves to the front.
func (r *Reader) makeRoom() error {
	size, held := len(r.buf), r.end-r.start
	switch {
	case size > 0 && held == size && size >= r.max:
		return fmt.Errorf("%w: over %d bytes", ErrTooLarge, r.max)
	case held == 0 && (size == 0 || size > keepBuffer || size > minBuffer && r.last < minBuffer):
		size = minBuffer
	case r.lastFull && size < fastBuffer:
		size = min(fastBuffer, r.max)
	case held == size:
		size = min(2*size, r.max)
	}
	if size == len(r.buf) {
		r.end = copy(r.buf, r.buf[r.start:r.end])
	} else {
		b := make([]byte, size)
		r.end = copy(b, r.buf[r.start:r.end])
		r.buf = b
	}
	r.start = 0
	return nil
}

// skipBOM drops a byte order mark at the start of the stream; no line is
// parsed before it ran, so the stream starts at buf[0].
func (r *Reader) skipBOM() {
	r.begun = true
	if bytes.HasPrefix(r.buf[:r.end], []byte("\xEF\xBB\xBF")) {
		r.start = 3
	}
}
