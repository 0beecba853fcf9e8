package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/jsonscan"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/chatgw/gateway/internal/sseread"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/upstream"
)

// maxEventSize bounds one upstream SSE event (64 KiB, go-sse's default, is
// too small for a large tool-call or usage chunk).
const maxEventSize = 1 << 20

// Response relays resp, a successful upstream answer, to the client of r, as SSE
// or JSON (see the package doc), and closes resp.Body. It uses r's context:
// cancelling it (the client went away) closes a stream's upstream body at
// once and Response returns without writing more; a JSON answer is read to
// its end first (a Router's body ends with the context of its call), then
// not written. Headers the caller set on w are sent with a successful
// answer. When r is metered (httpx.MeterOf), the answer's usage, as far as
// it arrived, is reported to its Meter as Response returns.
func Response(w http.ResponseWriter, r *http.Request, resp *upstream.Response, opts Options) Result {
	meter, rec := httpx.MeterOf(r.Context()), httpx.InfoFrom(r.Context()).Metrics
	if opts.Capture == nil && (opts.Ticket != nil || meter != nil || rec.On() || traced(resp.Span)) {
		// Only the answer's usage: for the quota, the usage record, the
		// metrics and the span.
		opts.Capture = &Capture{UsageOnly: true}
	}
	if opts.Ticket != nil || meter != nil {
		capture, ticket := opts.Capture, opts.Ticket
		defer func() {
			meter.Report(capture.Usage)
			if ticket != nil {
				ticket.Settle(r.Context(), capture.UsedTokens())
			}
		}()
	}
	stream := IsStream(resp.Header, opts.Stream)
	body := closeOnce(resp.Body)
	defer body.Close()
	// The gateway shutting down ends the upstream read, and the client is
	// told why (see shutdownError). The client going away ends a stream's,
	// whose next event may be minutes away; a JSON answer arrives with its
	// headers, and an upstream.Router body already ends with the context of
	// its call, which is r's: watching r's context too would cost every
	// answer a context child.
	if sd := httpx.InfoFrom(r.Context()).Shutdown; sd != nil {
		defer sd.Watch(func() { body.Close() }).Stop()
	}
	if stream {
		defer context.AfterFunc(r.Context(), func() { body.Close() })()
	}

	committed := false
	var commitErr error
	if commit := opts.Commit; commit != nil {
		opts.Commit = func(ctx context.Context) error {
			err := commit(ctx)
			committed, commitErr = err == nil, err
			return err
		}
	}
	setBackend(w.Header(), resp)
	var res Result
	if stream {
		rec.StreamStarts()
		res = relaySSE(w, r, body, &opts)
		rec.StreamEnds(streamOutcome(r, res, commitErr, opts.maxBytes()))
	} else {
		res = relayJSON(w, r, body, &opts)
	}
	res.Committed = committed
	if opts.Capture != nil {
		opts.Capture.finish()
		rec.Usage(opts.Capture.Usage)
		traceAnswer(resp.Span, opts.Capture) // before the deferred Close ends the span
	}
	return res
}

// drainEnd reads an upstream stream's body to its end after its [DONE]:
// net/http's Transport keeps a connection for the next request only when its
// body was read to the end, and the chunked body's terminator often comes in
// a packet of its own just after [DONE]. Closed before it, every stream would
// cost a new upstream connection, and under load the gateway then spends
// more on dialing than on relaying. The wait is bounded by drainWait and the
// bytes by drainLimit: an upstream that goes on after [DONE] loses its
// connection, as before.
func drainEnd(events *sseread.Reader, body io.Closer) {
	if events.Ended() {
		return
	}
	t := time.AfterFunc(drainWait, func() { body.Close() })
	events.Drain(drainLimit)
	t.Stop()
}

const (
	// drainWait is how long drainEnd waits for the end of a body after its
	// [DONE]; the client's stream ends only after it.
	drainWait = 100 * time.Millisecond
	// drainLimit is how much drainEnd reads after [DONE]: room for the
	// chunked terminator and a few comments, not for a second stream.
	drainLimit = 4 << 10
)

// IsStream decides whether an upstream answer is a stream: by its
// Content-Type (text/event-stream), or the request's stream flag when it has
// none. Response relays by it; callers that read an answer themselves decide
// the same way.
func IsStream(h http.Header, requested bool) bool {
	switch ct := h.Get("Content-Type"); ct {
	case "":
		return requested
	case "text/event-stream":
		return true
	case "application/json":
		return false // the common answers without ParseMediaType's map
	default:
		mt, _, _ := mime.ParseMediaType(ct)
		return mt == "text/event-stream"
	}
}

func relayJSON(w http.ResponseWriter, r *http.Request, body io.Reader, opts *Options) Result {
	ctx := r.Context()
	b, err := io.ReadAll(LimitReader(body, opts.maxBytes()))
	if ctx.Err() != nil {
		return Result{Err: context.Cause(ctx)}
	}
	var tooLarge *errcat.Error
	switch {
	case shuttingDown(r):
		return reject(w, r, nil, ShuttingDown())
	case errors.As(err, &tooLarge):
		return reject(w, r, nil, tooLarge)
	case err != nil:
		return fail(w, r, nil, fmt.Errorf("relay: read upstream answer: %w", err))
	}
	// The answer's "model" members, to be written as the alias; the walk
	// that finds them validates an object answer on the way.
	var spans []span
	var usage span
	quoted, valid := "", false
	if alias := opts.rewriteModel(); alias != "" {
		quoted = quoteJSON(alias)
		var sc jsonscan.Scanner[[]byte]
		spans, valid = findModel(&sc, b, nil, &usage)
	}
	switch {
	case !valid && !json.Valid(b):
		return fail(w, r, nil, errors.New("relay: upstream answer is not JSON"))
	case IsErrorObject(b[:min(len(b), 256)]):
		return fail(w, r, nil, fmt.Errorf("relay: upstream answered an error object: %s", redact.Body(b)))
	}
	if c := opts.Capture; c != nil && c.UsageOnly && valid {
		c.keepUsage(b, usage) // found by the model walk
	} else if c != nil {
		c.fromJSON(b)
	}
	if enc := opts.Encoder; enc != nil {
		// Before Commit: an answer the client cannot be given is not stored.
		out, err := enc.Completion(b)
		if err != nil {
			return fail(w, r, nil, fmt.Errorf("relay: encode the answer: %w", err))
		}
		b = out
	}
	if opts.Commit != nil {
		if err := opts.Commit(ctx); err != nil {
			return reject(w, r, nil, err)
		}
	}
	h := w.Header()
	vs := make(headerValues, 0, 2)
	vs.set(h, "Content-Type", "application/json")
	vs.set(h, "Content-Length", strconv.Itoa(len(b)+len(spans)*len(quoted)-spansLen(spans)))
	setApplied(h, opts.Applied)
	setNotices(h, opts.Notices)
	httpx.InfoFrom(ctx).Metrics.AnswerStarts()
	w.WriteHeader(http.StatusOK)
	if err := writeSpliced(w, b, spans, quoted); err != nil {
		return Result{Started: true, Err: err}
	}
	return Result{Started: true, Complete: true}
}

// writeSpliced writes b to w with the values at spans replaced by quoted,
// in pieces, so that a large answer (an embeddings list) is not copied.
func writeSpliced(w io.Writer, b []byte, spans []span, quoted string) error {
	at := 0
	for _, sp := range spans {
		if _, err := w.Write(b[at:sp.start]); err != nil {
			return err
		}
		if _, err := io.WriteString(w, quoted); err != nil {
			return err
		}
		at = sp.end
	}
	_, err := w.Write(b[at:])
	return err
}

// spansLen is the number of bytes the spans cover.
func spansLen(spans []span) int {
	n := 0
	for _, sp := range spans {
		n += sp.end - sp.start
	}
	return n
}

func relaySSE(w http.ResponseWriter, r *http.Request, body io.ReadCloser, opts *Options) Result {
	ctx := r.Context()
	setApplied(w.Header(), opts.Applied)
	s := NewSSE(w)
	if s.enc = opts.Encoder; s.enc != nil {
		setNotices(w.Header(), opts.Notices)
	}
	var mu sync.Mutex // guards s between the relay and the keepalive goroutine
	ka := startKeepalive(&mu, s, opts.Keepalive)
	defer ka.stop()

	var (
		failure  error
		done     bool
		haveMeta bool
		relayed  bool // an event was relayed: the first chunk is behind
	)
	mr := newModelRewriter(opts.rewriteModel())
	events := sseread.NewReader(body, maxEventSize)
	// The events that arrived together are flushed together, before the
	// reader may wait for more.
	s.batch = true
	events.SetBeforeRead(func() {
		mu.Lock()
		if s.held {
			s.Flush()
		}
		mu.Unlock()
	})
	for {
		// Borrowed: the event is written out before the next read, and
		// what outlives it is copied (readMeta's and the Capture's strings,
		// and the whole event for an Encoder, which may keep any part).
		ev, err := events.Borrow()
		if err == io.EOF {
			break
		}
		if err != nil {
			failure = fmt.Errorf("relay: read upstream stream: %w", err)
			break
		}
		if ev.Data == "" {
			continue
		}
		if ev.Type == "" {
			if ev.Data == "[DONE]" {
				done = true
				break
			}
			if IsErrorObject(ev.Data) {
				failure = fmt.Errorf("relay: upstream sent an error event: %s", redact.Body([]byte(ev.Data)))
				break
			}
			if !haveMeta {
				if haveMeta = readMeta(s, ev.Data); haveMeta && mr.quoted != "" {
					s.meta.Model = opts.Model // the notices name the alias too
				}
			}
			if c := opts.Capture; c != nil {
				if c.addChunk(ev.Data); c.held() > opts.maxBytes() {
					failure = TooLarge(opts.maxBytes())
					break
				}
			}
		}
		if !relayed {
			relayed = true
			httpx.InfoFrom(ctx).Metrics.FirstChunk()
		}
		mu.Lock()
		var werr error
		switch {
		case s.enc != nil:
			werr, failure = s.encodeChunk(ev.Type, strings.Clone(ev.Data))
		case mr.quoted != "" && ev.Type == "":
			spans, _ := mr.find(ev.Data)
			werr = s.chunk(ev.Data, spans, mr.quoted)
		default:
			werr = s.Event(ev.Type, ev.Data)
		}
		ka.reset()
		mu.Unlock()
		if werr != nil {
			return Result{Stream: true, Started: true, Err: werr}
		}
		if failure != nil {
			break
		}
	}

	var commitErr error
	if done && ctx.Err() == nil {
		if opts.Commit != nil {
			// What the loop held goes first: the commit may take a while.
			mu.Lock()
			if s.held {
				s.Flush()
			}
			mu.Unlock()
		}
		// Before the commit, so that the connection serves other requests
		// while the turn waits for its fsync.
		drainEnd(events, body)
		if opts.Commit != nil {
			if opts.Capture != nil {
				opts.Capture.finish()
			}
			commitErr = opts.Commit(ctx) // without mu: keepalives go on meanwhile
		}
	}

	mu.Lock()
	defer mu.Unlock()
	ka.finished = true
	defer s.finish(opts.Ticket != nil)
	if ctx.Err() != nil {
		return Result{Stream: true, Started: s.Started(), Err: context.Cause(ctx)}
	}
	if !done {
		if shuttingDown(r) {
			return reject(w, r, s, ShuttingDown())
		}
		if failure == nil {
			failure = errNoDone
		}
		return fail(w, r, s, failure)
	}
	if commitErr != nil {
		return reject(w, r, s, commitErr)
	}
	if s.enc != nil {
		if err := s.events(s.enc.End(nil, opts.Notices)); err != nil {
			return Result{Stream: true, Started: true, Err: err}
		}
		return Result{Stream: true, Started: true, Complete: true}
	}
	if !haveMeta {
		s.SetMeta(fallbackMeta(opts))
	}
	for _, n := range opts.Notices {
		s.Notice(n)
	}
	if err := s.Done(); err != nil {
		return Result{Stream: true, Started: true, Err: err}
	}
	return Result{Stream: true, Started: true, Complete: true}
}

// fail reports an upstream failure as upstream_error; the cause is only
// logged.
// A read that failed because the upstream call's time-out passed (the
// upstream body says so with an upstream_timeout *errcat.Error) is reported as
// upstream_timeout.
func fail(w http.ResponseWriter, r *http.Request, s *SSE, cause error) Result {
	httpx.InfoFrom(r.Context()).Logger.LogAttrs(r.Context(), slog.LevelWarn, "relay failed", slog.String("error", redact.Error(cause)))
	return reject(w, r, s, ReadFailure(cause))
}

// ReadFailure is the error of an upstream answer that failed while it was
// read: the gateway's own upstream_error verdict as it is (TooLarge, message
// and all), upstream_timeout when the upstream call's time-out passed, else
// upstream_error; the cause is only logged. Callers that read an answer
// themselves (an agent's tool round) report failures the same way.
func ReadFailure(cause error) *errcat.Error {
	var own *errcat.Error
	if errors.As(cause, &own) && own.Code == errcat.UpstreamError {
		return own
	}
	if errcat.CodeOf(cause) == errcat.UpstreamTimeout {
		return &errcat.Error{Code: errcat.UpstreamTimeout, Message: "The upstream model did not finish within the time-out; the answer is incomplete.", Cause: cause}
	}
	return &errcat.Error{Code: errcat.UpstreamError, Message: "The upstream model failed while answering; the answer is incomplete.", Cause: cause}
}

// reject sends err instead of the answer: the JSON error envelope when nothing
// was sent yet (s nil or not started), else a gw.error event ending the stream.
func reject(w http.ResponseWriter, r *http.Request, s *SSE, err error) Result {
	e := errcat.As(err)
	info := httpx.InfoFrom(r.Context())
	if s == nil || !s.Started() {
		// Remove what the caller set for a successful answer.
		w.Header().Del(HeaderApplied)
		w.Header().Del(HeaderAppliedLegacy)
		w.Header().Del(HeaderNotice)
		w.Header().Del(HeaderBackend)
		w.Header().Del(HeaderBackendModel)
		httpx.WriteError(w, r, e)
		return Result{Stream: s != nil, Err: e}
	}
	info.Err = e
	if s.enc != nil {
		s.events(s.enc.Error(nil, e))
	} else {
		s.Error(e)
	}
	return Result{Stream: true, Started: true, Err: e}
}

// ShuttingDown is the error of an answer cut because the gateway shuts down:
// 503 upstream_unavailable, which clients retry, with a message that tells it
// from a network failure. A stream that started ends with it as a gw.error
// event.
func ShuttingDown() *errcat.Error {
	return errcat.New(errcat.UpstreamUnavailable, "",
		"The gateway is shutting down; the answer is incomplete. Send the request again.")
}

// shuttingDown reports whether the gateway of r is ending its streams.
func shuttingDown(r *http.Request) bool {
	sd := httpx.InfoFrom(r.Context()).Shutdown
	return sd != nil && sd.Ended()
}

// readMeta takes the stream's id, created and model from a chunk; it reports
// whether the chunk had them. It reads with fastChunk, backed by
// json.Unmarshal for a chunk fastChunk gives up on, because the first chunk
// is read deep in the request's stack, and encoding/json's recursive decoding
// there made every streaming request's stack grow from 8 to 16 KiB, kept for
// as long as the stream stays open.
func readMeta(s *SSE, data string) bool {
	var m wire.Meta
	var f fastChunk
	if f.parse(data) {
		m = wire.Meta{ID: unquoteOrEmpty(f.id), Model: unquoteOrEmpty(f.model), Created: f.created}
	} else if json.Unmarshal([]byte(data), &m) != nil {
		return false
	}
	if m.ID == "" {
		return false
	}
	s.SetMeta(m)
	return true
}

func fallbackMeta(opts *Options) wire.Meta {
	now := time.Now()
	if opts.Clock != nil {
		now = opts.Clock.Now()
	}
	return wire.Meta{ID: "chatcmpl-gw", Model: opts.Model, Created: now.Unix()}
}

// setNotices sets the GW-Notice header to the codes of notices, if any.
func setNotices(h http.Header, notices []Notice) {
	if len(notices) > 0 {
		codes := make([]string, len(notices))
		for i, n := range notices {
			codes[i] = n.Code
		}
		h.Set(HeaderNotice, strings.Join(codes, ", "))
	}
}

// setBackend names the backend that answered in HeaderBackend and
// HeaderBackendModel, when the Upstream says.
func setBackend(h http.Header, resp *upstream.Response) {
	if resp.Provider == "" && resp.RouterAlias == "" {
		return
	}
	vs := make(headerValues, 0, 2)
	if resp.Provider != "" {
		vs.set(h, HeaderBackend, resp.Provider)
	}
	if resp.RouterAlias != "" {
		vs.set(h, HeaderBackendModel, resp.RouterAlias)
	}
}

// headerValues gives the headers of an answer one array of values, where a
// Set each would allocate a slice apiece. Each value's slice ends its
// capacity at the value, so that an Add to one copies instead of
// overwriting the next.
type headerValues []string

// set sets h[key] to v alone; key is in canonical form (Set's).
func (vs *headerValues) set(h http.Header, key, v string) {
	*vs = append(*vs, v)
	n := len(*vs)
	h[key] = (*vs)[n-1 : n : n]
}

func setApplied(h http.Header, applied string) {
	if applied != "" {
		h.Set(HeaderApplied, applied)
		h.Set(HeaderAppliedLegacy, applied)
	}
}

// IsErrorObject reports whether b is a JSON object whose first member is
// "error", the shape OpenAI-compatible servers use for errors.
func IsErrorObject[T jsonscan.Text](b T) bool {
	s := jsonscan.New(b)
	i := s.Space(0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	rest := b[s.Space(i+1):]
	return len(rest) >= 7 && string(rest[:7]) == `"error"`
}

// keepalive sends ": keepalive" after an interval without events. It is a
// timer whose function runs only when the interval passes, not a goroutine
// waiting for it: a stream waiting for its next chunk holds no goroutine but
// its handler's (the memory of many slow streams).
type keepalive struct {
	mu       *sync.Mutex
	s        *SSE
	timer    *time.Timer
	interval time.Duration
	finished bool // guarded by mu: the stream ended, write nothing more
}

func startKeepalive(mu *sync.Mutex, s *SSE, interval time.Duration) *keepalive {
	if interval == 0 {
		interval = DefaultKeepalive
	}
	ka := &keepalive{mu: mu, s: s, interval: interval}
	if interval > 0 {
		mu.Lock() // fire reads ka.timer under mu
		ka.timer = time.AfterFunc(interval, ka.fire)
		mu.Unlock()
	}
	return ka
}

// fire sends a keepalive and re-arms the timer, unless the stream ended.
func (ka *keepalive) fire() {
	ka.mu.Lock()
	defer ka.mu.Unlock()
	if !ka.finished {
		ka.s.keepalive()
		if ka.s.held {
			ka.s.Flush() // the relay waits for the upstream: nothing else will
		}
		ka.timer.Reset(ka.interval)
	}
}

// reset restarts the interval; call with mu held.
func (ka *keepalive) reset() {
	if ka.timer != nil {
		ka.timer.Reset(ka.interval)
	}
}

// stop ends the keepalives; a fire already running finds the stream finished
// and writes nothing. Call without mu held.
func (ka *keepalive) stop() {
	if ka.timer == nil {
		return
	}
	ka.mu.Lock()
	ka.finished = true
	ka.mu.Unlock()
	ka.timer.Stop()
}

// closeOnce makes Close idempotent and safe to call from two goroutines (the
// relay and the context's AfterFunc).
func closeOnce(rc io.ReadCloser) *onceCloser { return &onceCloser{ReadCloser: rc} }

type onceCloser struct {
	io.ReadCloser
	once sync.Once
}

func (c *onceCloser) Close() error {
	c.once.Do(func() { c.ReadCloser.Close() })
	return nil
}
