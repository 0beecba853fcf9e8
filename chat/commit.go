package chat

import (
	"bytes"
	"mime"
	"net/http"
	"strings"
)

// holdWriter sits between relay.Response and the client so that a turn is
// acknowledged only after it is committed (see the package doc). It passes the
// answer through except its acknowledgement, which it holds back until release
// or discard:
//
//   - a JSON answer (status 200, application/json) is held whole, status and
//     body: the client sees it only after the commit;
//   - an SSE answer passes through event by event (the relay flushes after each
//     event), up to the first event that the relay writes after the upstream's
//     data: [DONE], a gw.notice or the gateway's own data: [DONE]; that event and
//     everything after it is held.
//
// Error answers (status other than 200, gw.error events) pass through.
//
// TODO(relay): replace with a relay.Options hook called after the reply is
// captured and before the acknowledgement is written, once relay has one.
type holdWriter struct {
	w       http.ResponseWriter
	status  int  // status of a held JSON answer
	json    bool // a 200 JSON answer: hold everything
	holding bool // SSE: the acknowledgement began; hold the rest
	pending bytes.Buffer
	held    bytes.Buffer
}

func newHoldWriter(w http.ResponseWriter) *holdWriter { return &holdWriter{w: w} }

func (h *holdWriter) Header() http.Header { return h.w.Header() }

func (h *holdWriter) WriteHeader(status int) {
	if status == http.StatusOK {
		mt, _, _ := mime.ParseMediaType(h.w.Header().Get("Content-Type"))
		if mt == "application/json" {
			h.json, h.status = true, status
			return
		}
	}
	h.w.WriteHeader(status)
}

func (h *holdWriter) Write(b []byte) (int, error) {
	switch {
	case h.json || h.holding:
		return h.held.Write(b)
	case strings.HasPrefix(h.w.Header().Get("Content-Type"), "text/event-stream"):
		return h.pending.Write(b)
	}
	return h.w.Write(b)
}

// FlushError ends an SSE event: it is written and flushed to the client, or,
// when it starts the acknowledgement, held with everything after it.
func (h *holdWriter) FlushError() error {
	if h.json {
		return nil
	}
	if !h.holding && isAcknowledgement(h.pending.Bytes()) {
		h.holding = true
	}
	if h.holding {
		h.held.Write(h.pending.Bytes())
		h.pending.Reset()
		return nil
	}
	if h.pending.Len() > 0 {
		_, err := h.w.Write(h.pending.Bytes())
		h.pending.Reset()
		if err != nil {
			return err
		}
	}
	return http.NewResponseController(h.w).Flush()
}

// isAcknowledgement reports whether an SSE event is one the relay writes only
// after the upstream completed: a gw.notice, or data: [DONE].
func isAcknowledgement(ev []byte) bool {
	return bytes.HasPrefix(ev, []byte("event: gw.notice\n")) || bytes.HasPrefix(ev, []byte("data: [DONE]\n"))
}

// release sends what was held to the client.
func (h *holdWriter) release() error {
	if h.json {
		h.w.WriteHeader(h.status)
	}
	h.held.Write(h.pending.Bytes())
	h.pending.Reset()
	if _, err := h.w.Write(h.held.Bytes()); err != nil {
		return err
	}
	h.held.Reset()
	return http.NewResponseController(h.w).Flush()
}

// discard drops what was held, and the headers a held JSON answer set, so that
// an error can be written instead.
func (h *holdWriter) discard() {
	h.held.Reset()
	h.pending.Reset()
	if h.json {
		hd := h.w.Header()
		for _, k := range []string{"Content-Length", "Content-Type", "Gw-Applied", "X-Rust-Api-Applied", "Gw-Notice"} {
			hd.Del(k)
		}
	}
}
