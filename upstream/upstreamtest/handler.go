package upstreamtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"

	"github.com/chatgw/gateway/upstream"
	"sync/atomic"
)

// Config configures a fake backend. The zero value answers every call with a
// zero Reply and records every call.
type Config struct {
	// Reply answers every call for which Script has no reply left.
	Reply Reply
	// Script holds replies for the next calls, in arrival order (GET /models
	// probes included); each is used once.
	Script []Reply
	// DiscardCalls turns recording off (benchmarks): Calls returns nothing, the
	// counters still work.
	DiscardCalls bool
	// ID is the id of completions and chunks; "" means "chatcmpl-upstreamtest".
	ID string
	// Created is their created time; 0 means 1700000000.
	Created int64
}

// Call is one request the fake received.
type Call struct {
	Method string
	Path   string // as received, such as /v1/chat/completions
	Header http.Header
	Body   []byte
	// Model is the "model" of a JSON or multipart/form-data body.
	Model string
	// Stream is the "stream" of a JSON body.
	Stream bool
	// Canceled is true when the request's context ended (the client cancelled or
	// disconnected) while the fake was waiting (Latency, Hang, Interval).
	Canceled bool
}

// Handler is the fake OpenAI-compatible backend as an http.Handler. It serves
// POST /chat/completions, /embeddings, /images/generations,
// /audio/transcriptions, /audio/translations and GET /models, with or without a
// /v1 prefix. It is safe for concurrent use; its methods change the replies
// while it serves.
type Handler struct {
	cfg      Config
	closing  chan struct{}
	closeOne sync.Once
	count    atomic.Int64
	canceled atomic.Int64

	mu      sync.Mutex
	reply   *compiled
	script  []*compiled
	calls   []*Call
	changed chan struct{} // closed and replaced when a call arrives or ends
}

// NewHandler returns a fake backend handler (no testing.TB needed, for
// benchmarks and examples). Call Close when done to release hanging calls.
func NewHandler(cfg Config) *Handler {
	if cfg.ID == "" {
		cfg.ID = "chatcmpl-upstreamtest"
	}
	if cfg.Created == 0 {
		cfg.Created = 1700000000
	}
	h := &Handler{cfg: cfg, closing: make(chan struct{}), changed: make(chan struct{})}
	h.reply = compile(cfg.Reply, &h.cfg)
	h.Enqueue(cfg.Script...)
	return h
}

// SetReply replaces the reply used when the script is exhausted.
func (h *Handler) SetReply(r Reply) {
	c := compile(r, &h.cfg)
	h.mu.Lock()
	h.reply = c
	h.mu.Unlock()
}

// Enqueue appends replies for the next calls.
func (h *Handler) Enqueue(rs ...Reply) {
	cs := make([]*compiled, len(rs))
	for i, r := range rs {
		cs[i] = compile(r, &h.cfg)
	}
	h.mu.Lock()
	h.script = append(h.script, cs...)
	h.mu.Unlock()
}

// Calls returns a copy of the calls received so far, in arrival order.
func (h *Handler) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Call, len(h.calls))
	for i, c := range h.calls {
		out[i] = *c
	}
	return out
}

// CallCount returns the number of calls received, recorded or not.
func (h *Handler) CallCount() int { return int(h.count.Load()) }

// CanceledCount returns the number of calls whose context ended while the fake
// was waiting.
func (h *Handler) CanceledCount() int { return int(h.canceled.Load()) }

// AwaitCalls waits until at least n calls arrived, or ctx ends (its error).
func (h *Handler) AwaitCalls(ctx context.Context, n int) error {
	return h.await(ctx, func() bool { return h.CallCount() >= n })
}

// AwaitCanceled waits until at least n calls saw their context end, or ctx ends.
func (h *Handler) AwaitCanceled(ctx context.Context, n int) error {
	return h.await(ctx, func() bool { return h.CanceledCount() >= n })
}

func (h *Handler) await(ctx context.Context, ok func() bool) error {
	for {
		h.mu.Lock()
		ch := h.changed
		h.mu.Unlock()
		if ok() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close releases calls that are hanging or waiting; later calls answer at once.
// It is idempotent.
func (h *Handler) Close() {
	h.closeOne.Do(func() { close(h.closing) })
}

func (h *Handler) notify() {
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

// request is what the fake reads from a call's body.
type request struct {
	Model         string          `json:"model"`
	Stream        bool            `json:"stream"`
	N             int             `json:"n"`
	Input         json.RawMessage `json:"input"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// ServeHTTP answers one call with the next reply.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("User-Agent") == upstream.LearnUserAgent {
		// The gateway's survey of context windows (upstream.Learner), at
		// start and on SIGHUP: a fake says none, outside its script and its
		// call log, so that scripts and counts stay those of the calls a
		// test makes.
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req request
	if mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		req.Model = multipartField(body, params["boundary"], "model")
	} else if len(body) > 0 {
		_ = json.Unmarshal(body, &req)
	}

	h.mu.Lock()
	rep := h.reply
	if len(h.script) > 0 {
		rep = h.script[0]
		h.script = h.script[1:]
	}
	var call *Call
	if !h.cfg.DiscardCalls {
		call = &Call{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body,
			Model: req.Model, Stream: req.Stream}
		h.calls = append(h.calls, call)
	}
	h.mu.Unlock()
	h.count.Add(1)
	h.notify()

	a := &answer{h: h, w: w, r: r, req: &req, rep: rep, call: call}
	a.serve(strings.TrimPrefix(r.URL.Path, "/v1"))
}

// markCanceled records that the call's context ended while the fake waited.
func (h *Handler) markCanceled(c *Call) {
	if c != nil {
		h.mu.Lock()
		c.Canceled = true
		h.mu.Unlock()
	}
	h.canceled.Add(1)
	h.notify()
}

func multipartField(body []byte, boundary, name string) string {
	if boundary == "" {
		return ""
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := mr.NextPart()
		if err != nil {
			return ""
		}
		if p.FormName() == name {
			v, _ := io.ReadAll(io.LimitReader(p, 1024))
			return string(v)
		}
	}
}
