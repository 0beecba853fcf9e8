package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// recorder is a ResponseWriter that is safe to read while a relay writes to it
// from its keepalive goroutine, and that counts flushes.
type recorder struct {
	mu      sync.Mutex
	header  http.Header
	status  int
	body    bytes.Buffer
	flushes int
	flushed int // len(body) at the last flush
	failW   bool
	// flushers are the goroutines that flushed, in order (goroutineID).
	flushers []string
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == 0 {
		r.status = status
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == 0 {
		r.status = 200
	}
	if r.failW {
		return 0, errors.New("client gone")
	}
	return r.body.Write(b)
}
func (r *recorder) Flush() {
	g := goroutineID()
	r.mu.Lock()
	r.flushers = append(r.flushers, g)
	r.flushes++
	r.flushed = r.body.Len()
	r.mu.Unlock()
}

// goroutineID is the calling goroutine's number, from its stack trace's
// first line ("goroutine 7 [running]:").
func goroutineID() string {
	var buf [64]byte
	line := string(buf[:runtime.Stack(buf[:], false)])
	return strings.Fields(line)[1]
}

// Flushed is what the client would have received: the body up to the last
// flush.
func (r *recorder) Flushed() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body.String()[:r.flushed]
}
func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body.String()
}

// body is an upstream body that records Close.
type body struct {
	io.Reader
	mu     sync.Mutex
	closed bool
}

func (b *body) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	if c, ok := b.Reader.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (b *body) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

func sseResponse(r io.Reader) (*upstream.Response, *body) {
	b := &body{Reader: r}
	return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}, Body: b}, b
}

func jsonResponse(s string) *upstream.Response {
	return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: &body{Reader: strings.NewReader(s)}}
}

const chunkFmt = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"scout-17b","choices":[%s]}`

func chunk(choices string) string { return strings.Replace(chunkFmt, "%s", choices, 1) }

// upstreamStream is a realistic OpenAI stream: role, two content deltas, a
// finish chunk, a usage chunk, [DONE].
var upstreamStream = "data: " + chunk(`{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}`) + "\n\n" +
	"data: " + chunk(`{"index":0,"delta":{"content":"Hello"},"finish_reason":null}`) + "\n\n" +
	": upstream comment\n\n" +
	"data: " + chunk(`{"index":0,"delta":{"content":", wörld"},"finish_reason":null}`) + "\n\n" +
	"data: " + chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`) + "\n\n" +
	"data: " + strings.Replace(chunk(""), `"choices":[]`, `"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}`, 1) + "\n\n" +
	"data: [DONE]\n\n"

func TestStreamGolden(t *testing.T) {
	resp, b := sseResponse(strings.NewReader(upstreamStream))
	resp.Fallback, resp.Provider, resp.RouterAlias = true, "cloudA", "scout-17b"
	w := newRecorder()
	w.Header().Set("X-Request-Id", "req-1")
	var capture relay.Capture
	res := relay.Response(w, httptest.NewRequest("POST", "/v1/chat/completions", nil), resp, relay.Options{
		Notices: []relay.Notice{relay.BackendFallback(resp), {Code: relay.NoticeHistoryTrimmed, Message: "2 turns left out."}},
		Applied: "max_tokens_floored=200",
		Capture: &capture,
		Model:   "lm-4-scout",
	})
	if diff := cmp.Diff(relay.Result{Stream: true, Started: true, Complete: true}, res); diff != "" {
		t.Errorf("Response() result mismatch (-want +got):\n%s", diff)
	}
	testkit.Golden(t, "stream.golden", w.String(), *update)
	wantHeader := http.Header{
		"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}, "X-Accel-Buffering": {"no"},
		"X-Request-Id": {"req-1"}, "Gw-Applied": {"max_tokens_floored=200"}, "X-Rust-Api-Applied": {"max_tokens_floored=200"},
		"Gw-Backend": {"cloudA"}, "Gw-Backend-Model": {"scout-17b"},
	}
	if diff := cmp.Diff(wantHeader, w.Header()); diff != "" {
		t.Errorf("headers mismatch (-want +got):\n%s", diff)
	}
	if w.status != 200 || !b.isClosed() {
		t.Errorf("status %d, body closed %v; want 200, closed", w.status, b.isClosed())
	}
	wantCapture := relay.Capture{ID: "chatcmpl-1", Model: "scout-17b", Created: 1700000000, Role: "assistant",
		Content: "Hello, wörld", FinishReason: "stop", Usage: json.RawMessage(`{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}`)}
	if diff := cmp.Diff(wantCapture, capture, cmp.AllowUnexported(relay.Capture{}), ignoreBuilders); diff != "" {
		t.Errorf("Capture mismatch (-want +got):\n%s", diff)
	}
}

var ignoreBuilders = cmp.FilterPath(func(p cmp.Path) bool {
	name := p.Last().String()
	return name == ".content" || name == ".calls" || name == ".fast" || name == ".size"
}, cmp.Ignore())

// events splits an SSE transcript into its events.
func events(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n\n"), "\n\n")
}

func TestStreamNoticeShape(t *testing.T) {
	resp, _ := sseResponse(strings.NewReader(upstreamStream))
	w := newRecorder()
	relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{Notices: []relay.Notice{{Code: "tool_loop_capped", Message: "m"}}})
	ev := events(w.String())
	notice := ev[len(ev)-2]
	name, data, _ := strings.Cut(notice, "\n")
	if name != "event: gw.notice" {
		t.Fatalf("event before [DONE] = %q, want gw.notice", notice)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": float64(1700000000), "model": "scout-17b",
		"choices": []any{}, "gw_notice": map[string]any{"code": "tool_loop_capped", "message": "m"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gw.notice data mismatch (-want +got):\n%s", diff)
	}
	if ev[len(ev)-1] != "data: [DONE]" {
		t.Errorf("last event = %q, want data: [DONE]", ev[len(ev)-1])
	}
}

type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

func TestStreamFailures(t *testing.T) {
	first := "data: " + chunk(`{"index":0,"delta":{"content":"Hel"}}`) + "\n\n"
	wantError := `event: gw.error` + "\n" + `data: {"error":{"type":"api_error","code":"upstream_error","message":"The upstream model failed while answering; the answer is incomplete.","param":null,"doc_url":"/docs/errors#upstream_error"},"gw_code":"upstream_error"}`
	tests := []struct {
		name   string
		stream io.Reader
	}{
		{"ends without DONE", strings.NewReader(first)},
		{"read error", &failingReader{strings.NewReader(first), errors.New("connection reset by 10.0.0.7")}},
		{"error object", strings.NewReader(first + `data: {"error":{"message":"secret backend detail","type":"server_error"}}` + "\n\n" + "data: [DONE]\n\n")},
		{"event too large", strings.NewReader(first + "data: " + strings.Repeat("x", 2<<20) + "\n\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := sseResponse(tt.stream)
			w := newRecorder()
			res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{Notices: []relay.Notice{{Code: "history_trimmed"}}})
			if res.Complete || !res.Started || errcat.CodeOf(res.Err) != errcat.UpstreamError {
				t.Errorf("Response() = %+v, want started, incomplete, upstream_error", res)
			}
			got := events(w.String())
			want := []string{strings.TrimSuffix(first, "\n\n"), wantError}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stream mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamFailsBeforeFirstEvent(t *testing.T) {
	resp, _ := sseResponse(strings.NewReader(""))
	w := newRecorder()
	res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{Applied: "max_tokens_floored=16"})
	if res.Started || errcat.CodeOf(res.Err) != errcat.UpstreamError {
		t.Errorf("Response() = %+v, want not started, upstream_error", res)
	}
	if w.status != 502 || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Gw-Applied") != "" {
		t.Errorf("status %d, headers %v; want a 502 JSON error without gw-applied", w.status, w.Header())
	}
	var env struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(w.String()), &env); err != nil || env.Error.Code != "upstream_error" {
		t.Errorf("body %s: want the upstream_error envelope", w.String())
	}
}

func TestStreamPassesNamedEventsAndLines(t *testing.T) {
	in := "event: ping\ndata: {}\n\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n"
	resp, _ := sseResponse(strings.NewReader(in))
	w := newRecorder()
	res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{})
	if !res.Complete {
		t.Fatalf("Response() = %+v", res)
	}
	if diff := cmp.Diff(in, w.String()); diff != "" {
		t.Errorf("stream mismatch (-want +got):\n%s", diff)
	}
}

func TestStreamEmptyUsesFallbackMeta(t *testing.T) {
	resp, _ := sseResponse(strings.NewReader("data: [DONE]\n\n"))
	w := newRecorder()
	relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{
		Model: "lm-4-scout", Notices: []relay.Notice{{Code: "safety_fallback", Message: "x"}}, Clock: fixedClock{},
	})
	want := "event: gw.notice\ndata: " + `{"id":"chatcmpl-gw","object":"chat.completion.chunk","created":1700000001,"model":"lm-4-scout","choices":[],"gw_notice":{"code":"safety_fallback","message":"x"}}` + "\n\ndata: [DONE]\n\n"
	if diff := cmp.Diff(want, w.String()); diff != "" {
		t.Errorf("stream mismatch (-want +got):\n%s", diff)
	}
}

type fixedClock struct{}

func (fixedClock) Now() time.Time { return time.Unix(1700000001, 0) }

// TestStreamKeepsCopies: the relay reads borrowed events, whose bytes the
// next read overwrites, so what outlives an event (the stream's meta for
// the notices, the Capture's fields) must be copies. The first chunk's id
// differs from the later ones', and the stream arrives a byte at a time, so
// that a kept reference into the reader's buffer would show other bytes.
func TestStreamKeepsCopies(t *testing.T) {
	later := func(choices string) string {
		return "data: " + strings.Replace(chunk(choices), "chatcmpl-1", "chatcmpl-zzzzzzzzzz", 1) + "\n\n"
	}
	in := "data: " + strings.Replace(chunk(`{"index":0,"delta":{"role":"assistant","content":"A"}}`), "chatcmpl-1", "chatcmpl-first", 1) + "\n\n" +
		later(`{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}`) +
		strings.Repeat(later(`{"index":0,"delta":{}}`), 20) +
		later(`],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3},"x":[`) +
		strings.Repeat(later(`{"index":0,"delta":{}}`), 20) +
		"data: [DONE]\n\n"
	for how, wrap := range map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
	} {
		resp, _ := sseResponse(wrap(strings.NewReader(in)))
		w := newRecorder()
		var c relay.Capture
		relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{
			Capture: &c,
			Notices: []relay.Notice{{Code: relay.NoticeHistoryTrimmed, Message: "2 turns left out."}},
		})
		want := relay.Capture{ID: "chatcmpl-first", Model: "scout-17b", Created: 1700000000, Role: "assistant",
			Content: "Ab", FinishReason: "stop", Usage: json.RawMessage(`{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}`)}
		if diff := cmp.Diff(want, c, cmp.AllowUnexported(relay.Capture{}), ignoreBuilders); diff != "" {
			t.Errorf("%s: Capture mismatch (-want +got):\n%s", how, diff)
		}
		evs := events(w.String())
		if notice := evs[len(evs)-2]; !strings.Contains(notice, `"id":"chatcmpl-first"`) || !strings.Contains(notice, `"model":"scout-17b"`) {
			t.Errorf("%s: notice %q, want the first chunk's id and model", how, notice)
		}
	}
}

func TestStreamCaptureToolCalls(t *testing.T) {
	in := "data: " + chunk(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}`) + "\n\n" +
		"data: " + chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}`) + "\n\n" +
		"data: " + chunk(`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","function":{"name":"now","arguments":"{}"}}]}}`) + "\n\n" +
		"data: " + chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}}`) + "\n\n" +
		"data: " + chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`) + "\n\n" +
		"data: [DONE]\n\n"
	resp, _ := sseResponse(strings.NewReader(in))
	var c relay.Capture
	relay.Response(newRecorder(), httptest.NewRequest("POST", "/", nil), resp, relay.Options{Capture: &c})
	want := []wire.ToolCall{
		{ID: "call_1", Type: "function", Function: wire.FunctionCall{Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
		{ID: "call_2", Type: "function", Function: wire.FunctionCall{Name: "now", Arguments: `{}`}},
	}
	if diff := cmp.Diff(want, c.ToolCalls); diff != "" {
		t.Errorf("ToolCalls mismatch (-want +got):\n%s", diff)
	}
	if c.FinishReason != "tool_calls" || c.Content != "" {
		t.Errorf("FinishReason %q Content %q", c.FinishReason, c.Content)
	}
}

func TestKeepalive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		resp, _ := sseResponse(pr)
		w := newRecorder()
		done := make(chan relay.Result)
		go func() {
			done <- relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{})
		}()
		first := "data: " + chunk(`{"index":0,"delta":{"content":"a"}}`) + "\n\n"
		io.WriteString(pw, first)
		time.Sleep(14 * time.Second)
		synctest.Wait()
		if got := w.Flushed(); got != first {
			t.Fatalf("after 14 s the client has %q, want only the first chunk", got)
		}
		time.Sleep(2 * time.Second) // 16 s of silence
		synctest.Wait()
		if got := w.Flushed(); got != first+": keepalive\n\n" {
			t.Fatalf("after 16 s the client has %q, want a keepalive", got)
		}
		time.Sleep(15 * time.Second)
		synctest.Wait()
		io.WriteString(pw, "data: [DONE]\n\n")
		pw.Close()
		res := <-done
		if !res.Complete {
			t.Errorf("Response() = %+v", res)
		}
		if got, want := w.String(), first+": keepalive\n\n: keepalive\n\ndata: [DONE]\n\n"; got != want {
			t.Errorf("stream = %q, want %q", got, want)
		}
	})
}

func TestKeepaliveBeforeFirstEventAndInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		resp, _ := sseResponse(pr)
		w := newRecorder()
		done := make(chan relay.Result)
		go func() {
			done <- relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{Keepalive: time.Second})
		}()
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if got := w.Flushed(); got != ": keepalive\n\n" || w.status != 200 {
			t.Fatalf("after 1.5 s the client has %d %q, want a started stream with one keepalive", w.status, got)
		}
		pw.Close() // ends without [DONE]: gw.error, since the stream started
		res := <-done
		if errcat.CodeOf(res.Err) != errcat.UpstreamError || !strings.Contains(w.String(), "event: gw.error") {
			t.Errorf("Response() = %+v, stream %q", res, w.String())
		}
	})
}

func TestClientDisconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		resp, b := sseResponse(pr)
		ctx, cancel := context.WithCancel(context.Background())
		r := httptest.NewRequest("POST", "/", nil).WithContext(ctx)
		w := newRecorder()
		done := make(chan relay.Result)
		go func() { done <- relay.Response(w, r, resp, relay.Options{}) }()
		io.WriteString(pw, "data: "+chunk(`{"index":0,"delta":{"content":"a"}}`)+"\n\n")
		synctest.Wait()
		start := time.Now()
		cancel() // the client went away
		res := <-done
		if elapsed := time.Since(start); elapsed != 0 {
			t.Errorf("Response() returned after %v of fake time, want at once", elapsed)
		}
		if !errors.Is(res.Err, context.Canceled) || res.Complete || !b.isClosed() {
			t.Errorf("Response() = %+v, body closed %v; want context.Canceled and a closed body", res, b.isClosed())
		}
		if _, err := pw.Write([]byte("x")); err == nil {
			t.Errorf("upstream can still write after the disconnect")
		}
		if strings.Contains(w.String(), "gw.error") {
			t.Errorf("wrote to a gone client: %q", w.String())
		}
		// synctest.Test fails if a goroutine of the relay is left behind.
	})
}

func TestWriteFailureStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		resp, b := sseResponse(pr)
		w := newRecorder()
		w.failW = true
		done := make(chan relay.Result)
		go func() { done <- relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{}) }()
		go io.WriteString(pw, "data: {}\n\n")
		res := <-done
		if res.Err == nil || res.Complete || !b.isClosed() {
			t.Errorf("Response() = %+v, closed %v; want a write error and a closed body", res, b.isClosed())
		}
	})
}

func TestJSON(t *testing.T) {
	const completion = `{"id":"chatcmpl-9","object":"chat.completion","created":1700000000,"model":"scout-17b",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hi there","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`
	w := newRecorder()
	var c relay.Capture
	res := relay.Response(w, httptest.NewRequest("POST", "/", nil), jsonResponse(completion), relay.Options{
		Stream:  true, // the Content-Type wins
		Notices: []relay.Notice{{Code: "backend_fallback"}, {Code: "history_trimmed"}},
		Applied: "max_tokens_floored=200",
		Capture: &c,
	})
	if diff := cmp.Diff(relay.Result{Started: true, Complete: true}, res); diff != "" {
		t.Errorf("Response() mismatch (-want +got):\n%s", diff)
	}
	wantHeader := http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(completion))},
		"Gw-Notice": {"backend_fallback, history_trimmed"}, "Gw-Applied": {"max_tokens_floored=200"}, "X-Rust-Api-Applied": {"max_tokens_floored=200"}}
	if diff := cmp.Diff(wantHeader, w.Header()); diff != "" {
		t.Errorf("headers mismatch (-want +got):\n%s", diff)
	}
	if w.status != 200 || w.String() != completion {
		t.Errorf("status %d body %s; want 200 and the body verbatim", w.status, w.String())
	}
	want := relay.Capture{ID: "chatcmpl-9", Model: "scout-17b", Created: 1700000000, Role: "assistant", Content: "Hi there",
		ToolCalls:    []wire.ToolCall{{ID: "c1", Type: "function", Function: wire.FunctionCall{Name: "f", Arguments: "{}"}}},
		FinishReason: "stop", Usage: json.RawMessage(`{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}`)}
	if diff := cmp.Diff(want, c, cmp.AllowUnexported(relay.Capture{}), ignoreBuilders); diff != "" {
		t.Errorf("Capture mismatch (-want +got):\n%s", diff)
	}
}

func TestJSONFailures(t *testing.T) {
	for name, in := range map[string]string{
		"not JSON":     "<html>bad gateway</html>",
		"error object": `{"error":{"message":"key sk-123 invalid"}}`,
		"truncated":    `{"id":"x","choices":[`,
	} {
		t.Run(name, func(t *testing.T) {
			w := newRecorder()
			res := relay.Response(w, httptest.NewRequest("POST", "/", nil), jsonResponse(in), relay.Options{Applied: "x=1"})
			if res.Started || errcat.CodeOf(res.Err) != errcat.UpstreamError || w.status != 502 {
				t.Errorf("Response() = %+v status %d; want a 502 upstream_error", res, w.status)
			}
			if strings.Contains(w.String(), "sk-123") || w.Header().Get("Gw-Applied") != "" {
				t.Errorf("leaked upstream detail or applied header: %s %v", w.String(), w.Header())
			}
		})
	}
}

func TestModeWithoutContentType(t *testing.T) {
	resp := &upstream.Response{StatusCode: 200, Header: http.Header{}, Body: &body{Reader: strings.NewReader("data: [DONE]\n\n")}}
	res := relay.Response(newRecorder(), httptest.NewRequest("POST", "/", nil), resp, relay.Options{Stream: true})
	if !res.Stream || !res.Complete {
		t.Errorf("Response() = %+v, want a complete stream", res)
	}
}

func TestBackendFallbackNotice(t *testing.T) {
	got := relay.BackendFallback(&upstream.Response{Provider: "cloudB", RouterAlias: "scout-cloudb", Fallback: true})
	want := relay.Notice{Code: "backend_fallback", Message: "The answer came from a fallback backend (scout-cloudb on cloudB)."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BackendFallback() mismatch (-want +got):\n%s", diff)
	}
}

func TestSSEError(t *testing.T) {
	w := newRecorder()
	s := relay.NewSSE(w)
	s.Error(errcat.Storage(errors.New("bolt: disk full")))
	name, data, _ := strings.Cut(strings.TrimSuffix(w.String(), "\n\n"), "\n")
	var env struct {
		Error  map[string]any `json:"error"`
		GWCode string         `json:"gw_code"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &env); err != nil {
		t.Fatalf("gw.error data %q: %v", data, err)
	}
	if name != "event: gw.error" || env.Error["code"] != "storage_error" || env.Error["type"] != "api_error" ||
		env.GWCode != "storage_error" || strings.Contains(data, "disk full") {
		t.Errorf("Error() wrote %q; want a gw.error storage_error envelope without the cause", w.String())
	}
}

func TestCommit(t *testing.T) {
	const completion = `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}`
	conflict := errcat.New(errcat.StorageError, "", "")
	tests := []struct {
		name       string
		resp       func() *upstream.Response
		commitErr  error
		wantStatus int
		wantBody   string // for streams, the transcript
		complete   bool
	}{
		{"json committed", func() *upstream.Response { return jsonResponse(completion) }, nil, 200, completion, true},
		{"json commit fails", func() *upstream.Response { return jsonResponse(completion) }, conflict, 500, "", false},
		{"stream committed", func() *upstream.Response { r, _ := sseResponse(strings.NewReader(upstreamStream)); return r }, nil, 200, "", true},
		{"stream commit fails", func() *upstream.Response { r, _ := sseResponse(strings.NewReader(upstreamStream)); return r }, conflict, 200, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newRecorder()
			var c relay.Capture
			var sawContent, sawStatus string
			res := relay.Response(w, httptest.NewRequest("POST", "/", nil), tt.resp(), relay.Options{
				Capture: &c,
				Notices: []relay.Notice{{Code: "history_trimmed"}},
				Applied: "max_tokens_floored=200",
				Commit: func(context.Context) error {
					sawContent = c.Content
					if strings.Contains(w.String(), "[DONE]") || strings.Contains(w.String(), "gw.notice") || (w.status != 0 && !strings.HasPrefix(tt.name, "stream")) {
						sawStatus = "acknowledged before commit"
					}
					return tt.commitErr
				},
			})
			if sawStatus != "" || (sawContent != "Hi" && sawContent != "Hello, wörld") {
				t.Errorf("at commit: %q, content %q; want nothing acknowledged and the capture filled", sawStatus, sawContent)
			}
			if res.Complete != tt.complete || w.status != tt.wantStatus || res.Committed != (tt.commitErr == nil) {
				t.Errorf("Response() = %+v, status %d; want complete %v, status %d, committed %v", res, w.status, tt.complete, tt.wantStatus, tt.commitErr == nil)
			}
			out := w.String()
			switch {
			case tt.name == "json committed" && out != completion:
				t.Errorf("body %q", out)
			case tt.name == "json commit fails" && (!strings.Contains(out, `"storage_error"`) || w.Header().Get("Gw-Applied") != ""):
				t.Errorf("body %q headers %v; want a storage_error envelope without gw-applied", out, w.Header())
			case tt.name == "stream committed" && !strings.HasSuffix(out, "data: [DONE]\n\n"):
				t.Errorf("stream %q", out)
			case tt.name == "stream commit fails" && (strings.Contains(out, "[DONE]") || strings.Contains(out, "gw.notice") || !strings.Contains(out, "event: gw.error")):
				t.Errorf("stream %q; want gw.error, no notice, no [DONE]", out)
			}
		})
	}
}

func TestCommitNotCalledOnFailure(t *testing.T) {
	resp, _ := sseResponse(strings.NewReader("data: {}\n\n"))
	called := false
	relay.Response(newRecorder(), httptest.NewRequest("POST", "/", nil), resp, relay.Options{
		Commit: func(context.Context) error { called = true; return nil },
	})
	if called {
		t.Errorf("Commit called for a stream that ended without [DONE]")
	}
}

func TestStreamTimeoutIsUpstreamTimeout(t *testing.T) {
	first := "data: " + chunk(`{"index":0,"delta":{"content":"Hel"}}`) + "\n\n"
	timeout := &errcat.Error{Code: errcat.UpstreamTimeout, Message: "upstream time-out reached", Cause: context.DeadlineExceeded}
	resp, _ := sseResponse(&failingReader{strings.NewReader(first), timeout})
	w := newRecorder()
	res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{})
	if errcat.CodeOf(res.Err) != errcat.UpstreamTimeout {
		t.Errorf("Response() = %+v, want upstream_timeout", res)
	}
	ev := events(w.String())
	if last := ev[len(ev)-1]; !strings.HasPrefix(last, "event: gw.error") || !strings.Contains(last, `"code":"upstream_timeout"`) {
		t.Errorf("last event = %q, want gw.error upstream_timeout", last)
	}
}

// parts is an upstream body that gives one part per Read (a part larger than
// the reader's buffer over several), and calls seen before each Read after
// the first with the index of the part it starts.
type parts struct {
	parts []string
	whole []string // parts as they were
	next  int
	seen  func(i int)
}

func (p *parts) Read(b []byte) (int, error) {
	if p.next == len(p.parts) {
		return 0, io.EOF
	}
	if p.next > 0 && p.parts[p.next] == p.whole[p.next] {
		p.seen(p.next)
	}
	n := copy(b, p.parts[p.next])
	if p.parts[p.next] = p.parts[p.next][n:]; p.parts[p.next] == "" {
		p.next++
	}
	return n, nil
}

// TestStreamFlushesBeforeWaiting: events that arrive together are flushed
// together, and every event is flushed before the relay waits for the
// upstream's next bytes, so none waits on the upstream. The stream's end is
// left to the server, which sends it with the end of the body.
func TestStreamFlushesBeforeWaiting(t *testing.T) {
	ev := func(content string) string {
		return "data: " + chunk(`{"index":0,"delta":{"content":"`+content+`"},"finish_reason":null}`) + "\n\n"
	}
	w := newRecorder()
	whole := []string{ev("a") + ev("b"), ev("c"), "data: [DONE]\n\n"}
	up := &parts{parts: slices.Clone(whole), whole: whole}
	up.seen = func(i int) {
		for _, part := range whole[:i] {
			if !strings.Contains(w.Flushed(), strings.TrimPrefix(part, "data: ")) {
				t.Errorf("read %d: the client has not received %q; it got %q", i, part, w.Flushed())
			}
		}
	}
	resp, _ := sseResponse(up)
	res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{})
	if rest := w.String()[len(w.Flushed()):]; !res.Complete || rest != "data: [DONE]\n\n" {
		t.Fatalf("Response() = %+v, unflushed %q; want complete, [DONE] left to the server", res, rest)
	}
	// a+b in one flush, c in one.
	if w.flushes != 2 {
		t.Errorf("%d flushes, want 2: one per upstream read that brought events and was followed by another", w.flushes)
	}
}

// TestStreamFirstFlushOnItsOwnGoroutine: the first flush, which writes the
// headers, runs on a goroutine of its own (net/http's header writer would
// otherwise double the stack every open stream keeps); later flushes run on
// the relay's.
func TestStreamFirstFlushOnItsOwnGoroutine(t *testing.T) {
	w := newRecorder()
	up := &parts{parts: []string{"data: " + chunk(`{"index":0,"delta":{"content":"a"}}`) + "\n\n",
		"data: " + chunk(`{"index":0,"delta":{"content":"b"}}`) + "\n\n", "data: [DONE]\n\n"}}
	up.whole = slices.Clone(up.parts)
	up.seen = func(int) {}
	resp, _ := sseResponse(up)
	if res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{}); !res.Complete {
		t.Fatalf("Response() = %+v", res)
	}
	me := goroutineID()
	if len(w.flushers) < 2 || w.flushers[0] == me || w.flushers[1] != me {
		t.Errorf("flushed by goroutines %v, the relay's is %s; want the first elsewhere, the rest on the relay's", w.flushers, me)
	}
}

// TestStreamFlushedBeforeCommit: what the relay held is sent before the
// commit runs, which may take a while (a turn's fsync).
func TestStreamFlushedBeforeCommit(t *testing.T) {
	w := newRecorder()
	last := "data: " + chunk(`{"index":0,"delta":{"content":"z"},"finish_reason":"stop"}`) + "\n\n"
	resp, _ := sseResponse(strings.NewReader(last + "data: [DONE]\n\n"))
	var atCommit string
	res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{
		Commit: func(context.Context) error { atCommit = w.Flushed(); return nil }})
	if !res.Complete || atCommit != last {
		t.Errorf("Response() = %+v; the client had %q when the commit ran, want the last chunk", res, atCommit)
	}
}

// TestIsStream checks which answers count as streams: an SSE content type in
// any spelling, or the request's flag when the answer names none.
func TestIsStream(t *testing.T) {
	for _, tt := range []struct {
		ct        string
		requested bool
		want      bool
	}{
		{"", true, true},
		{"", false, false},
		{"text/event-stream", false, true},
		{"text/event-stream; charset=utf-8", false, true},
		{"Text/Event-Stream", false, true},
		{"application/json", true, false},
		{"application/json; charset=utf-8", true, false},
		{"text/event-stream;;", false, true}, // bad parameters, an SSE type still
		{"event-stream", true, false},        // not a media type
	} {
		h := http.Header{}
		if tt.ct != "" {
			h.Set("Content-Type", tt.ct)
		}
		if got := relay.IsStream(h, tt.requested); got != tt.want {
			t.Errorf("IsStream(%q, %v) = %v, want %v", tt.ct, tt.requested, got, tt.want)
		}
	}
}

// writeCounter counts the writes to the connections of a server's listener.
type writeCounter struct {
	net.Listener
	writes atomic.Int64
}

func (l *writeCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return countedConn{c, &l.writes}, err
}

type countedConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countedConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestStreamWritesOnTheWire: through net/http, a stream that the upstream
// sent in two reads costs the client's connection two writes: the headers
// with the first read's events, and the rest with the end of the chunked
// body, which the server writes when the handler returns.
func TestStreamWritesOnTheWire(t *testing.T) {
	ev := func(content string) string {
		return "data: " + chunk(`{"index":0,"delta":{"content":"`+content+`"},"finish_reason":null}`) + "\n\n"
	}
	whole := []string{ev("a"), ev("b") + "data: [DONE]\n\n"}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, _ := sseResponse(&parts{parts: slices.Clone(whole), whole: whole, seen: func(int) {}})
		relay.Response(w, r, resp, relay.Options{})
	}))
	l := &writeCounter{Listener: srv.Listener}
	srv.Listener = l
	srv.Start()
	defer srv.Close()

	res, err := http.Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || !strings.HasSuffix(string(got), "data: [DONE]\n\n") {
		t.Fatalf("body %q, %v; want the stream to its [DONE]", got, err)
	}
	if n := l.writes.Load(); n != 2 {
		t.Errorf("%d writes to the connection, want 2: headers with the first events, then the rest with the body's end", n)
	}
}
