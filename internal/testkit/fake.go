package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chatgw/gateway/upstream"
)

// Answer is one answer of a Fake: the response of an upstream call, or its
// error.
type Answer func() (*upstream.Response, error)

// JSON is the Answer of a backend's 200 JSON answer of body (JSONAnswer),
// from router alias scout-local as Stream's.
func JSON(body string) Answer {
	return func() (*upstream.Response, error) {
		resp := JSONAnswer(body)
		resp.RouterAlias = "scout-local"
		return resp, nil
	}
}

// Fallback is the Answer a as a fallback backend gives it, which the
// gateway's backend_fallback notice names: marked Fallback, from provider
// cloudA and router alias scout-cloudA.
func Fallback(a Answer) Answer {
	return func() (*upstream.Response, error) {
		resp, err := a()
		if resp != nil {
			resp.Fallback, resp.Provider, resp.RouterAlias = true, "cloudA", "scout-cloudA"
		}
		return resp, err
	}
}

// Fail is the Answer of an upstream call that fails with err: an
// *errcat.Error as the router's (upstream_error, upstream_timeout, ...), or
// another error, which the gateway answers internal_error.
func Fail(err error) Answer {
	return func() (*upstream.Response, error) { return nil, err }
}

// Stream is the Answer of a backend's 200 stream of transcript, the bytes
// as the backend wrote them (provider local, router alias scout-local).
func Stream(transcript string) Answer {
	return func() (*upstream.Response, error) {
		return &upstream.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(strings.NewReader(transcript)), Provider: "local", RouterAlias: "scout-local"}, nil
	}
}

// Transcript is the stream of data events of data, then data: [DONE].
func Transcript(data ...string) string {
	var b strings.Builder
	for _, d := range data {
		b.WriteString("data: " + d + "\n\n")
	}
	return b.String() + "data: [DONE]\n\n"
}

// Fake is an upstream.Upstream that records every call and answers its
// n-th call with its n-th Answer (counting every call, also those
// made before the Answer was added), with the last one when it has fewer,
// and with a JSON completion "Hello!" when it has none. It is safe for
// concurrent use.
type Fake struct {
	mu      sync.Mutex
	calls   []UpstreamCall
	answers []Answer
}

// UpstreamCall is one call a Fake got.
type UpstreamCall struct {
	Ctx context.Context  // the call's context, to see it cancelled
	Req upstream.Request // the request, its Body a copy
}

var _ upstream.Upstream = (*Fake)(nil)

// Add appends answers to the Fake's.
func (f *Fake) Add(answers ...Answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, answers...)
}

// Do records the call and answers as the Fake's doc says.
func (f *Fake) Do(ctx context.Context, req *upstream.Request) (*upstream.Response, error) {
	f.mu.Lock()
	c := UpstreamCall{Ctx: ctx, Req: *req}
	c.Req.Body = bytes.Clone(req.Body)
	f.calls = append(f.calls, c)
	i := min(len(f.calls), len(f.answers)) - 1
	var a Answer
	if i >= 0 {
		a = f.answers[i]
	}
	f.mu.Unlock()
	if a == nil {
		return JSONAnswer(Completion(`{"role":"assistant","content":"Hello!"}`, "stop")), nil
	}
	return a()
}

// Calls returns how many calls the Fake got.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// Received returns the calls the Fake got, in order.
func (f *Fake) Received() []UpstreamCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Last returns the body of the last call, indented and with a final line
// break (for golden files), or "" without calls. It fails t when the body
// is not JSON.
func (f *Fake) Last(t testing.TB) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return ""
	}
	body := f.calls[len(f.calls)-1].Req.Body
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		t.Fatalf("upstream body %s: %v", body, err)
	}
	return out.String() + "\n"
}
