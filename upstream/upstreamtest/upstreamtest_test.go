package upstreamtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "rid")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseData returns the data of each event of the SSE body.
func sseData(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, ev := range testkit.ParseSSE(t, string(body)) {
		out = append(out, ev.Data)
	}
	return out
}

type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role    string `json:"role,omitempty"`
			Content string `json:"content,omitempty"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func TestChatCompletion(t *testing.T) {
	t.Parallel()
	s := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Content: "Bonjour"}))
	resp := post(t, s.URL+"/chat/completions", `{"model":"m1","messages":[]}`)
	data, _ := io.ReadAll(resp.Body)
	want := `{"id":"chatcmpl-upstreamtest","object":"chat.completion","created":1700000000,"model":"m1",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Bonjour"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`
	if diff := cmp.Diff(want, string(data)); diff != "" {
		t.Errorf("completion mismatch (-want +got):\n%s", diff)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
}

func TestStream(t *testing.T) {
	t.Parallel()
	for _, usage := range []bool{false, true} {
		s := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Content: "Hello, world!", Chunks: 4, Interval: time.Millisecond}))
		body := `{"model":"m2","stream":true}`
		if usage {
			body = `{"model":"m2","stream":true,"stream_options":{"include_usage":true}}`
		}
		resp := post(t, s.URL+"/chat/completions", body)
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("Content-Type = %q", ct)
		}
		stream, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		events := sseData(t, stream)
		wantN := 1 + 4 + 1 + 1 // role, content, finish, [DONE]
		if usage {
			wantN++
		}
		if len(events) != wantN || events[len(events)-1] != "[DONE]" {
			t.Fatalf("events = %q, want %d ending in [DONE]", events, wantN)
		}
		var content strings.Builder
		var finish string
		for i, e := range events[:len(events)-1] {
			var c chunk
			if err := json.Unmarshal([]byte(e), &c); err != nil {
				t.Fatalf("event %d %s: %v", i, e, err)
			}
			if c.ID != "chatcmpl-upstreamtest" || c.Object != "chat.completion.chunk" || c.Model != "m2" || c.Created != 1700000000 {
				t.Errorf("event %d header = %+v", i, c)
			}
			if c.Usage != nil {
				if len(c.Choices) != 0 || c.Usage.TotalTokens != 16 || i != len(events)-2 {
					t.Errorf("usage chunk %s", e)
				}
				continue
			}
			if i == 0 && c.Choices[0].Delta.Role != "assistant" {
				t.Errorf("first chunk has no role: %s", e)
			}
			content.WriteString(c.Choices[0].Delta.Content)
			if f := c.Choices[0].FinishReason; f != nil {
				finish = *f
			}
		}
		if content.String() != "Hello, world!" || finish != "stop" {
			t.Errorf("content %q finish %q", content.String(), finish)
		}
	}
}

func TestDrop(t *testing.T) {
	t.Parallel()
	s := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Chunks: 5, Drop: true, DropAfter: 2}))
	resp := post(t, s.URL+"/chat/completions", `{"model":"m","stream":true}`)
	body, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read error = %v, want unexpected EOF", err)
	}
	events := sseData(t, body)
	if len(events) != 3 { // role + 2 content chunks
		t.Errorf("events = %q, want the role chunk and 2 content chunks", events)
	}
}

func TestErrorReply(t *testing.T) {
	t.Parallel()
	s := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Status: 429, RetryAfter: "12", ErrorMessage: "slow down"}))
	resp := post(t, s.URL+"/chat/completions", `{"model":"m"}`)
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "12" {
		t.Errorf("status %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	want := `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`
	if diff := cmp.Diff(want, string(data)); diff != "" {
		t.Errorf("error body mismatch (-want +got):\n%s", diff)
	}
}

func TestScriptLatencyAndRecording(t *testing.T) {
	t.Parallel()
	s := upstreamtest.New(t, upstreamtest.WithScript(
		upstreamtest.Reply{Status: 500},
		upstreamtest.Reply{Latency: 100 * time.Millisecond},
	))
	var statuses []int
	start := time.Now()
	for range 3 {
		resp := post(t, s.URL+"/chat/completions", `{"model":"m","stream":false}`)
		io.Copy(io.Discard, resp.Body)
		statuses = append(statuses, resp.StatusCode)
	}
	if diff := cmp.Diff([]int{500, 200, 200}, statuses); diff != "" {
		t.Errorf("statuses mismatch (-want +got):\n%s", diff)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("took %v, want the 100 ms latency", took)
	}
	calls := s.Calls()
	if len(calls) != 3 || s.CallCount() != 3 {
		t.Fatalf("recorded %d calls, count %d", len(calls), s.CallCount())
	}
	c := calls[0]
	got := []string{c.Method, c.Path, c.Header.Get("X-Request-Id"), string(c.Body), c.Model}
	want := []string{"POST", "/v1/chat/completions", "rid", `{"model":"m","stream":false}`, "m"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("call mismatch (-want +got):\n%s", diff)
	}
}

func TestHangAndClose(t *testing.T) {
	t.Parallel()
	s := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Hang: true}))
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/chat/completions", strings.NewReader(`{}`))
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	if err := s.AwaitCalls(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("client error = %v", err)
	}
	waitCtx, stop := context.WithTimeout(t.Context(), 2*time.Second)
	defer stop()
	if err := s.AwaitCanceled(waitCtx, 1); err != nil {
		t.Fatalf("AwaitCanceled: %v", err)
	}
	if !s.Calls()[0].Canceled {
		t.Error("call not marked Canceled")
	}

	// Close does not wait for hanging calls.
	go func() {
		resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	s.AwaitCalls(t.Context(), 2)
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Close blocked on a hanging call")
	}
	if _, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(`{}`)); err == nil {
		t.Error("a closed server accepted a connection")
	}
}
