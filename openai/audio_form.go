package openai

import (
	"errors"
	"io"
	"mime/multipart"
	"sync/atomic"

	"github.com/chatgw/gateway/errcat"
)

// The identity rule holds for multipart bodies too: a user_id form field is
// 400 invalid_field (body.user_id), the end user being named by the GW-User-Id
// header only. The gateway's middleware checks JSON bodies; an upload is
// checked as it streams by, by formCheck.

var errUserIDField = errors.New("openai: user_id form field")

func userIDFieldError() error {
	return errcat.New(errcat.InvalidField, "body.user_id",
		"user_id is not accepted in a body; the end user is named by the GW-User-Id header.")
}

// formCheck passes an upload through and parses it on the side, in lockstep
// with the reads (through an io.Pipe), to find a user_id form field wherever
// it is without holding the upload. At such a field the stream fails, so the
// upstream never gets the whole upload. Syntax errors are left to the
// upstream.
type formCheck struct {
	r        io.Reader
	pw       *io.PipeWriter
	verdict  chan error // the scan's result, nil or errUserIDField; buffered
	rejected atomic.Bool
}

func newFormCheck(r io.Reader, boundary string) *formCheck {
	pr, pw := io.Pipe()
	c := &formCheck{r: r, pw: pw, verdict: make(chan error, 1)}
	go func() {
		err := scanForUserID(pr, boundary)
		c.verdict <- err
		if err != nil {
			pr.CloseWithError(err) // fails the stream's next write
			return
		}
		_, _ = io.Copy(io.Discard, pr) // an epilogue, or what follows a syntax error
	}()
	return c
}

// scanForUserID returns errUserIDField when r has a user_id part before its
// end or a syntax error, else nil.
func scanForUserID(r io.Reader, boundary string) error {
	mr := multipart.NewReader(r, boundary)
	for {
		part, err := mr.NextRawPart()
		if err != nil {
			return nil
		}
		if part.FormName() == "user_id" {
			return errUserIDField
		}
		if _, err := io.Copy(io.Discard, part); err != nil {
			return nil
		}
	}
}

// Read reads the upload and hands what it read to the scan first; it fails
// with errUserIDField once the scan found one.
func (c *formCheck) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		if _, werr := c.pw.Write(p[:n]); werr != nil {
			if errors.Is(werr, errUserIDField) {
				c.rejected.Store(true)
			}
			return 0, werr
		}
	}
	switch {
	case errors.Is(err, io.EOF):
		c.pw.Close()
	case err != nil:
		c.pw.CloseWithError(err)
	}
	return n, err
}

// found reports whether the upload has a user_id field among the bytes the
// upstream was sent. It ends the scan's input first: whatever the transport
// read is already in the pipe, so the verdict covers exactly what was
// forwarded, even when the upstream answered before the upload's end reached
// the scan. Call it once, after the upstream call returned.
func (c *formCheck) found() bool {
	if c.rejected.Load() {
		return true
	}
	c.pw.CloseWithError(errUploadStopped)
	return <-c.verdict != nil
}

// close ends the scan of an upload that was not read to its end.
func (c *formCheck) close() { c.pw.CloseWithError(errUploadStopped) }
