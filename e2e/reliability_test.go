package e2e_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// TestStalledBodiesLeaveTheServerServing is the probe of an attacker without
// a token: 1,100 connections, each sending the headers and one byte of a
// 10-byte body and then nothing, against a gatewayd whose open-file limit is
// 1024. Each is answered at once without waiting for its body; /healthz and
// authenticated traffic stay served, and accept never runs out of
// descriptors. A token holder who stalls bodies gets its rate limit's burst
// of them held (until the body time-out), and 429 for the rest.
func TestStalledBodiesLeaveTheServerServing(t *testing.T) {
	g := start(t, func(s *setup) { s.FileLimit = 1024 })
	host := strings.TrimPrefix(g.Base, "http://")
	heads := []string{
		"POST /healthz HTTP/1.1\r\nHost: x\r\n",
		"GET /healthz HTTP/1.1\r\nHost: x\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n",
		"POST /c1/chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\n",
		// tokSlow refills one request in 10 s: a slow dial loop on a loaded
		// machine must not let a third stalled body through.
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tokSlow + "\r\n",
	}
	const n = 1100
	var answered atomic.Int64
	var wg sync.WaitGroup
	conns := make([]net.Conn, n)
	for i := range n {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns[i] = c
		defer c.Close() // held open from this side until the end
		io.WriteString(c, heads[i%len(heads)]+"Content-Length: 10\r\n\r\nx")
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				resp.Body.Close()
				answered.Add(1)
			}
		}()
	}
	// While the stalled bodies are open: health and real traffic are served.
	if r := g.get(t, "/healthz", "", ""); r.Status != 200 {
		t.Errorf("healthz during the probe: %s", r)
	}
	r := g.do(t, "POST", "/v1/chat/completions", tokMember, "", map[string]any{
		"model": "lm-4-scout-local", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}, nil)
	if r.Status != 200 {
		t.Errorf("authenticated chat during the probe: %s", r)
	}
	if !waitFor(5*time.Second, func() bool { return answered.Load() >= n-2 }) {
		t.Errorf("%d of %d stalled requests answered within 5 s; want all but the rate-limited token's burst of 2", answered.Load(), n)
	}
	if !strings.Contains(g.stderr.String(), `"max_conns":480`) {
		t.Errorf("gatewayd did not run with the 1024 file limit (connection cap 480):\n%s", tail(g.stderr.String(), 2000))
	}
	if strings.Contains(g.stderr.String(), "too many open files") {
		t.Errorf("gatewayd ran out of descriptors:\n%s", tail(g.stderr.String(), 2000))
	}
}

// TestShutdownEndsStreamsWithGwError: a stream still running when the
// shutdown grace runs out ends with a gw.error event saying the gateway shuts
// down, not with a cut connection; gatewayd then exits 0.
func TestShutdownEndsStreamsWithGwError(t *testing.T) {
	g := start(t, func(s *setup) {
		s.Args = []string{"-shutdown-timeout", "300ms"}
		s.Local = upstreamtest.Config{Reply: upstreamtest.Reply{Chunks: 100, Interval: 100 * time.Millisecond}}
	})
	req, _ := http.NewRequest("POST", g.Base+"/v1/chat/completions", strings.NewReader(
		`{"model":"lm-4-scout-local","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+tokMember)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if line, _ := br.ReadString('\n'); !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q, want a chunk", line)
	}
	stopped := make(chan struct{})
	go func() { defer close(stopped); g.Stop() }() // SIGTERM; checks exit 0
	rest, _ := io.ReadAll(br)
	<-stopped
	end := string(rest[max(0, len(rest)-400):])
	if !strings.Contains(end, "event: gw.error\n") || !strings.Contains(end, `"code":"upstream_unavailable"`) ||
		!strings.Contains(end, "shutting down") || strings.Contains(end, "[DONE]") {
		t.Errorf("stream cut by the shutdown ends %q; want a gw.error upstream_unavailable event saying the gateway shuts down", end)
	}
}
