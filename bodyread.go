package gateway

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/chatgw/gateway/errcat"
)

// requestBody is a request body read against the clock: the whole body must
// arrive within the grace time plus what the minimum rate allows for the
// bytes read so far, or the read fails. Without it a client could hold a
// connection forever by never finishing its body, because net/http has no
// per-request body time-out that leaves streaming answers alone (its
// ReadTimeout also cancels the request once the answer streams longer).
//
// The deadline is the connection's read deadline, set through the server's
// ResponseWriter; it is cleared at the end of the body, so the server's own
// read of the next request (and its check for a client that went away during
// a long answer) has none.
type requestBody struct {
	rc       io.ReadCloser
	dl       deadliner
	start    time.Time
	grace    time.Duration
	minRate  int64 // bytes per second; 0: no rate, the grace alone
	read     int64
	deadline time.Time // the read deadline last set; zero before the first read
	eof      bool
}

// deadliner sets the read deadline of a request's connection (net/http's
// ResponseWriters and http.ResponseController have the method).
type deadliner interface {
	SetReadDeadline(time.Time) error
}

// deadlineOf returns what sets the read deadline of w's connection.
func deadlineOf(w http.ResponseWriter) deadliner {
	if d, ok := w.(deadliner); ok {
		return d
	}
	return http.NewResponseController(w)
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	b.extend()
	n, err := b.rc.Read(p)
	b.read += int64(n)
	switch {
	case err == io.EOF:
		b.eof = true
		_ = b.dl.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		return n, b.stalled()
	}
	return n, err
}

// extend moves the read deadline to what the bytes read so far allow (a
// deadline update is a cheap call into the runtime's poller, made once per
// Read; bodies are read in a few large Reads).
func (b *requestBody) extend() {
	if b.grace <= 0 {
		return // no body time-out configured
	}
	d := b.start.Add(b.grace)
	if b.minRate > 0 {
		d = d.Add(time.Duration(b.read * int64(time.Second) / b.minRate))
	}
	if !d.Equal(b.deadline) {
		b.deadline = d
		_ = b.dl.SetReadDeadline(d) // ErrNotSupported (a test's recorder): no deadline
	}
}

// stalled is the error of a body that did not arrive in time.
func (b *requestBody) stalled() error {
	if b.minRate <= 0 {
		return errcat.Newf(errcat.InvalidJSON, "", "The request body did not arrive in time: it must be sent within %s.", b.grace)
	}
	return errcat.Newf(errcat.InvalidJSON, "",
		"The request body did not arrive in time: it must be sent within %s plus one second per %d bytes.", b.grace, b.minRate)
}

func (b *requestBody) Close() error { return b.rc.Close() }

// abandon is called when the answer starts before the body was read to its
// end: the connection is closed after the answer (Connection: close), and the
// read deadline is set in the past so that net/http does not wait for the
// rest of the body first, as it does to reuse a connection. A request whose
// body is never read (a 401, a 429, a public route) thus never waits for it.
// (A body over the limit is different: net/http's MaxBytesReader tells the
// server, which then lingers before closing, so the client reads its 413.)
func (b *requestBody) abandon(h http.Header) {
	if b.eof {
		return
	}
	h.Set("Connection", "close")
	_ = b.dl.SetReadDeadline(time.Unix(1, 0))
}
