package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/redact"
	"go.opentelemetry.io/otel/trace"
)

// payload is a request body that can be sent to several backends, each time with
// that backend's router_alias as model.
type payload struct {
	data     []byte         // buffered body (Body, or a JSON BodyReader read fully)
	stream   *trackedReader // BodyReader of a non-JSON body, sent once
	json     bool           // data is a JSON object whose "model" is rewritten
	boundary string         // multipart/form-data boundary: the "model" field is rewritten
	sendAsIs bool           // any other media type
}

// newPayload prepares req's body. A JSON body that is not an object, or a
// multipart body without a boundary, is invalid_json.
func newPayload(req *Request) (*payload, error) {
	mt, params := "application/json", map[string]string(nil)
	if ct := req.ContentType; ct != "" && ct != mt {
		// Only what the gateway itself did not write as JSON is parsed:
		// ParseMediaType builds a map each time, and nearly every call is
		// a chat completion.
		var err error
		if mt, params, err = mime.ParseMediaType(ct); err != nil {
			return nil, errcat.New(errcat.InvalidJSON, "", "request content type is invalid")
		}
	}
	p := &payload{data: req.Body}
	switch {
	case mt == "application/json":
		p.json = true
		if req.BodyReader != nil {
			var err error
			if p.data, err = io.ReadAll(req.BodyReader); err != nil {
				return nil, errcat.Internal(err)
			}
		}
	case mt == "multipart/form-data":
		if p.boundary = params["boundary"]; p.boundary == "" {
			return nil, errcat.New(errcat.InvalidJSON, "", "multipart body without boundary")
		}
	default:
		p.sendAsIs = true
	}
	if req.BodyReader != nil && !p.json {
		p.stream = &trackedReader{r: req.BodyReader}
	}
	return p, nil
}

// retryable reports whether the body can still be sent to another backend: a
// streamed body cannot once any of it was read.
func (p *payload) retryable() bool {
	return p.stream == nil || !p.stream.used.Load()
}

// body returns the body for one attempt with model set to t's router_alias.
func (p *payload) body(t *target) (io.Reader, error) {
	if p.stream != nil {
		if p.boundary == "" {
			return p.stream, nil
		}
		return &lazyPipe{start: func(w *io.PipeWriter) {
			w.CloseWithError(invalidMultipart(rewriteMultipart(w, p.stream, p.boundary, t.routerAlias)))
		}}, nil
	}
	switch {
	case len(bytes.TrimSpace(p.data)) == 0 || p.sendAsIs:
		return bytes.NewReader(p.data), nil
	case p.json:
		b, err := rewriteJSONModel(p.data, t.quotedAlias)
		if err != nil {
			return nil, err
		}
		return bytes.NewReader(b), nil
	default:
		var buf bytes.Buffer
		if err := rewriteMultipart(&buf, bytes.NewReader(p.data), p.boundary, t.routerAlias); err != nil {
			return nil, invalidMultipart(err)
		}
		return bytes.NewReader(buf.Bytes()), nil
	}
}

// invalidMultipart is the invalid_json error of a multipart body whose model
// field could not be rewritten (nil for nil). A streamed body fails only while
// the transport sends it: Router.attempt finds this error in the transport's
// and answers it, rather than taking the failure for a connection error.
func invalidMultipart(err error) error {
	if err == nil {
		return nil
	}
	// mime/multipart quotes the client's lines in its errors: the cause keeps
	// what went wrong, not what was sent.
	return &errcat.Error{Code: errcat.InvalidJSON, Message: "request body is not valid multipart/form-data",
		Cause: redact.Opaque(err, redact.Quotes(err.Error()))}
}

// fastModelPrefix is how the gateway starts the JSON bodies it builds.
const fastModelPrefix = `{"model":"`

// rewriteJSONModel returns body with its top-level "model" set to quoted (a JSON
// string). Bodies starting with {"model":"<plain string>", (how the gateway builds
// them, already validated) are spliced without decoding, trusting the rest;
// others are decoded as an object and re-encoded (keys sorted).
func rewriteJSONModel(body, quoted []byte) ([]byte, error) {
	if bytes.HasPrefix(body, []byte(fastModelPrefix)) {
		rest := body[len(fastModelPrefix):]
		if i := bytes.IndexAny(rest, "\"\\"); i >= 0 && rest[i] == '"' && i+1 < len(rest) &&
			(rest[i+1] == ',' || rest[i+1] == '}') {
			tail := rest[i+1:]
			out := make([]byte, 0, len(`{"model":`)+len(quoted)+len(tail))
			out = append(out, `{"model":`...)
			out = append(out, quoted...)
			return append(out, tail...), nil
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, errcat.New(errcat.InvalidJSON, "", "request body is not a JSON object")
	}
	m["model"] = quoted
	out, err := json.Marshal(m)
	if err != nil {
		return nil, errcat.Internal(err)
	}
	return out, nil
}

// rewriteMultipart copies a multipart/form-data body from src to dst with the
// same boundary, replacing the "model" form field by alias (added when absent).
// A body without its close delimiter (cut) is an error: it is not repaired.
func rewriteMultipart(dst io.Writer, src io.Reader, boundary, alias string) error {
	cw := &closeWatch{r: src, delim: []byte("\n--" + boundary + "--"), tail: []byte("\n")}
	mr := multipart.NewReader(cw, boundary)
	mw := multipart.NewWriter(dst)
	if err := mw.SetBoundary(boundary); err != nil {
		return err
	}
	wroteModel := false
	for {
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			if !cw.seen {
				return errNoCloseDelimiter
			}
			break
		}
		if err != nil {
			return err
		}
		w, err := mw.CreatePart(part.Header)
		if err != nil {
			return err
		}
		if part.FormName() == "model" && part.FileName() == "" {
			_, err = io.WriteString(w, alias)
			wroteModel = true
		} else {
			_, err = io.Copy(w, part)
		}
		if err != nil {
			return err
		}
	}
	if !wroteModel {
		if err := mw.WriteField("model", alias); err != nil {
			return err
		}
	}
	return mw.Close()
}

var errNoCloseDelimiter = errors.New("multipart body ends without its close delimiter")

// closeWatch notes whether the multipart close delimiter (--boundary-- at the
// start of a line) went by: mime/multipart ends NextRawPart with io.EOF both
// after it and when the body ends inside a part's header or after a part
// without a delimiter, and only the first is a whole body.
type closeWatch struct {
	r     io.Reader
	delim []byte // "\n--" + boundary + "--"
	tail  []byte // the last bytes read, fewer than len(delim); "\n" at the start
	seen  bool
}

func (c *closeWatch) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if b := p[:n]; !c.seen && n > 0 {
		// The delimiter may straddle reads: look in tail + the start of b, then in b.
		head := append(c.tail, b[:min(n, len(c.delim)-1)]...)
		c.seen = bytes.Contains(head, c.delim) || bytes.Contains(b, c.delim)
		if keep := len(c.delim) - 1; len(head) > keep {
			head = head[len(head)-keep:]
		}
		if n >= len(c.delim)-1 {
			head = b[n-(len(c.delim)-1):]
		}
		c.tail = append(c.tail[:0], head...)
	}
	return n, err
}

// trackedReader remembers whether anything read from it.
type trackedReader struct {
	r    io.Reader
	used atomic.Bool
}

func (t *trackedReader) Read(p []byte) (int, error) {
	t.used.Store(true)
	return t.r.Read(p)
}

// lazyPipe starts its producer on the first Read, so that a request that never
// connected leaves the source unread (and retryable). The transport closes the
// request body when it is done, which ends the producer.
type lazyPipe struct {
	start func(*io.PipeWriter)
	once  sync.Once
	pr    *io.PipeReader
}

func (l *lazyPipe) Read(p []byte) (int, error) {
	l.once.Do(func() {
		pr, pw := io.Pipe()
		l.pr = pr
		go l.start(pw)
	})
	return l.pr.Read(p)
}

func (l *lazyPipe) Close() error {
	l.once.Do(func() {}) // never start after Close
	if l.pr != nil {
		return l.pr.Close()
	}
	return nil
}

// responseBody is a successful response's body: it maps read errors to
// *errcat.Error and, on Close, releases the attempt's context (bounded by the
// total time-out), which stays alive while the caller reads. Close may run on
// another goroutine than Read, to end a read that waits (a relay does, when
// its client goes away or the gateway shuts down).
type responseBody struct {
	rc   io.ReadCloser
	ctx  context.Context // the caller's context
	actx context.Context // the attempt's: ctx bounded by the total time-out
	call *call           // the attempt, whose timer and context Close releases
	// closing is set when Close starts: a read that fails after it failed
	// because the caller closed the body, which leaves the attempt
	// OutcomeOK ("as far as the caller read it") unless the caller's
	// context ended, which makes it OutcomeCancelled.
	closing atomic.Bool

	mu sync.Mutex // guards obs, att and span between a failed Read and Close
	// obs, when not nil, is told of the attempt (att) on Close, with the
	// outcome of the first failed read, if any.
	obs Observer
	att Attempt
	// span, when not nil, is the attempt's client span, ended on Close.
	span trace.Span
}

// Read reads the upstream body. Errors other than io.EOF are *errcat.Error:
// upstream_timeout when the total time-out (or the caller's deadline) passed,
// upstream_error otherwise; the original error is the cause.
func (b *responseBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = b.mapErr(err)
		if !b.closing.Load() || b.ctx.Err() != nil {
			b.mu.Lock()
			if (b.obs != nil || b.span != nil) && b.att.Outcome == OutcomeOK {
				b.att.Outcome = readOutcome(err)
			}
			b.mu.Unlock()
		}
	}
	return n, err
}

func (b *responseBody) mapErr(err error) error {
	if b.ctx.Err() != nil {
		return callerDone(b.ctx)
	}
	if totalPassed(b.actx) {
		return timeoutError(err)
	}
	// A misbehaving backend's bytes may be quoted in the error (net/http
	// reads trailers with net/textproto, which quotes a malformed line).
	return &errcat.Error{Code: errcat.UpstreamError, Message: "upstream connection lost",
		Cause: redact.Opaque(err, redact.Quotes(err.Error()))}
}

// Close closes the upstream body and releases the call's resources.
func (b *responseBody) Close() error {
	b.closing.Store(true)
	err := b.rc.Close()
	b.call.end()
	b.mu.Lock()
	obs, span, att := b.obs, b.span, b.att
	b.obs, b.span = nil, nil // the attempt ends once
	b.mu.Unlock()
	if obs != nil || span != nil {
		att.Duration = time.Since(att.start)
		if obs != nil {
			obs.ObserveAttempt(b.ctx, att)
		}
		endSpan(span, &att)
	}
	return err
}
