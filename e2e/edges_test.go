package e2e_test

import (
	"bytes"
	"mime/multipart"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// TestIdentityEncodings: a user_id spelled with escapes is still a user_id.
func TestIdentityEncodings(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	const ref = "spec End-user identity 2: user_id in a body or query is forbidden everywhere"
	runErrCases(t, g, errCases{
		{name: "query user%5Fid", path: "/c1/conversations?user%5Fid=bob", token: tokAdmin, user: "alice",
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "query.user_id", ref: ref + " (percent-encoded key decodes to user_id)"},
		{name: "query user_id empty", path: "/c1/conversations?user_id=", token: tokAdmin, user: "alice",
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "query.user_id", ref: ref},
		{name: "body user\\u005fid c1", method: "POST", path: "/c1/chat", token: tokMember, user: "alice",
			body:   `{"message":"hi","stream":false,"model":"lm-4-scout-local","user\u005fid":"bob"}`,
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.user_id", ref: ref + " (JSON escape decodes to user_id)"},
		{name: "body user\\u005fid v1", method: "POST", path: "/v1/chat/completions", token: tokMember, user: "alice",
			body:   `{"model":"lm-4-scout-local","messages":[{"role":"user","content":"hi"}],"user\u005fid":"bob"}`,
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.user_id", ref: ref + " (JSON escape decodes to user_id)"},
		{name: "body user\\u005fid memory", method: "POST", path: "/v1/memory", token: tokMember, user: "alice",
			body:   `{"key":"k","value":"v","visibility":"private","user\u005fid":"bob"}`,
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.user_id", ref: ref + " (JSON escape decodes to user_id)"},
	})
	t.Run("multipart user_id", func(t *testing.T) {
		body, ct := multipartBody(t, map[string]string{"model": "lm-transcribe", "user_id": "bob"})
		r := g.do(t, "POST", "/v1/audio/transcriptions", tokGlobex, "alice", body, H{"Content-Type": ct})
		wantErr(t, r, 400, "invalid_request_error", "invalid_field", "body.user_id", ref+" (multipart form field)")
	})
}

func multipartBody(t *testing.T, fields map[string]string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, k := range []string{"model", "language", "user_id"} {
		if v, ok := fields[k]; ok {
			w.WriteField(k, v)
		}
	}
	fw, _ := w.CreateFormFile("file", "speech.wav")
	fw.Write(bytes.Repeat([]byte{0x52, 0x49, 0x46, 0x46}, 64))
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

func TestAudio(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) { s.Local.Reply = upstreamtest.Reply{Content: "transcribed words"} })
	for _, path := range []string{"/v1/audio/transcriptions", "/v1/audio/translations"} {
		body, ct := multipartBody(t, map[string]string{"model": "lm-transcribe", "language": "en"})
		r := g.do(t, "POST", path, tokGlobex, "", body, H{"Content-Type": ct})
		if !wantStatus(t, r, 200, "spec: "+path) {
			continue
		}
		if !strings.Contains(string(r.Body), "transcribed words") {
			t.Errorf("%s answer %s", path, r.Body)
		}
		calls := g.Local.Calls()
		last := calls[len(calls)-1]
		if last.Model != "lm-whisper:large-v3-turbo" || !strings.HasSuffix(last.Path, path[3:]) {
			t.Errorf("%s reached the upstream as %s with model %q, want router_alias lm-whisper:large-v3-turbo (DECISIONS 8.5)", path, last.Path, last.Model)
		}
	}
	body, ct := multipartBody(t, map[string]string{"model": "lm-transcribe"})
	wantErr(t, g.do(t, "POST", "/v1/audio/transcriptions", tokAdmin, "", body, H{"Content-Type": ct}),
		400, "invalid_request_error", "model_not_in_allowlist", "model", "spec Codes model_not_in_allowlist (acme does not allow lm-transcribe)")
	body, ct = multipartBody(t, map[string]string{})
	wantErr(t, g.do(t, "POST", "/v1/audio/transcriptions", tokGlobex, "", body, H{"Content-Type": ct}),
		400, "invalid_request_error", "missing_field", "model", "DECISIONS 8.2")
}

func TestUpstreamTimeouts(t *testing.T) {
	t.Parallel()
	t.Run("total timeout 504", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) {
			s.Env["GATEWAY_UPSTREAM_TIMEOUT"] = "1s"
			s.Local.Reply = upstreamtest.Reply{Latency: 4 * time.Second}
		})
		t0 := time.Now()
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", chatBody("lm-4-scout-local", "slow"))
		wantErr(t, r, 504, "timeout_error", "upstream_timeout", anyParam, "spec Codes upstream_timeout; DECISIONS 2 GATEWAY_UPSTREAM_TIMEOUT")
		if d := time.Since(t0); d > 3*time.Second {
			t.Errorf("total time-out 1s answered after %v", d)
		}
	})
	t.Run("stream stalls past total timeout", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) {
			s.Env["GATEWAY_UPSTREAM_TIMEOUT"] = "1s"
			s.Local.Reply = upstreamtest.Reply{Chunks: 3, Interval: 3 * time.Second}
		})
		b := chatBody("lm-4-scout-local", "slow")
		b["stream"] = true
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", b)
		evs := parseSSE(r.Body)
		if r.Status != 200 || len(evs) == 0 || evs[len(evs)-1].Event != "gw.error" || !strings.Contains(evs[len(evs)-1].Data, "upstream_timeout") {
			t.Errorf("%s\n  want the started stream to end with gw.error upstream_timeout and no [DONE] (DECISIONS 5; spec Codes upstream_timeout)", r)
		}
	})
	t.Run("keepalive during upstream silence", func(t *testing.T) {
		t.Parallel()
		if testing.Short() {
			t.Skip("waits 16 s")
		}
		g := start(t, func(s *setup) {
			s.Local.Reply = upstreamtest.Reply{Interval: 16 * time.Second, Events: []string{
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"a"},"finish_reason":null}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}`,
			}}
		})
		b := chatBody("lm-4-scout-local", "slow")
		b["stream"] = true
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", b)
		if r.Status != 200 || !bytes.Contains(r.Body, []byte("\n:")) && !bytes.HasPrefix(r.Body, []byte(":")) {
			t.Errorf("a 16 s upstream silence produced no SSE comment keepalive (issue 3 item 3: every 15 s): %s", truncate(string(r.Body), 400))
		}
		if evs := parseSSE(r.Body); len(evs) == 0 || evs[len(evs)-1].Data != "[DONE]" {
			t.Errorf("slow stream did not complete")
		}
	})
}

func TestWireDetails(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	t.Run("json content type on success answers", func(t *testing.T) {
		mustPut := g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "alice", map[string]any{"content": "x"}, nil)
		answers := []*resp{
			g.get(t, "/", "", ""), g.get(t, "/healthz", "", ""), g.get(t, "/readyz", "", ""), g.get(t, "/errors", "", ""),
			g.get(t, "/v1/models", tokMember, ""), g.get(t, "/v1/info", tokMember, ""),
			g.get(t, "/c1/conversations", tokMember, "alice"), g.get(t, "/v1/memory?visibility=private", tokMember, "alice"),
			g.get(t, "/v1/memory/usage?visibility=private", tokMember, "alice"), g.get(t, "/v1/tenant/config", tokMember, ""),
			g.get(t, "/v1/system-prompts/user/versions", tokMember, "alice"), mustPut,
			g.post(t, "/v1/chat/completions", tokMember, "", chatBody("lm-4-scout", "hi")),
			g.post(t, "/v1/embeddings", tokMember, "", map[string]any{"model": "lm-embed", "input": "x"}),
			g.post(t, "/v1/tools/execute", tokMember, "", map[string]any{"inspect": true}),
			g.get(t, "/v1/images", tokMember, ""),
		}
		for _, r := range answers {
			if ct := r.Header.Get("Content-Type"); r.Status != 200 || !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%s: status %d Content-Type %q, want 200 application/json (DECISIONS 8.30)", r.req, r.Status, ct)
			}
			if r.Header.Get("X-Request-Id") == "" {
				t.Errorf("%s: no x-request-id (DECISIONS 5)", r.req)
			}
		}
	})
	t.Run("stream headers", func(t *testing.T) {
		b := chatBody("lm-4-scout", "hi")
		b["stream"] = true
		r := g.do(t, "POST", "/v1/chat/completions", tokMember, "", b, H{"X-Request-Id": "sse-req-1"})
		if r.Header.Get("X-Request-Id") != "sse-req-1" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") || !strings.Contains(r.Header.Get("Cache-Control"), "no-cache") {
			t.Errorf("SSE answer headers %v: want x-request-id echoed, text/event-stream, Cache-Control no-cache (DECISIONS 5, 8.30)", r.Header)
		}
		r = c1(t, g, tokMember, "alice", map[string]any{"message": "hi", "model": "lm-4-scout-local"})
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") || !strings.Contains(r.Header.Get("Cache-Control"), "no-cache") {
			t.Errorf("/c1 SSE answer headers %v: want text/event-stream, no-cache (DECISIONS 8.30)", r.Header)
		}
	})
	t.Run("no notice without fallback", func(t *testing.T) {
		r := g.post(t, "/v1/chat/completions", tokMember, "", chatBody("lm-4-scout", "hi"))
		if n := r.Header.Get("GW-Notice"); r.Status != 200 || n != "" {
			t.Errorf("answer from the first backend carries GW-Notice %q (spec Events 2: notices say how the answer came about)", n)
		}
		b := chatBody("lm-4-scout", "hi")
		b["stream"] = true
		r = g.post(t, "/v1/chat/completions", tokMember, "", b)
		for _, e := range parseSSE(r.Body) {
			if e.Event == "gw.notice" {
				t.Errorf("gw.notice sent without fallback: %s", e.Data)
			}
		}
	})
	t.Run("bearer scheme case-insensitive", func(t *testing.T) {
		r := g.do(t, "GET", "/v1/models", "", "", nil, H{"Authorization": "BEARER " + tokMember})
		wantStatus(t, r, 200, "RFC 7235: the auth-scheme is case-insensitive (spec Authentication 1: Authorization: Bearer)")
	})
	t.Run("embeddings passthrough", func(t *testing.T) {
		r := g.post(t, "/v1/embeddings", tokMember, "", map[string]any{"model": "lm-embed", "input": []string{"a"}, "encoding_format": "base64", "dimensions": 8})
		if wantStatus(t, r, 200, "embeddings") {
			up := lastBody(t, g.Local, "/embeddings")
			if up["encoding_format"] != "base64" || up["dimensions"] != 8.0 {
				t.Errorf("upstream embeddings body %s: want encoding_format and dimensions passed through (OpenAI clients send encoding_format base64 by default)", mustJSON(up))
			}
		}
	})
	t.Run("quota Retry-After", func(t *testing.T) {
		for i := 0; i < 3; i++ {
			r := g.post(t, "/v1/chat/completions", tokQuota, "", chatBody("lm-4-scout-local", "hi"))
			if r.Status == 429 {
				if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
					t.Errorf("model_quota_exhausted without Retry-After seconds (%q) (spec Events 6: Retry-After on quota 429)", r.Header.Get("Retry-After"))
				}
				return
			}
		}
		t.Errorf("quota of 2 requests per day not enforced")
	})
}

// TestConsentOnFallback: a document for a chain alias must not reach a cloud
// backend by fallback without consent.
func TestConsentOnFallback(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) { s.LocalURL = refused(t) })
	b := chatBody("lm-4-scout", "summarise")
	b["attachments"] = []any{map[string]any{"kind": "document", "doc_name": "plan.txt", "content": "CONFIDENTIAL-PLAN-TEXT"}}
	r := g.post(t, "/v1/chat/completions", tokAdmin, "u1", b)
	for _, f := range []*upstreamtest.Server{g.CloudA, g.CloudB} {
		for _, c := range f.Calls() {
			if bytes.Contains(c.Body, []byte("CONFIDENTIAL-PLAN-TEXT")) {
				t.Errorf("%s\n  the document reached a cloud backend by fallback without consent (spec Codes cloud_consent_required; DECISIONS 8.31)", r)
			}
		}
	}
	if r.Status == 200 {
		t.Errorf("%s\n  want 409 cloud_consent_required (or no cloud call) for a chain whose answer came from a cloud backend", r)
	}
}

func TestReadyzRouterDown(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) { s.Env["GATEWAY_ROUTER_URL"] = refused(t) })
	r := g.get(t, "/readyz", "", "")
	wantStatus(t, r, 503, "DECISIONS 8.4: with GATEWAY_ROUTER_URL, router is that router's probe")
	m := r.JSON()
	if m["router"] != "unconfigured" || m["ready"] != false {
		t.Errorf("readyz with an unreachable router %s, want router unconfigured, ready false (DECISIONS 8.4)", r.Body)
	}
	if p := probe(m, "router"); p["configured"] != true || p["reachable"] != false {
		t.Errorf("probes.router %v, want configured true, reachable false", p)
	}
}

func TestMoreChatEdges(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	// a minimal valid 1x1 lossless WebP: image/webp is one of the allowed types
	const webp = "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="
	wantStatus(t, g.post(t, "/v1/chat/completions", tokAdmin, "", imageMsg("lm-4-scout-local", "data:image/webp;base64,"+webp)), 200,
		"spec ImageRef: data:image/<jpeg|png|webp|gif>;base64 (a valid WebP)")
	// the context estimate counts max_tokens only when given (DECISIONS 8.14)
	wantStatus(t, g.post(t, "/v1/chat/completions", tokAdmin, "", chatBody("lm-text-8k", strings.Repeat("abc ", 3750))), 200,
		"DECISIONS 8.14: 15000 bytes is about 5000 tokens, inside lm-text-8k's 8192 window")
	b := chatBody("lm-text-8k", strings.Repeat("abc ", 3000))
	b["max_tokens"] = 2000
	wantStatus(t, g.post(t, "/v1/chat/completions", tokAdmin, "", b), 200, "DECISIONS 8.14: 4000 + 2000 tokens fit 8192")
	runErrCases(t, g, errCases{
		{name: "trailing slash", method: "POST", path: "/v1/chat/completions/", token: tokAdmin, body: chatBody("lm-4-scout", "hi")},
		{name: "empty conversation id", path: "/c1/conversations/", token: tokAdmin, user: "u"},
		{name: "a1 agents (not built)", path: "/a1/agents", token: tokAdmin},
	}.with(404, "not_found_error", "route_not_found", noParam, "spec Codes route_not_found"))
}

func TestFlagsAndSIGINT(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) {
		s.Env["GATEWAY_BODY_LIMIT_BYTES"] = "1000000"
		s.Args = []string{"-body-limit-bytes", "512", "-rate-burst", "100000"}
	})
	r := g.post(t, "/v1/chat/completions", tokAdmin, "", chatBody("lm-4-scout", strings.Repeat("x", 1000)))
	wantErr(t, r, 413, "request_too_large", "body_too_large", anyParam, "DECISIONS 2: -body-limit-bytes flag wins over GATEWAY_BODY_LIMIT_BYTES")
	g.stopped = true
	g.Signal(syscallSIGINT)
	select {
	case <-g.exited:
		if g.exitErr != nil {
			t.Errorf("gatewayd exited with %v after SIGINT, want 0 (DECISIONS 2)", g.exitErr)
		}
	case <-time.After(10 * time.Second):
		g.cmd.Process.Kill()
		t.Errorf("gatewayd did not exit within 10 s of SIGINT (DECISIONS 2)")
	}
}

const syscallSIGINT = syscall.SIGINT
