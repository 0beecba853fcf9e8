package chat_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/chat"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

func TestToolCallsStored(t *testing.T) {
	wantCall := map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{
		"id": "call_1", "type": "function",
		"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`},
	}}}
	tests := []struct {
		name  string
		reply *upstream.Response
	}{
		{"stream", testkit.SSEAnswer(
			testkit.Chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, ""),
			testkit.Chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, ""),
			testkit.Chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, ""),
			testkit.Chunk(`{}`, "tool_calls"),
		)},
		{"json", testkit.JSONAnswer(testkit.Completion(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`, "stop"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.up.reply = func(n int, req *upstream.Request) (*upstream.Response, error) {
				if n == 1 {
					return tc.reply, nil
				}
				return textReply(n, req)
			}
			tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
			if rec := e.post(t, "alice", `{"conversation_id":"c1","message":"weather?",`+tools+`}`); rec.Code != 200 {
				t.Fatal(rec.Body)
			}
			want := []any{msg("user", "weather?"), wantCall}
			if diff := cmp.Diff(want, e.history(t, "t1", "alice", "c1")); diff != "" {
				t.Errorf("stored history mismatch (-want +got):\n%s", diff)
			}
			// The next turn replays the unanswered tool call as text (strict
			// backends reject a tool call without its tool result)...
			if rec := e.post(t, "alice", `{"conversation_id":"c1","message":"and tomorrow?",`+tools+`}`); rec.Code != 200 {
				t.Fatal(rec.Body)
			}
			replayed := []any{msg("user", "weather?"), msg("assistant", "[called tools: get_weather]"), msg("user", "and tomorrow?")}
			if diff := cmp.Diff(replayed, e.up.lastBody(t)["messages"]); diff != "" {
				t.Errorf("turn 2 upstream messages mismatch (-want +got):\n%s", diff)
			}
			// ...and the stored history keeps it as it was.
			want = append(want, msg("user", "and tomorrow?"), msg("assistant", "reply 2"))
			if diff := cmp.Diff(want, e.history(t, "t1", "alice", "c1")); diff != "" {
				t.Errorf("stored history after turn 2 mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBackendFallbackNotice(t *testing.T) {
	for _, stream := range []bool{true, false} {
		e := newEnv(t)
		e.up.reply = func(n int, req *upstream.Request) (*upstream.Response, error) {
			resp, _ := textReply(n, req)
			resp.Fallback, resp.Provider, resp.RouterAlias = true, "cloudA", "scout-a"
			return resp, nil
		}
		rec := e.post(t, "alice", `{"message":"hi","keep_last_turns":0,"stream":`+map[bool]string{true: "true", false: "false"}[stream]+`}`)
		if rec.Code != 200 {
			t.Fatal(rec.Body)
		}
		if !stream {
			if got := rec.Header().Get("GW-Notice"); got != "backend_fallback" {
				t.Errorf("GW-Notice = %q; want backend_fallback", got)
			}
			continue
		}
		evs := testkit.ParseSSE(t, rec.Body.String())
		if n := len(evs); n < 2 || evs[n-2].Type != "gw.notice" || !strings.Contains(evs[n-2].Data, `"code":"backend_fallback"`) || evs[n-1].Data != "[DONE]" {
			t.Errorf("stream does not end with gw.notice backend_fallback, [DONE]: %v", evs)
		}
	}
}

func TestMaxTokensFloored(t *testing.T) {
	e := newEnv(t)
	rec := e.post(t, "alice", `{"message":"think","model":"lm-reason","max_tokens":50,"stream":false}`)
	if rec.Code != 200 {
		t.Fatal(rec.Body)
	}
	if got := e.up.lastBody(t)["max_tokens"]; got != 200.0 {
		t.Errorf("upstream max_tokens = %v; want 200", got)
	}
	for _, h := range []string{"gw-applied", "x-rust-api-applied"} {
		if got := rec.Header().Get(h); got != "max_tokens_floored=200" {
			t.Errorf("%s = %q; want max_tokens_floored=200", h, got)
		}
	}
}

func TestAttachments(t *testing.T) {
	e := newEnv(t)
	body := `{"conversation_id":"c1","message":"summarise","stream":false,"attachments":[{"kind":"document","doc_name":"plan.txt","content":"step 1"}]}`
	if rec := e.post(t, "alice", body); rec.Code != 200 {
		t.Fatal(rec.Body)
	}
	user := map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "summarise"},
		map[string]any{"type": "text", "text": "Document plan.txt:\nstep 1"},
	}}
	upBody := e.up.lastBody(t)
	if diff := cmp.Diff([]any{user}, upBody["messages"]); diff != "" {
		t.Errorf("upstream messages mismatch (-want +got):\n%s", diff)
	}
	if _, ok := upBody["attachments"]; ok {
		t.Error("attachments forwarded upstream")
	}
	if diff := cmp.Diff([]any{user, msg("assistant", "reply 1")}, e.history(t, "t1", "alice", "c1")); diff != "" {
		t.Errorf("stored history mismatch (-want +got):\n%s", diff)
	}

	rec := e.post(t, "alice", strings.Replace(body, `"c1"`, `"c2"`, 1), "X-Test-Consent", "on")
	testkit.Diff(t, "without consent: error", testkit.WantError(errcat.CloudConsentRequired, "body.attachments"), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
	// A ;persist grant holds for the tenant's later requests.
	hash := "sha256:" + fmt.Sprintf("%x", sha256.Sum256([]byte("step 1")))
	if rec := e.post(t, "alice", strings.Replace(body, `"c1"`, `"c3"`, 1), "X-Test-Consent", "on", "GW-Cloud-Consent", hash+";persist"); rec.Code != 200 {
		t.Fatalf("with consent = %d %s", rec.Code, rec.Body)
	}
	if rec := e.post(t, "bob", strings.Replace(body, `"c1"`, `"c4"`, 1), "X-Test-Consent", "on"); rec.Code != 200 {
		t.Errorf("after a persisted grant = %d %s", rec.Code, rec.Body)
	}
	rec = e.post(t, "alice", `{"message":"x","attachments":[{"kind":"document","doc_name":"a","content":"b","content_hash":"sha256:00"}]}`)
	testkit.Diff(t, "bad hash: error", testkit.WantError(errcat.InvalidField, "body.attachments[0].content_hash"), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
}

func TestUpstreamError(t *testing.T) {
	e := newEnv(t)
	e.up.reply = func(int, *upstream.Request) (*upstream.Response, error) {
		return nil, errcat.New(errcat.UpstreamUnavailable, "", "No backend could be reached.")
	}
	rec := e.post(t, "alice", `{"conversation_id":"c1","message":"hi"}`)
	testkit.Diff(t, "error", testkit.WantError(errcat.UpstreamUnavailable, ""), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
	if rec.Header().Get("x-conversation-id") != "c1" {
		t.Errorf("error without conversation id header")
	}
	if got := e.history(t, "t1", "alice", "c1"); got != nil {
		t.Errorf("failed turn stored: %v", got)
	}
}

// TestStreamCutByUpstream: a stream that ends without [DONE] ends with gw.error
// and stores nothing.
func TestStreamCutByUpstream(t *testing.T) {
	e := newEnv(t)
	e.post(t, "alice", `{"conversation_id":"c1","message":"one"}`)
	e.up.reply = func(int, *upstream.Request) (*upstream.Response, error) {
		return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(strings.NewReader("data: " + testkit.Chunk(`{"content":"half"}`, "") + "\n\n"))}, nil
	}
	rec := e.post(t, "alice", `{"conversation_id":"c1","message":"two"}`)
	evs := testkit.ParseSSE(t, rec.Body.String())
	if n := len(evs); n == 0 || evs[n-1].Type != "gw.error" || strings.Contains(rec.Body.String(), "[DONE]") {
		t.Errorf("cut stream = %v; want it to end with gw.error and no [DONE]", evs)
	}
	if diff := cmp.Diff([]any{msg("user", "one"), msg("assistant", "reply 1")}, e.history(t, "t1", "alice", "c1")); diff != "" {
		t.Errorf("history after cut stream (-want +got):\n%s", diff)
	}
}

// TestClientCancelMidStream cuts the client off in the middle of a stream and
// proves that the stored history holds only whole turns: nothing of the cut turn.
func TestClientCancelMidStream(t *testing.T) {
	e := newEnv(t)
	upstreamDone := make(chan struct{}, 2)
	e.up.reply = func(n int, req *upstream.Request) (*upstream.Response, error) {
		if n == 1 {
			return textReply(n, req)
		}
		pr, pw := io.Pipe()
		go func() {
			defer func() { upstreamDone <- struct{}{} }()
			pw.Write([]byte("data: " + testkit.Chunk(`{"role":"assistant","content":"partial"}`, "") + "\n\n"))
			// Never finishes: the stream stays open until the relay closes it.
			pw.Write([]byte("data: " + testkit.Chunk(`{"content":" more"}`, "") + "\n\n"))
		}()
		return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr}, nil
	}
	handlerDone := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { handlerDone <- struct{}{} }()
		e.h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	send := func(ctx context.Context, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/c1/chat", strings.NewReader(body))
		req.Header.Set(httpx.HeaderUserID, "alice")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := send(context.Background(), `{"conversation_id":"c1","message":"one"}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	<-handlerDone

	ctx, cancel := context.WithCancel(context.Background())
	resp = send(ctx, `{"conversation_id":"c1","message":"two","system_prompt":"late"}`)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, "partial") {
		t.Fatalf("first line = %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-handlerDone:
	case <-time.After(5 * time.Second):
		t.Fatal("handler still running 5s after the client went away")
	}
	select {
	case <-upstreamDone:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream stream not closed after the client went away")
	}
	want := []any{msg("user", "one"), msg("assistant", "reply 1")}
	if diff := cmp.Diff(want, e.history(t, "t1", "alice", "c1")); diff != "" {
		t.Errorf("history after cancelled turn (-want +got):\n%s", diff)
	}

	// A new conversation cut on its first turn is not created at all.
	ctx, cancel = context.WithCancel(context.Background())
	resp = send(ctx, `{"conversation_id":"c2","message":"first","system_prompt":"sys"}`)
	bufio.NewReader(resp.Body).ReadString('\n')
	cancel()
	resp.Body.Close()
	<-handlerDone
	<-upstreamDone
	if got := e.history(t, "t1", "alice", "c2"); got != nil {
		t.Errorf("cancelled first turn stored: %v", got)
	}
}

// slowHistory delays Append and records when it committed.
type slowHistory struct {
	chat.History
	committed atomic.Bool
}

func (h *slowHistory) Append(ctx context.Context, tenant, user, id string, msgs []json.RawMessage, sys string, seen []byte) error {
	time.Sleep(20 * time.Millisecond)
	err := h.History.Append(ctx, tenant, user, id, msgs, sys, seen)
	h.committed.Store(err == nil)
	return err
}

// ackWriter records whether the turn was committed when the client got the
// acknowledgement: the status of a JSON answer, data: [DONE] of a stream.
type ackWriter struct {
	*httptest.ResponseRecorder
	h          *slowHistory
	ack        bool
	commitedAt bool
}

func (w *ackWriter) WriteHeader(status int) {
	if w.Header().Get("Content-Type") == "application/json" {
		w.ack, w.commitedAt = true, w.h.committed.Load()
	}
	w.ResponseRecorder.WriteHeader(status)
}

func (w *ackWriter) Write(b []byte) (int, error) {
	if strings.Contains(string(b), "[DONE]") {
		w.ack, w.commitedAt = true, w.h.committed.Load()
	}
	return w.ResponseRecorder.Write(b)
}

// WriteString hides the recorder's own, which io.WriteString would call
// instead of Write.
func (w *ackWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

func TestCommitBeforeAcknowledgement(t *testing.T) {
	for _, stream := range []string{"true", "false"} {
		t.Run("stream="+stream, func(t *testing.T) {
			h := &slowHistory{}
			e := newEnv(t, func(e *env, c *chat.Config) { h.History = c.History; c.History = h })
			req := httptest.NewRequest("POST", "/c1/chat", strings.NewReader(`{"message":"hi","keep_last_turns":0,"stream":`+stream+`}`))
			req.Header.Set(httpx.HeaderUserID, "alice")
			w := &ackWriter{ResponseRecorder: httptest.NewRecorder(), h: h}
			e.h.ServeHTTP(w, req)
			if w.Code != 200 || !w.ack || !w.commitedAt {
				t.Errorf("status %d, acknowledged %v, committed before: %v; want 200, true, true:\n%s", w.Code, w.ack, w.commitedAt, w.Body)
			}
			if stream == "true" {
				evs := testkit.ParseSSE(t, w.Body.String())
				if n := len(evs); n < 2 || evs[n-1].Data != "[DONE]" {
					t.Errorf("stream tail = %v; want [DONE]", evs)
				}
			}
		})
	}
}

func TestStorageError(t *testing.T) {
	errDisk := errors.New("disk on fire")
	failWrites := func(op string) error {
		if op == "View" {
			return nil
		}
		return errDisk
	}
	t.Run("before the answer", func(t *testing.T) {
		e := newEnv(t)
		e.st.FailNext(errDisk)
		rec := e.post(t, "alice", `{"conversation_id":"c1","message":"hi"}`)
		testkit.Diff(t, "error", testkit.WantError(errcat.StorageError, ""), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
		if strings.Contains(rec.Body.String(), "fire") {
			t.Errorf("storage_error shows its cause: %s", rec.Body)
		}
		if rec.Header().Get("gw-conversation-id") != "c1" || len(e.up.Calls()) != 0 {
			t.Errorf("headers %v, %d upstream calls; want conversation id and none", rec.Header(), len(e.up.Calls()))
		}
	})
	t.Run("json commit", func(t *testing.T) {
		e := newEnv(t)
		e.st.FailWith(failWrites)
		rec := e.post(t, "alice", `{"conversation_id":"c1","message":"hi","stream":false,"model":"lm-reason","max_tokens":5}`)
		if diff := cmp.Diff(testkit.WantError(errcat.StorageError, ""), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes())); diff != "" {
			t.Fatalf("error mismatch (-want +got):\n%s", diff)
		}
		for _, h := range []string{"Gw-Applied", "X-Rust-Api-Applied", "Gw-Notice"} {
			if v := rec.Header().Get(h); v != "" {
				t.Errorf("error answer carries %s: %s", h, v)
			}
		}
		if rec.Header().Get("gw-conversation-id") != "c1" || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("headers = %v", rec.Header())
		}
		e.st.FailWith(nil)
		if got := e.history(t, "t1", "alice", "c1"); got != nil {
			t.Errorf("stored: %v", got)
		}
	})
	t.Run("stream commit", func(t *testing.T) {
		e := newEnv(t)
		e.up.reply = func(n int, req *upstream.Request) (*upstream.Response, error) {
			resp, _ := textReply(n, req)
			resp.Fallback = true // a notice to hold back
			return resp, nil
		}
		e.st.FailWith(failWrites)
		rec := e.post(t, "alice", `{"conversation_id":"c1","message":"hi"}`)
		evs := testkit.ParseSSE(t, rec.Body.String())
		n := len(evs)
		if rec.Code != 200 || n < 2 || evs[n-1].Type != "gw.error" || !strings.Contains(evs[n-1].Data, `"code":"storage_error"`) {
			t.Fatalf("stream = %d %v; want content then gw.error storage_error", rec.Code, evs)
		}
		if strings.Contains(rec.Body.String(), "[DONE]") || strings.Contains(rec.Body.String(), "gw.notice") || strings.Contains(rec.Body.String(), "fire") {
			t.Errorf("stream acknowledged or leaked after a failed commit:\n%s", rec.Body)
		}
		if !strings.Contains(rec.Body.String(), `"content":"rep"`) {
			t.Errorf("content not streamed before the commit:\n%s", rec.Body)
		}
		e.st.FailWith(nil)
		if got := e.history(t, "t1", "alice", "c1"); got != nil {
			t.Errorf("stored: %v", got)
		}
	})
}
