package openai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/upstream"
)

// AudioPeekMemory is how much of an upload's beginning the audio endpoints keep
// in memory while they look for the model field; a longer beginning (a file
// part sent before model) continues in a temporary file.
const AudioPeekMemory = 1 << 20

// maxModelField bounds the value of the model form field that is read.
const maxModelField = 256

// Transcriptions serves POST /v1/audio/transcriptions; see Translations.
func (s *Service) Transcriptions(w http.ResponseWriter, r *http.Request) {
	s.audio(w, r, "/audio/transcriptions")
}

// Translations serves POST /v1/audio/translations. Both audio endpoints take
// OpenAI's multipart/form-data upload and stream it to the upstream as it
// arrives: the file is never held in memory whole.
//
// The gateway reads the parts up to the "model" form field, keeping the raw
// bytes it read (in memory up to AudioPeekMemory, then in a temporary file
// that is removed when the request ends), checks the model, and then sends
// those bytes followed by the rest of the request body, unchanged, with the
// request's own Content-Type (and boundary). The router replaces the model
// field with each backend's router_alias on the way. OpenAI's client libraries
// and curl examples send model either before the file (only a few hundred
// bytes are read ahead) or after it (the file waits on disk, not in memory).
//
// Errors (400 unless said otherwise): a Content-Type that is not
// multipart/form-data with a boundary is invalid_field (headers.content-type);
// a body that is not valid multipart is invalid_json; no model field, or an
// empty one, is missing_field (model); a model that is not an
// audio_transcription alias in the tenant's allowlist is model_not_in_allowlist
// (model); a user_id form field anywhere in the form is invalid_field
// (body.user_id), the identity rule (the upload is parsed on the side as it
// streams, and cut at such a field); a body over the gateway's limit is 413
// body_too_large, also when that shows only while streaming. Other fields (file, language, prompt,
// response_format, temperature...) are the upstream's to check; its 4xx
// answers upstream_bad_request with its status.
//
// The answer is relayed as the upstream sent it, streamed: status, Content-Type
// (JSON, or text/plain, SRT, VTT for the other response formats) and body,
// plus GW-Notice: backend_fallback when a later backend of the chain answered.
func (s *Service) Translations(w http.ResponseWriter, r *http.Request) {
	s.audio(w, r, "/audio/translations")
}

func (s *Service) audio(w http.ResponseWriter, r *http.Request, path string) {
	ctx := r.Context()
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		httpx.WriteError(w, r, errcat.New(errcat.InvalidField, "headers.content-type",
			"Content-Type must be multipart/form-data with a boundary."))
		return
	}

	src := newGuardedBody(r.Body)
	head := &spill{max: AudioPeekMemory}
	defer head.close()
	// Runs first: nothing may read the request body once the handler returned.
	defer src.stop(func() { _ = http.NewResponseController(w).SetReadDeadline(time.Now()) })

	alias, err := peekModel(io.TeeReader(src, head), params["boundary"])
	if err != nil {
		httpx.WriteError(w, r, uploadError(err, src, head))
		return
	}
	m, err := s.catalog.LookupKind(p.Tenant, alias, upstream.KindAudioTranscription)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	start, err := head.reader()
	if err != nil {
		httpx.WriteError(w, r, errcat.Internal(err))
		return
	}

	check := newFormCheck(io.MultiReader(start, src), params["boundary"])
	defer check.close()

	resp, err := s.up.Do(ctx, &upstream.Request{
		Alias:       m.Alias,
		Path:        path,
		BodyReader:  check,
		ContentType: ct,
		RequestID:   httpx.InfoFrom(ctx).RequestID,
	})
	switch {
	case check.found():
		if resp != nil {
			resp.Body.Close()
		}
		err = userIDFieldError()
	case err != nil && src.tooLarge() != nil:
		err = httpx.BodyError(src.tooLarge())
	}
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	relayAudio(w, r, resp)
}

// peekModel reads the multipart parts from r up to the model form field and
// returns its value. No model field, or an empty one, is missing_field
// (model); a user_id field before it is invalid_field (body.user_id); other
// errors are read or syntax errors (see uploadError).
func peekModel(r io.Reader, boundary string) (string, error) {
	mr := multipart.NewReader(r, boundary)
	for {
		part, err := mr.NextRawPart()
		if err == io.EOF { // the closing boundary; a cut body is a wrapped io.EOF
			return "", errcat.New(errcat.MissingField, "model",
				"model is required: a form field naming an audio transcription model alias.")
		}
		if err != nil {
			return "", err
		}
		if part.FormName() == "user_id" {
			return "", userIDFieldError()
		}
		if part.FormName() == "model" && part.FileName() == "" {
			b, err := io.ReadAll(io.LimitReader(part, maxModelField+1))
			if err != nil {
				return "", err
			}
			if len(b) == 0 {
				return "", errcat.New(errcat.MissingField, "model",
					"model is required: a form field naming an audio transcription model alias.")
			}
			return string(b), nil
		}
		if _, err := io.Copy(io.Discard, part); err != nil {
			return "", err
		}
	}
}

// uploadError maps a failure to read the upload's beginning.
func uploadError(err error, src *guardedBody, head *spill) error {
	var e *errcat.Error
	switch {
	case errors.As(err, &e):
		return e
	case src.tooLarge() != nil:
		return httpx.BodyError(src.tooLarge())
	case head.err != nil:
		return errcat.Internal(head.err)
	}
	// mime/multipart quotes the client's lines in its errors: the cause keeps
	// what went wrong, not what was sent.
	return &errcat.Error{Code: errcat.InvalidJSON, Message: "The request body is not valid multipart/form-data.",
		Cause: redact.Opaque(err, redact.Quotes(err.Error()))}
}

// relayAudio streams a successful upstream answer to the client as it is.
func relayAudio(w http.ResponseWriter, r *http.Request, resp *upstream.Response) {
	defer resp.Body.Close()
	body := bufio.NewReaderSize(resp.Body, 32<<10)
	// Nothing is sent before the answer's first byte, so a failure to read it
	// still gets a proper error status.
	if _, err := body.Peek(1); err != nil && !errors.Is(err, io.EOF) {
		httpx.WriteError(w, r, errcat.As(err))
		return
	}
	h := w.Header()
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/json"
	}
	h.Set("Content-Type", ct)
	if cl := resp.Header.Get("Content-Length"); cl != "" {
		h.Set("Content-Length", cl)
	}
	if resp.Fallback {
		h.Set(relay.HeaderNotice, relay.NoticeBackendFallback)
	}
	status := resp.StatusCode
	if status < 200 || status > 299 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if _, err := io.Copy(w, body); err != nil {
		ctx := r.Context()
		httpx.InfoFrom(ctx).Logger.LogAttrs(ctx, slog.LevelInfo, "audio answer not completed", slog.String("error", redact.Error(err)))
	}
}

var errUploadStopped = errors.New("openai: request body read after the handler ended")

// uploadStopGrace is how long a handler that is done waits for a read of the
// request body still in progress (an upstream that answered before it read the
// whole upload) before it cuts the read short with a read deadline.
const uploadStopGrace = time.Second

// guardedBody is the request body as the upload reads it. net/http forbids
// reading a request body once the handler returned, but the router may still
// be streaming it then (an upstream that answered before reading it all): stop
// makes later reads fail and waits for a read in progress.
type guardedBody struct {
	r       io.Reader
	mu      sync.Mutex
	active  chan struct{} // closed when the read in progress ends; nil when none
	stopped bool
	err     error // the first read error other than io.EOF
}

func newGuardedBody(r io.Reader) *guardedBody { return &guardedBody{r: r} }

// Read reads the body; it is not for concurrent use (one reader at a time: the
// handler, then the upstream's producer).
func (g *guardedBody) Read(p []byte) (int, error) {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return 0, errUploadStopped
	}
	done := make(chan struct{})
	g.active = done
	g.mu.Unlock()

	n, err := g.r.Read(p)

	g.mu.Lock()
	g.active = nil
	if err != nil && !errors.Is(err, io.EOF) && g.err == nil {
		g.err = err
	}
	g.mu.Unlock()
	close(done)
	return n, err
}

// tooLarge returns the body-limit error the body failed with, or nil.
func (g *guardedBody) tooLarge() *http.MaxBytesError {
	g.mu.Lock()
	defer g.mu.Unlock()
	var mbe *http.MaxBytesError
	if errors.As(g.err, &mbe) {
		return mbe
	}
	return nil
}

// stop ends reading: later reads fail, and a read in progress is waited for.
// When it takes longer than uploadStopGrace (a client that stalls), unblock
// cuts it short; the server then closes the connection after the answer.
func (g *guardedBody) stop(unblock func()) {
	g.mu.Lock()
	g.stopped = true
	done := g.active
	g.mu.Unlock()
	if done == nil {
		return
	}
	t := time.NewTimer(uploadStopGrace)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	unblock()
	<-done
}

// spill keeps the bytes written to it: the first max in memory, the rest in a
// temporary file.
type spill struct {
	max  int
	mem  []byte
	file *os.File
	err  error // the first write failure
}

func (s *spill) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if need := len(s.mem) + len(p); s.file == nil && need <= s.max {
		if need > cap(s.mem) { // grow by doubling: append's gentler growth allocates more in total
			grown := make([]byte, len(s.mem), min(s.max, max(2*cap(s.mem), need, 8<<10)))
			copy(grown, s.mem)
			s.mem = grown
		}
		s.mem = append(s.mem, p...)
		return len(p), nil
	}
	if s.file == nil {
		if s.file, s.err = os.CreateTemp("", "chatgw-upload-*"); s.err != nil {
			return 0, s.err
		}
	}
	n, err := s.file.Write(p)
	if err != nil {
		s.err = err
	}
	return n, err
}

// reader returns a reader of everything written.
func (s *spill) reader() (io.Reader, error) {
	if s.file == nil {
		return bytes.NewReader(s.mem), nil
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return io.MultiReader(bytes.NewReader(s.mem), s.file), nil
}

// close removes the temporary file, if any.
func (s *spill) close() {
	if s.file != nil {
		s.file.Close()
		os.Remove(s.file.Name())
	}
}
