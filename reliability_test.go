package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/upstream"
)

// rawExchange sends raw, an HTTP/1.1 request whose body may be short of its
// Content-Length, and returns the answer and whether the server closed the
// connection after it. It fails the test when nothing happens within limit.
func rawExchange(t *testing.T, url, raw string, limit time.Duration) (*http.Response, string, bool) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(limit))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", limit, err)
	}
	body, _ := io.ReadAll(resp.Body)
	_, err = br.ReadByte() // the server closes: EOF at once; keeps it: the deadline
	closed := err == io.EOF
	return resp, string(body), closed
}

// TestUnreadBodyIsNotAwaited: a request the gateway answers without reading
// its body (a public route, a missing or wrong token) is answered at once
// and its connection closed, even when the body never arrives; net/http
// would otherwise wait for the body before answering, holding the
// connection for as long as the client likes.
func TestUnreadBodyIsNotAwaited(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ name, head, want string }{
		{"public route", "GET /healthz HTTP/1.1\r\nHost: x\r\n", "200"},
		{"public route, wrong method", "POST /healthz HTTP/1.1\r\nHost: x\r\n", "405"},
		{"no token", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n", "401"},
		{"wrong token", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n", "401"},
		{"unknown route", "POST /nowhere HTTP/1.1\r\nHost: x\r\n", "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.head + "Content-Length: 10\r\n\r\nx" // 1 of 10 bytes, never the rest
			resp, _, closed := rawExchange(t, e.srv.URL, raw, 3*time.Second)
			if got := fmt.Sprint(resp.StatusCode); got != tc.want || !closed {
				t.Errorf("status %s, closed %v; want %s and the connection closed", got, closed, tc.want)
			}
		})
	}
}

func TestStalledBodyIsCut(t *testing.T) {
	e := newEnv(t, gateway.WithBodyTimeout(100*time.Millisecond, 0))
	raw := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer member\r\nContent-Length: 100\r\n\r\n{\"model\":"
	resp, body, closed := rawExchange(t, e.srv.URL, raw, 3*time.Second)
	if resp.StatusCode != 400 || !strings.Contains(body, `"invalid_json"`) || !strings.Contains(body, "did not arrive in time") || !closed {
		t.Errorf("status %d, body %s, closed %v; want 400 invalid_json saying the body was late, connection closed", resp.StatusCode, body, closed)
	}
}

// TestBodyAtMinimumRateIsRead: a body that keeps arriving at the minimum rate
// is read past the grace, and the connection stays usable afterwards.
func TestBodyAtMinimumRateIsRead(t *testing.T) {
	e := newEnv(t, gateway.WithBodyTimeout(150*time.Millisecond, 200))
	c, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	body := `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}]}` // 67 bytes
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer member\r\nContent-Length: %d\r\n\r\n", len(body))
	// 3 pieces 100 ms apart: 300 ms in all, past the 150 ms grace, within
	// what 200 bytes/s allow for the bytes already sent.
	for i := 0; i < len(body); i += 23 {
		io.WriteString(c, body[i:min(i+23, len(body))])
		time.Sleep(100 * time.Millisecond)
	}
	br := bufio.NewReader(c)
	for round := range 2 { // then the connection serves a second request
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("round %d: status %d close %v body %s; want 200 on a kept connection", round, resp.StatusCode, resp.Close, b)
		}
		if round == 0 {
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer member\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
	}
}

// slowUpstream answers a stream: one chunk, then after wait the rest.
func slowUpstream(t *testing.T, wait time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-time.After(wait):
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestLongStreamOutlivesBodyTimeout: the body time-out ends with the body; a
// stream that runs longer is not cut.
func TestLongStreamOutlivesBodyTimeout(t *testing.T) {
	up := slowUpstream(t, 400*time.Millisecond)
	e := newEnv(t, gateway.WithBodyTimeout(50*time.Millisecond, 0), gateway.WithBackends(upstream.Backends{LocalURL: up.URL}))
	resp, b := e.do(t, call{method: "POST", path: "/v1/chat/completions", token: "member",
		body: `{"model":"lm-4-scout-local","stream":true,"messages":[{"role":"user","content":"hi"}]}`})
	if resp.StatusCode != 200 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
		t.Errorf("status %d, stream %q; want the whole stream", resp.StatusCode, b)
	}
}

func TestEndStreams(t *testing.T) {
	up := slowUpstream(t, time.Minute)
	e := newEnv(t, gateway.WithBackends(upstream.Backends{LocalURL: up.URL}))
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"lm-4-scout-local","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer member")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, _ := br.ReadString('\n'); !strings.Contains(line, "Hel") {
		t.Fatalf("first line %q, want the first chunk", line)
	}
	e.g.EndStreams()
	rest, _ := io.ReadAll(br)
	if !strings.Contains(string(rest), "event: gw.error\n") || !strings.Contains(string(rest), `"code":"upstream_unavailable"`) ||
		!strings.Contains(string(rest), "shutting down") || strings.Contains(string(rest), "[DONE]") {
		t.Errorf("stream ends %q; want a gw.error upstream_unavailable saying the gateway shuts down, no [DONE]", rest)
	}
	// The gateway goes on serving new requests.
	if resp, _ := e.do(t, call{method: "GET", path: "/healthz"}); resp.StatusCode != 200 {
		t.Errorf("healthz after EndStreams: %d", resp.StatusCode)
	}
}

// endlessUpstream streams content deltas until the gateway goes away, and
// answers a JSON completion of size bytes to requests that do not stream.
func endlessUpstream(t *testing.T, size int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"stop"}]}`,
				strings.Repeat("a", size))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 1000) + `"}}]}` + "\n\n"
		for i := 0; size < 0 || i*1000 < size; i++ {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestOversizedAnswers(t *testing.T) {
	const limit = 20000
	for _, tc := range []struct {
		name     string
		size     int // of the upstream's reply; -1: endless
		path     string
		body     string
		want     string // status, and what the body holds
		wantTail string
	}{
		{name: "/v1 stream relayed past the limit", size: 50000, path: "/v1/chat/completions",
			body: `{"model":"lm-4-scout-local","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			want: "200", wantTail: "data: [DONE]\n\n"},
		{name: "/v1 JSON over the limit", size: 50000, path: "/v1/chat/completions",
			body: `{"model":"lm-4-scout-local","messages":[{"role":"user","content":"hi"}]}`,
			want: "502", wantTail: "larger than 20000 bytes"},
		{name: "/c1 endless stream", size: -1, path: "/c1/chat",
			body: `{"conversation_id":"big","model":"lm-4-scout-local","message":"hi"}`,
			want: "200", wantTail: "event: gw.error"},
		{name: "/c1 JSON over the limit", size: 50000, path: "/c1/chat",
			body: `{"conversation_id":"big","model":"lm-4-scout-local","message":"hi","stream":false}`,
			want: "502", wantTail: "larger than 20000 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := endlessUpstream(t, tc.size)
			e := newEnv(t, gateway.WithMaxResponseBytes(limit), gateway.WithBackends(upstream.Backends{LocalURL: up.URL}))
			resp, b := e.do(t, call{method: "POST", path: tc.path, token: "member", user: "ann", body: tc.body})
			if got := fmt.Sprint(resp.StatusCode); got != tc.want || !strings.Contains(string(b[max(0, len(b)-400):]), tc.wantTail) {
				t.Fatalf("status %s, answer ends %q; want %s ending with %q", got, b[max(0, len(b)-400):], tc.want, tc.wantTail)
			}
			if strings.HasPrefix(tc.path, "/c1") {
				resp, b := e.do(t, call{method: "GET", path: "/c1/conversations/big", token: "member", user: "ann"})
				if resp.StatusCode != 404 {
					t.Errorf("the conversation after an oversized reply: %d %s; want 404, nothing stored", resp.StatusCode, b)
				}
			}
		})
	}
}

// TestStoredReplyFitsTheWindow: /c1 refuses a reply that alone would not fit
// the model's context window (by the pre-flight estimate of 3 bytes a
// token), because storing it would make the conversation unusable.
func TestStoredReplyFitsTheWindow(t *testing.T) {
	cat, err := upstream.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	m := cat.Lookup("lm-4-scout-local")
	if m == nil {
		t.Fatal("no lm-4-scout-local in the built-in catalog")
	}
	up := endlessUpstream(t, m.ContextWindow*3+1000)
	e := newEnv(t, gateway.WithMaxResponseBytes(1<<30), gateway.WithBackends(upstream.Backends{LocalURL: up.URL}))
	resp, b := e.do(t, call{method: "POST", path: "/c1/chat", token: "member", user: "ann",
		body: `{"conversation_id":"w","model":"lm-4-scout-local","message":"hi","stream":false}`})
	if resp.StatusCode != 502 {
		t.Fatalf("status %d %s; want 502 for a reply larger than the context window", resp.StatusCode, b[:min(len(b), 300)])
	}
	if resp, _ := e.do(t, call{method: "GET", path: "/c1/conversations/w", token: "member", user: "ann"}); resp.StatusCode != 404 {
		t.Errorf("conversation stored after the refused reply: %d", resp.StatusCode)
	}
}

// TestEndStreamsBeforeTheAnswer: a JSON answer whose body has not arrived
// when the gateway ends its streams answers 503 upstream_unavailable saying
// the gateway shuts down, not a cut connection.
func TestEndStreamsBeforeTheAnswer(t *testing.T) {
	up, headersSent, _ := bodylessUpstream(t)
	e := newEnv(t, gateway.WithBackends(upstream.Backends{LocalURL: up}))
	go func() { <-headersSent; e.g.EndStreams() }() // a relay that starts after it still ends at once
	resp, b := e.do(t, call{method: "POST", path: "/v1/chat/completions", token: "member",
		body: `{"model":"lm-4-scout-local","messages":[{"role":"user","content":"hi"}]}`})
	if got := outcome(resp, b); got != "Service Unavailable upstream_unavailable null" || !strings.Contains(string(b), "shutting down") {
		t.Errorf("= %s %s; want 503 upstream_unavailable saying the gateway shuts down", got, b)
	}
}

// TestJSONAnswerEndsWhenTheClientLeaves: a client that goes away while a
// JSON answer's body has not arrived ends the upstream call (the relay
// leaves that to the call's context, which is the request's).
func TestJSONAnswerEndsWhenTheClientLeaves(t *testing.T) {
	up, headersSent, upstreamDone := bodylessUpstream(t)
	e := newEnv(t, gateway.WithBackends(upstream.Backends{LocalURL: up}))
	ctx, leave := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"lm-4-scout-local","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer member")
	req.Header.Set("Content-Type", "application/json")
	go func() { <-headersSent; leave() }()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("status %d, want the client's own cancellation", resp.StatusCode)
	}
	select {
	case <-upstreamDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream call still runs 5 s after the client left")
	}
}

// bodylessUpstream is a backend whose JSON answer sends its headers and never
// its body: headersSent closes once they are flushed, done once the call
// ended at the backend (the gateway closed it).
func bodylessUpstream(t *testing.T) (url string, headersSent, done <-chan struct{}) {
	sent, ended := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		close(sent)
		<-r.Context().Done() // the body never comes
		close(ended)
	}))
	t.Cleanup(up.Close)
	return up.URL, sent, ended
}
