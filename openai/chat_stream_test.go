package openai_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/openai"
	"github.com/chatgw/gateway/upstream"
)

// pipeUpstream answers every call with a stream the test writes to.
func pipeUpstream(body *pipeBody) *testkit.Fake {
	return backend(func() (*upstream.Response, error) {
		return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: body}, nil
	})
}

const streamBody = `{"model":"lm-4-scout","stream":true,"messages":[{"role":"user","content":"x"}]}`

func TestChatCompletionsKeepalive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body, pw := newPipeBody()
		s := newService(pipeUpstream(body), func(c *openai.Config) { c.KeepaliveInterval = 5 * time.Second })
		w := newLockedRecorder()
		done := make(chan struct{})
		go func() {
			s.ChatCompletions(w, request("POST", "/v1/chat/completions", streamBody, allTenants, nil))
			close(done)
		}()
		sent := "data: " + chunkOf(`{"index":0,"delta":{"content":"a"}}`) + "\n\n"
		io.WriteString(pw, sent)
		first := strings.Replace(sent, `"model":"scout-cloud"`, `"model":"lm-4-scout"`, 1) // the client's alias
		time.Sleep(4 * time.Second)
		synctest.Wait()
		if got := w.String(); got != first {
			t.Fatalf("after 4 s of silence: %q, want no keepalive yet", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := w.String(); got != first+": keepalive\n\n" {
			t.Fatalf("after 6 s of silence: %q, want a keepalive", got)
		}
		io.WriteString(pw, "data: [DONE]\n\n")
		<-done
		if got := w.String(); got != first+": keepalive\n\ndata: [DONE]\n\n" {
			t.Errorf("stream %q", got)
		}
	})
}

// TestChatCompletionsClientDisconnect cancels the request mid-stream: the
// upstream call's context ends, the upstream body is closed, the handler returns
// at once, and synctest.Test fails if any goroutine is left behind.
func TestChatCompletionsClientDisconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body, pw := newPipeBody()
		up := pipeUpstream(body)
		s := newService(up)
		ctx, cancel := context.WithCancel(context.Background())
		r := httptest.NewRequestWithContext(testkit.Context(ctx, testkit.Member(allTenants)), "POST", "/v1/chat/completions", strings.NewReader(streamBody))
		w := newLockedRecorder()
		done := make(chan struct{})
		go func() {
			s.ChatCompletions(w, r)
			close(done)
		}()
		io.WriteString(pw, "data: "+chunkOf(`{"index":0,"delta":{"content":"a"}}`)+"\n\n")
		synctest.Wait()
		start := time.Now()
		cancel()
		<-done
		if d := time.Since(start); d != 0 {
			t.Errorf("handler returned %v after the disconnect, want at once", d)
		}
		select {
		case <-up.Received()[0].Ctx.Done():
		default:
			t.Errorf("the upstream call's context is not cancelled")
		}
		select {
		case <-body.closed:
		default:
			t.Errorf("the upstream body is not closed")
		}
		if strings.Contains(w.String(), "gw.error") || strings.Contains(w.String(), "[DONE]") {
			t.Errorf("wrote to a gone client: %q", w.String())
		}
	})
}

// TestChatCompletionsClientDisconnectHTTP does the same over a real connection:
// the client goes away and the server cancels the upstream call.
func TestChatCompletionsClientDisconnectHTTP(t *testing.T) {
	before := runtime.NumGoroutine()
	body, pw := newPipeBody()
	up := pipeUpstream(body)
	s := newService(up)
	handlerDone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(handlerDone)
		s.ChatCompletions(w, r.WithContext(testkit.Context(r.Context(), testkit.Member(allTenants))))
	}))
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, strings.NewReader(streamBody))
	go io.WriteString(pw, "data: "+chunkOf(`{"index":0,"delta":{"content":"a"}}`)+"\n\n")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel() // the client goes away
	resp.Body.Close()

	select {
	case <-up.Received()[0].Ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream call was not cancelled after the client went away")
	}
	select {
	case <-handlerDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not return")
	}
	<-body.closed
	srv.Close()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines left, %d before", n, before)
	}
}
