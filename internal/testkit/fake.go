package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chatgw/gateway/upstream"
)

// Answer is one answer of a Fake: the response of an upstream call, or its
// error.
type Answer func() (*upstream.Response, error)

// JSON is the Answer of a backend's 200 JSON answer of body (JSONAnswer).
func JSON(body string) Answer {
	return func() (*upstream.Response, error) { return JSONAnswer(body), nil }
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

// Fake is an upstream.Upstream that records the body of every call and
// answers its n-th call with its n-th Answer (counting every call, also those
// made before the Answer was added), with the last one when it has fewer,
// and with a JSON completion "Hello!" when it has none. It is safe for
// concurrent use.
type Fake struct {
	mu      sync.Mutex
	bodies  [][]byte
	answers []Answer
}

var _ upstream.Upstream = (*Fake)(nil)

// Add appends answers to the Fake's.
func (f *Fake) Add(answers ...Answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, answers...)
}

// Do records req's body and answers as the Fake's doc says.
func (f *Fake) Do(_ context.Context, req *upstream.Request) (*upstream.Response, error) {
	f.mu.Lock()
	f.bodies = append(f.bodies, bytes.Clone(req.Body))
	i := min(len(f.bodies), len(f.answers)) - 1
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
	return len(f.bodies)
}

// Last returns the body of the last call, indented and with a final line
// break (for golden files), or "" without calls. It fails t when the body
// is not JSON.
func (f *Fake) Last(t testing.TB) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		return ""
	}
	var out bytes.Buffer
	if err := json.Indent(&out, f.bodies[len(f.bodies)-1], "", "  "); err != nil {
		t.Fatalf("upstream body %s: %v", f.bodies[len(f.bodies)-1], err)
	}
	return out.String() + "\n"
}
