package relay_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/relay"
)

func TestLimitReader(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		max     int64
		want    string
		tooLong bool
	}{
		{name: "under", in: "abc", max: 4, want: "abc"},
		{name: "exactly the limit", in: "abcd", max: 4, want: "abcd"},
		{name: "one byte over", in: "abcde", max: 4, want: "abcd", tooLong: true},
		{name: "far over", in: strings.Repeat("x", 1000), max: 10, want: strings.Repeat("x", 10), tooLong: true},
		{name: "empty", in: "", max: 4, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// iotest-style one-byte reads find an off-by-one a bulk read hides.
			for _, r := range []io.Reader{strings.NewReader(tc.in), oneByte{strings.NewReader(tc.in)}} {
				got, err := io.ReadAll(relay.LimitReader(r, tc.max))
				if string(got) != tc.want {
					t.Errorf("read %q, want %q", got, tc.want)
				}
				if tc.tooLong != (errcat.CodeOf(err) == errcat.UpstreamError) || (!tc.tooLong && err != nil) {
					t.Errorf("error %v, want too large: %v", err, tc.tooLong)
				}
			}
		})
	}
}

type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func TestJSONOverMaxBytes(t *testing.T) {
	big := `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("a", 200) + `"}}]}`
	w := newRecorder()
	committed := false
	res := relay.Response(w, httptest.NewRequest("POST", "/", nil), jsonResponse(big), relay.Options{
		MaxBytes: 100, Capture: new(relay.Capture),
		Commit: func(context.Context) error { committed = true; return nil },
	})
	if res.Complete || res.Started || errcat.CodeOf(res.Err) != errcat.UpstreamError {
		t.Errorf("Response() = %+v, want an upstream_error before the first byte", res)
	}
	if w.status != 502 || !strings.Contains(w.String(), "larger than 100 bytes") || committed {
		t.Errorf("status %d body %s committed %v; want 502 naming the limit, no commit", w.status, w.String(), committed)
	}
}

// endless is an upstream stream that never ends: a content delta forever,
// cut wherever the reader's buffer ends.
type endless struct{ pending string }

func (e *endless) Read(p []byte) (int, error) {
	if e.pending == "" {
		e.pending = "data: " + chunk(`{"index":0,"delta":{"content":"0123456789"},"finish_reason":null}`) + "\n\n"
	}
	n := copy(p, e.pending)
	e.pending = e.pending[n:]
	return n, nil
}

func TestCapturedStreamStopsAtMaxBytes(t *testing.T) {
	resp, b := sseResponse(&endless{})
	w := newRecorder()
	committed := false
	var c relay.Capture
	res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{
		MaxBytes: 1000, Capture: &c,
		Commit: func(context.Context) error { committed = true; return nil },
	})
	if res.Complete || !res.Started || errcat.CodeOf(res.Err) != errcat.UpstreamError || !b.isClosed() {
		t.Errorf("Response() = %+v, body closed %v; want a started, incomplete stream ended by upstream_error", res, b.isClosed())
	}
	out := w.String()
	if committed || !strings.Contains(out, "event: gw.error") || strings.Contains(out, "[DONE]") || !strings.Contains(out, "larger than 1000 bytes") {
		t.Errorf("committed %v, stream ends %q; want no commit and a gw.error naming the limit, no [DONE]", committed, out[max(0, len(out)-300):])
	}
	if len(c.Content) > 1010 {
		t.Errorf("captured %d bytes, want at most the limit and one delta", len(c.Content))
	}
}

func TestUncapturedAndUsageOnlyStreamsHaveNoLimit(t *testing.T) {
	deltas := strings.Repeat("data: "+chunk(`{"index":0,"delta":{"content":"0123456789"},"finish_reason":null}`)+"\n\n", 500)
	stream := deltas + "data: " + strings.Replace(chunk(""), `"choices":[]`,
		`"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":500,"total_tokens":501}`, 1) + "\n\ndata: [DONE]\n\n"
	for name, c := range map[string]*relay.Capture{"no capture": nil, "usage only": {UsageOnly: true}} {
		t.Run(name, func(t *testing.T) {
			resp, _ := sseResponse(strings.NewReader(stream))
			w := newRecorder()
			res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{MaxBytes: 1000, Capture: c})
			if !res.Complete || !strings.HasSuffix(w.String(), "data: [DONE]\n\n") {
				t.Fatalf("Response() = %+v; want the 5000-byte reply relayed whole past a 1000-byte limit", res)
			}
			if c != nil && (c.Content != "" || c.UsedTokens() != 501) {
				t.Errorf("usage-only capture kept %d bytes of text and %d used tokens; want none and 501", len(c.Content), c.UsedTokens())
			}
		})
	}
}
