package upstreamtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// onePixelPNG is a valid 1x1 PNG, base64-encoded, the b64_json of generated images.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

const sseDone = "data: [DONE]\n\n"

// answer serves one call.
type answer struct {
	h    *Handler
	w    http.ResponseWriter
	r    *http.Request
	req  *request
	rep  *compiled
	call *Call
}

func (a *answer) serve(path string) {
	rep := a.rep
	if rep.Hang {
		a.sleep(-1)
		panic(http.ErrAbortHandler) // the fake was closed: drop the connection
	}
	if rep.Latency > 0 && !a.sleep(rep.Latency) {
		return
	}
	hdr := a.w.Header()
	for k, vs := range rep.Header {
		hdr[k] = vs
	}
	if rep.RetryAfter != "" {
		hdr.Set("Retry-After", rep.RetryAfter)
	}
	switch {
	case rep.Body != nil:
		ct := rep.ContentType
		if ct == "" {
			ct = "application/json"
		}
		a.write(rep.status(), ct, rep.Body)
	case rep.Events != nil:
		frames := make([][]byte, len(rep.Events))
		for i, e := range rep.Events {
			frames[i] = []byte("data: " + e + "\n\n")
		}
		a.sse(frames, rep.DropAfter)
	case rep.errBody != nil:
		a.write(rep.status(), "application/json", rep.errBody)
	case a.r.Method == http.MethodGet && path == "/models":
		a.write(rep.status(), "application/json", []byte(`{"object":"list","data":[{"id":`+
			quote(a.h.cfg.ID+"-model")+`,"object":"model","created":`+
			strconv.FormatInt(a.h.cfg.Created, 10)+`,"owned_by":"upstreamtest"}]}`))
	case a.r.Method != http.MethodPost:
		a.write(http.StatusMethodNotAllowed, "application/json", errorBody(http.StatusMethodNotAllowed, ""))
	case path == "/chat/completions":
		a.chat()
	case path == "/embeddings":
		a.embeddings()
	case path == "/images/generations":
		a.images()
	case path == "/audio/transcriptions" || path == "/audio/translations":
		a.write(rep.status(), "application/json", []byte(`{"text":`+quote(rep.Content)+`}`))
	default:
		a.write(http.StatusNotFound, "application/json", errorBody(http.StatusNotFound, "unknown path "+path))
	}
}

func (a *answer) chat() {
	r := a.rep.render(a.req.Model)
	if !a.req.Stream {
		a.write(a.rep.status(), "application/json", r.completion)
		return
	}
	frames := r.frames
	if a.req.StreamOptions != nil && a.req.StreamOptions.IncludeUsage {
		frames = append(frames[:len(frames):len(frames)], r.usage)
	}
	a.sse(frames, a.rep.DropAfter+1) // +1: the role chunk comes first
}

// sse writes frames then data: [DONE]. With Drop, the connection is aborted
// before frames[dropAt] (before [DONE] when dropAt >= len(frames)). With an
// Interval, each frame after the first waits and is flushed on its own.
func (a *answer) sse(frames [][]byte, dropAt int) {
	rep := a.rep
	hdr := a.w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	a.w.WriteHeader(rep.status())
	rc := http.NewResponseController(a.w)
	if !rep.Drop && rep.Interval <= 0 {
		var buf bytes.Buffer
		for _, f := range frames {
			buf.Write(f)
		}
		buf.WriteString(sseDone)
		a.w.Write(buf.Bytes())
		return
	}
	if rep.Drop {
		dropAt = min(max(dropAt, 0), len(frames))
	}
	for i, f := range frames {
		if rep.Drop && i == dropAt {
			a.abort(rc)
		}
		if i > 0 && rep.Interval > 0 && !a.sleep(rep.Interval) {
			return
		}
		a.w.Write(f)
		rc.Flush()
	}
	if rep.Drop {
		a.abort(rc)
	}
	io.WriteString(a.w, sseDone)
}

// abort flushes what was written and closes the connection abruptly.
func (a *answer) abort(rc *http.ResponseController) {
	rc.Flush()
	panic(http.ErrAbortHandler)
}

func (a *answer) embeddings() {
	n := 1
	if len(a.req.Input) > 0 && a.req.Input[0] == '[' {
		var items []json.RawMessage
		if json.Unmarshal(a.req.Input, &items) == nil && len(items) > 0 && items[0][0] != '-' &&
			(items[0][0] < '0' || items[0][0] > '9') {
			n = len(items) // not a single token array
		}
	}
	var b bytes.Buffer
	b.WriteString(`{"object":"list","data":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"object":"embedding","index":` + strconv.Itoa(i) + `,"embedding":[`)
		for j := range a.rep.Dimensions {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(float64(((i+1)*(j+7))%97)/97, 'f', 4, 64))
		}
		b.WriteString("]}")
	}
	b.WriteString(`],"model":` + quote(a.req.Model) + `,"usage":{"prompt_tokens":` +
		strconv.Itoa(a.rep.PromptTokens) + `,"total_tokens":` + strconv.Itoa(a.rep.PromptTokens) + "}}")
	a.write(a.rep.status(), "application/json", b.Bytes())
}

func (a *answer) images() {
	n := max(a.req.N, 1)
	var b bytes.Buffer
	b.WriteString(`{"created":` + strconv.FormatInt(a.h.cfg.Created, 10) + `,"data":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"b64_json":"` + onePixelPNG + `"}`)
	}
	b.WriteString("]}")
	a.write(a.rep.status(), "application/json", b.Bytes())
}

func (a *answer) write(status int, contentType string, body []byte) {
	a.w.Header().Set("Content-Type", contentType)
	a.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	a.w.WriteHeader(status)
	a.w.Write(body)
}

// sleep waits d (forever when d < 0). It returns false when the wait ended early:
// the request's context ended (the call is recorded as Canceled) or the handler
// was closed.
func (a *answer) sleep(d time.Duration) bool {
	var timeout <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
		return true
	case <-a.r.Context().Done():
		a.h.markCanceled(a.call)
		return false
	case <-a.h.closing:
		return false
	}
}
