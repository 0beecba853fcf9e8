package relay_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/upstream"
)

// TestStreamReadsTheUpstreamBodyToItsEnd: net/http's Transport keeps a
// connection for the next request only when the body was read to its end,
// and the chunked terminator often comes just after [DONE]. The upstream
// here sends it only once the relay reads again after [DONE]; two streams
// in a row must then share one connection.
func TestStreamReadsTheUpstreamBodyToItsEnd(t *testing.T) {
	release := make(chan struct{}, 1)
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+chunk(`{"index":0,"delta":{"content":"a"}}`)+"\n\ndata: [DONE]\n\n")
		w.(http.Flusher).Flush()
		select { // the terminator goes when the handler returns
		case <-release:
		case <-r.Context().Done():
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()

	for i := range 2 {
		hreq, _ := http.NewRequest("GET", srv.URL, nil)
		hresp, err := tr.RoundTrip(hreq)
		if err != nil {
			t.Fatal(err)
		}
		body := &releaseAfterDone{ReadCloser: hresp.Body, release: release}
		resp := &upstream.Response{StatusCode: 200, Header: hresp.Header, Body: body}
		w := newRecorder()
		if res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{}); !res.Complete {
			t.Fatalf("stream %d: Response() = %+v", i, res)
		}
		if !strings.HasSuffix(w.String(), "data: [DONE]\n\n") {
			t.Fatalf("stream %d: the client got %q", i, w.String())
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d upstream connections for two streams, want 1: the first body was not read to its end", n)
	}
}

// releaseAfterDone lets the upstream end its body once the relay reads
// again after the bytes of [DONE].
type releaseAfterDone struct {
	io.ReadCloser
	release chan<- struct{}
	sawDone bool
}

func (b *releaseAfterDone) Read(p []byte) (int, error) {
	if b.sawDone {
		select {
		case b.release <- struct{}{}:
		default:
		}
	}
	n, err := b.ReadCloser.Read(p)
	b.sawDone = b.sawDone || strings.Contains(string(p[:n]), "[DONE]")
	return n, err
}

// TestStreamEndsWhenTheUpstreamGoesOnAfterDone: reading to the end after
// [DONE] is bounded in time and bytes, so an upstream that does not end its
// body there still gives the client a complete stream, soon.
func TestStreamEndsWhenTheUpstreamGoesOnAfterDone(t *testing.T) {
	const done = "data: {\"choices\":[]}\n\ndata: [DONE]\n\n"
	for _, tt := range []struct {
		name  string
		after string // what each read after [DONE] brings; "" waits until Close
	}{
		{"silent", ""},
		{"chatty", ": still here\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				up := &goesOn{first: done, after: tt.after, closed: make(chan struct{})}
				resp := &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: up}
				w := newRecorder()
				start := time.Now()
				res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{})
				if !res.Complete || !strings.HasSuffix(w.String(), "data: [DONE]\n\n") {
					t.Fatalf("Response() = %+v, the client got %q", res, w.String())
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("the stream ended %v after [DONE]", d)
				}
				if !up.isClosed() {
					t.Error("the upstream body was not closed")
				}
			})
		})
	}
}

// goesOn is an upstream body that brings first, then after on every read,
// or, with after empty, nothing until it is closed.
type goesOn struct {
	first, after string
	mu           sync.Mutex
	read         bool
	closed       chan struct{}
	once         sync.Once
}

func (g *goesOn) Read(p []byte) (int, error) {
	g.mu.Lock()
	first := !g.read
	g.read = true
	g.mu.Unlock()
	switch {
	case first:
		return copy(p, g.first), nil
	case g.after != "":
		return copy(p, g.after), nil
	}
	<-g.closed
	return 0, errors.New("read on closed body")
}

func (g *goesOn) Close() error {
	g.once.Do(func() { close(g.closed) })
	return nil
}

func (g *goesOn) isClosed() bool {
	select {
	case <-g.closed:
		return true
	default:
		return false
	}
}
