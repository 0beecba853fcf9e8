package relay

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/wire"
)

// SSE writes the gateway's SSE answer: headers on the first write, each event
// flushed at once (the relay, in batch mode, flushes the events of one
// upstream read together, and leaves the stream's end to net/http). Response uses it to relay upstream streams; callers that
// produce events themselves (an agent's tool loop) may use it directly. An SSE is
// not safe for concurrent use. After the first failed write every method returns
// that error and writes nothing.
type SSE struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	meta    wire.Meta // the stream's, reused by its gw.notice chunks
	err     error
	enc     Encoder // Options.Encoder of the relay writing this stream, or nil
	evs     []Event // enc's events, reused from chunk to chunk
	// batch holds each event's flush for Flush: the relay flushes once the
	// upstream has nothing more ready, so that events that arrived together
	// leave in one write. held says that an event waits for it.
	batch bool
	held  bool
	// flushed says the status and headers went out (firstFlush).
	flushed bool
}

// NewSSE returns an SSE writing to w. Headers the caller set on w before the
// first event are sent with it.
func NewSSE(w http.ResponseWriter) *SSE {
	return &SSE{w: w, rc: http.NewResponseController(w)}
}

// Started reports whether the status and headers were sent.
func (s *SSE) Started() bool { return s.started }

// SetMeta sets the stream's id, model and created for later notices.
func (s *SSE) SetMeta(m wire.Meta) { s.meta = m }

// Data sends one unnamed event whose data is data, verbatim (a data with line
// breaks is sent as several data lines, which the client joins back).
func (s *SSE) Data(data string) error { return s.Event("", data) }

// Event sends one event named name ("" for an unnamed event) with data.
func (s *SSE) Event(name, data string) error {
	if !s.begin() {
		return s.err
	}
	if name != "" {
		s.write("event: ")
		s.write(name)
		s.write("\n")
	}
	s.write("data: ")
	s.writeData(data)
	s.write("\n\n")
	return s.flush()
}

// chunk sends one unnamed event whose data is data with the values at spans
// (top-level "model" members, modelRewriter.find) replaced by quoted, written
// in pieces so that nothing is copied or allocated.
func (s *SSE) chunk(data string, spans []span, quoted string) error {
	if !s.begin() {
		return s.err
	}
	s.write("data: ")
	at := 0
	for _, sp := range spans {
		s.writeData(data[at:sp.start])
		s.write(quoted)
		at = sp.end
	}
	s.writeData(data[at:])
	s.write("\n\n")
	return s.flush()
}

// writeData writes part of an event's data, each line break in it starting
// a new data: line, which the client joins back.
func (s *SSE) writeData(data string) {
	for {
		i := strings.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		s.write(data[:i])
		s.write("\ndata: ")
		data = data[i+1:]
	}
	s.write(data)
}

// Comment sends the SSE comment ": text", which clients ignore (keepalive).
func (s *SSE) Comment(text string) error {
	if !s.begin() {
		return s.err
	}
	s.write(": ")
	s.write(text)
	s.write("\n\n")
	return s.flush()
}

// noticeChunk is the data of a gw.notice event. It does not embed wire.Meta:
// its members keep the order id, object, created, model that clients have
// seen (testdata/stream.golden), and Meta's is id, model, created.
type noticeChunk struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []string `json:"choices"`
	Notice  Notice   `json:"gw_notice"`
}

// Notice sends n as a gw.notice event shaped like a chunk of this stream with no
// choices, so that OpenAI client libraries treat it like the usage chunk. Send
// notices before Done.
func (s *SSE) Notice(n Notice) error {
	b, err := json.Marshal(noticeChunk{
		ID: s.meta.ID, Object: "chat.completion.chunk", Created: s.meta.Created,
		Model: s.meta.Model, Choices: []string{}, Notice: n,
	})
	if err != nil {
		return err
	}
	return s.Event("gw.notice", string(b))
}

// Done sends data: [DONE], the end of a complete stream.
func (s *SSE) Done() error { return s.Data("[DONE]") }

// Error sends err as a gw.error event whose data is the error envelope
// ({"error":{...},"gw_code":...}, as errcat writes it, without Extra fields). The
// stream must end after it, without Done. Internal and storage errors never show
// their cause.
func (s *SSE) Error(err error) error {
	return s.Event("gw.error", string(errorJSON(err)))
}

// errorJSON is the error envelope of err: errcat's, so that an event says
// what a JSON answer would (the same message rules, doc_url), without the
// Extra fields, which belong to a JSON answer's top level.
func errorJSON(err error) []byte {
	p, _ := errcat.PublicOf(err)
	p.Extra = nil
	return errcat.Envelope(p)
}

// begin sends the status and headers once; it reports whether writing may go on.
func (s *SSE) begin() bool {
	if s.err != nil {
		return false
	}
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		h.Del("Content-Length")
		s.w.WriteHeader(http.StatusOK)
	}
	return true
}

func (s *SSE) write(str string) {
	if s.err == nil {
		_, s.err = io.WriteString(s.w, str)
	}
}

// finish ends a relayed stream: what it still holds (its end: the events of
// the upstream's last read, the notices, data: [DONE] or gw.error) is left in
// the ResponseWriter, whose buffer net/http sends with the end of the body
// when the handler returns, in one write with the chunked body's terminator
// instead of two. That is right only if the handler returns at once, so
// settling a quota ticket, a store transaction that runs after the relay,
// flushes first: the client's stream does not wait for it.
func (s *SSE) finish(slowAfter bool) {
	if slowAfter && s.held {
		s.Flush()
	}
}

// flush ends an event: it is sent at once, or held for Flush in batch mode.
func (s *SSE) flush() error {
	if s.batch && s.err == nil {
		s.held = true
		return nil
	}
	return s.Flush()
}

// Flush sends what was written and not sent yet.
func (s *SSE) Flush() error {
	s.held = false
	if s.err != nil {
		return s.err
	}
	var err error
	if s.flushed {
		err = s.rc.Flush()
	} else {
		s.flushed = true
		err = firstFlush(s.rc)
	}
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.err = err
	}
	return s.err
}

// firstFlush flushes on a goroutine of its own, which lives for that call
// alone. The first flush writes the status line and headers, and net/http's
// header writer takes 3 KiB of stack; run at the relay's depth it would
// double the stack of the request's goroutine, 8 to 16 KiB, and a stream
// keeps that stack for as long as it is open (thousands of streams: tens of
// MiB). The caller waits, so the writer is never used by two goroutines at
// once.
func firstFlush(rc *http.ResponseController) error {
	done := make(chan error, 1)
	go func() { done <- rc.Flush() }()
	return <-done
}
