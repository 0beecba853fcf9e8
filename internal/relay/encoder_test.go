package relay_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/shutdown"
	"github.com/google/go-cmp/cmp"
)

// tagEncoder is an Encoder of a made-up API: each chunk becomes the event
// "x.chunk" with the chunk's content deltas, the end "x.end", notices
// "gw.notice" with their code, an error "x.error" with its code, the
// keepalive "x.ping". It records what it was given.
type tagEncoder struct {
	chunks  []string
	failOn  string // Chunk fails on a chunk containing it
	jsonErr error  // Completion's error
}

func (e *tagEncoder) Completion(b []byte) ([]byte, error) {
	if e.jsonErr != nil {
		return nil, e.jsonErr
	}
	return append([]byte(`{"x":`), append(b, '}')...), nil
}

func (e *tagEncoder) Chunk(evs []relay.Event, data string) ([]relay.Event, error) {
	e.chunks = append(e.chunks, data)
	if e.failOn != "" && strings.Contains(data, e.failOn) {
		return append(evs, relay.Event{Name: "x.partial", Data: "{}"}), errors.New("untranslatable chunk")
	}
	var c struct {
		Choices []struct {
			Delta struct{ Content string } `json:"delta"`
		} `json:"choices"`
	}
	json.Unmarshal([]byte(data), &c)
	text := ""
	for _, ch := range c.Choices {
		text += ch.Delta.Content
	}
	if text == "" {
		return evs, nil // nothing for the client
	}
	return append(evs, relay.Event{Name: "x.chunk", Data: text}), nil
}

func (e *tagEncoder) End(evs []relay.Event, notices []relay.Notice) []relay.Event {
	for _, n := range notices {
		evs = append(evs, relay.Event{Name: "gw.notice", Data: n.Code})
	}
	return append(evs, relay.Event{Name: "x.end", Data: "{}"})
}

func (e *tagEncoder) Error(evs []relay.Event, err *errcat.Error) []relay.Event {
	return append(evs, relay.Event{Name: "x.error", Data: string(err.Code)})
}

func (e *tagEncoder) Keepalive() (relay.Event, bool) {
	return relay.Event{Name: "x.ping", Data: "{}"}, true
}

// TestEncoderStream: the relay reads the upstream stream and hands each
// chunk's data to the Encoder, whose events the client gets (named upstream
// events and comments dropped); [DONE] becomes the Encoder's end with the
// notices, which the header repeats; Capture and the ticket read the
// upstream's own chunks.
func TestEncoderStream(t *testing.T) {
	in := "event: vendor\ndata: {}\n\n" + upstreamStream
	resp, b := sseResponse(strings.NewReader(in))
	enc := &tagEncoder{}
	w := newRecorder()
	var c relay.Capture
	res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{
		Encoder: enc, Capture: &c, Applied: "max_tokens_floored=200",
		Notices: []relay.Notice{{Code: "backend_fallback", Message: "m"}, {Code: "history_trimmed"}},
	})
	if diff := cmp.Diff(relay.Result{Stream: true, Started: true, Complete: true}, res); diff != "" {
		t.Errorf("Response() mismatch (-want +got):\n%s", diff)
	}
	want := "event: x.chunk\ndata: Hello\n\nevent: x.chunk\ndata: , wörld\n\n" +
		"event: gw.notice\ndata: backend_fallback\n\nevent: gw.notice\ndata: history_trimmed\n\nevent: x.end\ndata: {}\n\n"
	if diff := cmp.Diff(want, w.String()); diff != "" {
		t.Errorf("stream mismatch (-want +got):\n%s", diff)
	}
	if len(enc.chunks) != 5 {
		t.Errorf("Encoder got %d chunks, want the 5 unnamed data events before [DONE]: %q", len(enc.chunks), enc.chunks)
	}
	wantHeader := http.Header{
		"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}, "X-Accel-Buffering": {"no"},
		"Gw-Notice": {"backend_fallback, history_trimmed"}, "Gw-Applied": {"max_tokens_floored=200"}, "X-Rust-Api-Applied": {"max_tokens_floored=200"},
	}
	if diff := cmp.Diff(wantHeader, w.Header()); diff != "" {
		t.Errorf("headers mismatch (-want +got):\n%s", diff)
	}
	if c.Content != "Hello, wörld" || c.UsedTokens() != 12 || !b.isClosed() {
		t.Errorf("Capture %q used %d, body closed %v; want the upstream's reply and usage", c.Content, c.UsedTokens(), b.isClosed())
	}
}

// TestEncoderStreamFailures: a stream cut after it started ends with the
// Encoder's error events (no end); an Encoder that fails on a chunk ends it
// the same way, after the events it returned; before anything was sent the
// failure is the JSON error in the route's shape, without GW-Notice.
func TestEncoderStreamFailures(t *testing.T) {
	first := "data: " + chunk(`{"index":0,"delta":{"content":"Hel"}}`) + "\n\n"
	second := "data: " + chunk(`{"index":0,"delta":{"content":"BAD"}}`) + "\n\n"
	tests := []struct {
		name   string
		stream string
		failOn string
		want   string
	}{
		{"cut by the upstream", first, "", "event: x.chunk\ndata: Hel\n\nevent: x.error\ndata: upstream_error\n\n"},
		{"error object", first + `data: {"error":{"message":"m"}}` + "\n\n", "", "event: x.chunk\ndata: Hel\n\nevent: x.error\ndata: upstream_error\n\n"},
		{"untranslatable chunk", first + second + "data: [DONE]\n\n", "BAD",
			"event: x.chunk\ndata: Hel\n\nevent: x.partial\ndata: {}\n\nevent: x.error\ndata: upstream_error\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := sseResponse(strings.NewReader(tt.stream))
			w := newRecorder()
			res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{
				Encoder: &tagEncoder{failOn: tt.failOn}, Notices: []relay.Notice{{Code: "history_trimmed"}},
			})
			if res.Complete || !res.Started || errcat.CodeOf(res.Err) != errcat.UpstreamError {
				t.Errorf("Response() = %+v, want started, incomplete, upstream_error", res)
			}
			if diff := cmp.Diff(tt.want, w.String()); diff != "" {
				t.Errorf("stream mismatch (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("before the first byte", func(t *testing.T) {
		resp, _ := sseResponse(strings.NewReader("data: [DONE"))
		w := newRecorder()
		r := httptest.NewRequest("POST", "/", nil)
		info := new(httpx.Info)
		info.Init("req-1", slog.New(slog.DiscardHandler))
		info.ErrorFormat = func(p errcat.Public) []byte { return []byte(`{"shape":"x","code":"` + string(p.Code) + `"}`) }
		r = r.WithContext(httpx.WithInfo(r.Context(), info))
		res := relay.Response(w, r, resp, relay.Options{Encoder: &tagEncoder{}, Notices: []relay.Notice{{Code: "backend_fallback"}}})
		if res.Started || w.status != 502 || w.Header().Get("Gw-Notice") != "" {
			t.Errorf("Response() = %+v, status %d, GW-Notice %q; want an unstarted 502 without notices", res, w.status, w.Header().Get("Gw-Notice"))
		}
		if got, want := w.String(), `{"shape":"x","code":"upstream_error"}`+"\n"; got != want {
			t.Errorf("body = %s, want %s", got, want)
		}
	})

	t.Run("shutdown", func(t *testing.T) {
		pr, pw := io.Pipe()
		resp, _ := sseResponse(pr)
		sd := new(shutdown.Signal)
		r := httptest.NewRequest("POST", "/", nil)
		info := new(httpx.Info)
		info.Init("req-1", slog.New(slog.DiscardHandler))
		info.Shutdown = sd
		r = r.WithContext(httpx.WithInfo(r.Context(), info))
		w := newRecorder()
		done := make(chan relay.Result)
		go func() { done <- relay.Response(w, r, resp, relay.Options{Encoder: &tagEncoder{}}) }()
		io.WriteString(pw, first)
		for !strings.Contains(w.String(), "Hel") {
			time.Sleep(time.Millisecond)
		}
		sd.End()
		res := <-done
		if got, want := w.String(), "event: x.chunk\ndata: Hel\n\nevent: x.error\ndata: upstream_unavailable\n\n"; got != want || res.Complete {
			t.Errorf("stream = %q (%+v), want %q", got, res, want)
		}
	})
}

// TestEncoderJSON: the Encoder's body is sent with its own Content-Length
// and the notices in GW-Notice; Capture reads the upstream's completion;
// an Encoder that cannot translate answers 502 upstream_error, and Commit
// does not run.
func TestEncoderJSON(t *testing.T) {
	const completion = `{"id":"chatcmpl-9","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"total_tokens":7}}`
	w := newRecorder()
	var c relay.Capture
	res := relay.Response(w, httptest.NewRequest("POST", "/", nil), jsonResponse(completion), relay.Options{
		Encoder: &tagEncoder{}, Capture: &c, Notices: []relay.Notice{{Code: "backend_fallback"}},
	})
	want := `{"x":` + completion + `}`
	if !res.Complete || w.String() != want || w.Header().Get("Content-Length") != strconv.Itoa(len(want)) || w.Header().Get("Gw-Notice") != "backend_fallback" {
		t.Errorf("Response() = %+v, body %s, headers %v; want %s", res, w.String(), w.Header(), want)
	}
	if c.Content != "Hi" || c.UsedTokens() != 7 {
		t.Errorf("Capture = %q, %d tokens; want the upstream's", c.Content, c.UsedTokens())
	}

	w = newRecorder()
	committed := false
	res = relay.Response(w, httptest.NewRequest("POST", "/", nil), jsonResponse(completion), relay.Options{
		Encoder: &tagEncoder{jsonErr: errors.New("no")},
		Commit:  func(context.Context) error { committed = true; return nil },
	})
	if res.Started || w.status != 502 || errcat.CodeOf(res.Err) != errcat.UpstreamError || committed {
		t.Errorf("Response() = %+v, status %d, committed %v; want 502 upstream_error, nothing stored", res, w.status, committed)
	}
}

// TestEncoderKeepalive: the Encoder's keepalive event replaces the comment.
func TestEncoderKeepalive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		resp, _ := sseResponse(pr)
		w := newRecorder()
		done := make(chan relay.Result)
		go func() {
			done <- relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{Encoder: &tagEncoder{}, Keepalive: time.Second})
		}()
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		io.WriteString(pw, "data: [DONE]\n\n")
		pw.Close()
		<-done
		if got, want := w.String(), "event: x.ping\ndata: {}\n\nevent: x.end\ndata: {}\n\n"; got != want {
			t.Errorf("stream = %q, want %q", got, want)
		}
	})
}
