package blackbox_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// Further rules: quotas, graceful shutdown, router, /c1 notices, images, headers.

func TestQuotas(t *testing.T) {
	t.Parallel()
	cloudB := upstreamtest.New(t)
	local := upstreamtest.New(t)
	tk := defaultTokens()
	acme := tk["tenants"].([]any)[0].(map[string]any)
	acme["quotas"] = map[string]any{
		"lm-4-scout-cloudB": map[string]any{"requests_per_day": 2},
		"lm-4-scout-local":  map[string]any{"requests_per_day": 1},
	}
	g := startGW(t, gwOpts{tokens: tk, local: local.URL, cloudB: cloudB.URL})
	for i := 0; i < 2; i++ {
		wantStatus(t, "within cloudB quota", g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-4-scout-cloudB")), 200)
	}
	r := g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-4-scout-cloudB"))
	wantErr(t, "cloudB daily quota", r, 429, "rate_limit_error", "cloudB_daily_quota_exhausted", "model")
	if r.Status == 429 {
		if fb := asSlice(r.JSON["available_fallbacks"]); len(fb) == 0 {
			t.Errorf("cloudB_daily_quota_exhausted without available_fallbacks: %s", r.Body)
		}
		now := time.Now().UTC()
		next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
		want := int(next.Sub(now).Seconds())
		if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < want-5 || n > want+5 {
			t.Errorf("Retry-After %q, want about %d s (next 00:00 UTC)", r.Header.Get("Retry-After"), want)
		}
	}
	if n := len(chatCalls(cloudB)); n != 2 {
		t.Errorf("cloudB calls %d, want 2", n)
	}
	wantStatus(t, "local quota 1", g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-4-scout-local")), 200)
	r = g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-4-scout-local"))
	wantErr(t, "model quota", r, 429, "rate_limit_error", "model_quota_exhausted", anyParam)
	if r.Status == 429 {
		low := strings.ToLower(string(r.Body))
		for _, w := range []string{"local", "cloud", "token"} {
			if strings.Contains(low, w) {
				t.Errorf("model_quota_exhausted body names %q: %s", w, r.Body)
			}
		}
	}
	// Quotas are per tenant.
	wantStatus(t, "other tenant not limited", g.post(t, "/v1/chat/completions", tokBetaMem, nil, chatBody("lm-4-scout-cloudB")), 200)
}

func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Latency: 800 * time.Millisecond}))
	g := startGW(t, gwOpts{local: local.URL})
	var wg sync.WaitGroup
	var r *resp
	wg.Add(1)
	go func() {
		defer wg.Done()
		r = g.post(t, "/c1/chat", tokMember, user("s1"), map[string]any{"message": "slow", "stream": false, "model": "lm-4-scout-local"})
	}()
	time.Sleep(300 * time.Millisecond)
	g.stop() // SIGTERM, checks exit 0
	wg.Wait()
	if r == nil || r.Status != 200 {
		t.Fatalf("in-flight request during SIGTERM: %+v", r)
	}
	id := r.Header.Get("gw-conversation-id")
	g2 := startGW(t, g.opts)
	if msgs := storedMessages(t, g2, tokMember, "s1", id); len(msgs) != 2 {
		t.Errorf("turn finished during shutdown not persisted: %d messages", len(msgs))
	}
}

func TestRouterURL(t *testing.T) {
	t.Parallel()
	router := upstreamtest.New(t)
	g := startGW(t, gwOpts{env: map[string]string{"GATEWAY_ROUTER_URL": router.URL}})
	r := g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-4-scout-local"))
	if wantStatus(t, "chat via router", r, 200) {
		calls := chatCalls(router)
		if len(calls) != 1 || calls[0].Model != "lm-4-scout:17b-16e-instruct-q4_K_M" {
			t.Errorf("router calls %d, model %v; want the backend's router_alias", len(calls), calls)
		}
	}
	r = g.get(t, "/readyz", "", nil)
	if wantStatus(t, "readyz with router", r, 200) && r.JSON["router"] != "available" {
		t.Errorf("readyz router %v", r.JSON["router"])
	}
	// Router unreachable: not ready.
	g2 := startGW(t, gwOpts{env: map[string]string{"GATEWAY_ROUTER_URL": upstreamtest.RefusedURL(t)}})
	r = g2.get(t, "/readyz", "", nil)
	if wantStatus(t, "readyz router down", r, 503) && (r.JSON["ready"] != false || r.JSON["router"] != "unconfigured") {
		t.Errorf("readyz router down: %s", r.Body)
	}
}

func TestC1FallbackNoticeAndHeaders(t *testing.T) {
	t.Parallel()
	cloudA := upstreamtest.New(t)
	g := startGW(t, gwOpts{cloudA: cloudA.URL})
	r := c1(g, t, tokMember, "n1", nil, map[string]any{"message": "x", "model": "lm-4-scout"})
	if wantStatus(t, "c1 fallback unary", r, 200) {
		if !strings.Contains(r.Header.Get("GW-Notice"), "backend_fallback") {
			t.Errorf("/c1 fallback: GW-Notice %q", r.Header.Get("GW-Notice"))
		}
		if _, ok := r.JSON["gw_code"]; ok {
			t.Errorf("notice carried in body gw_code")
		}
	}
	r = g.post(t, "/c1/chat", tokMember, user("n1"), map[string]any{"message": "x", "model": "lm-4-scout"})
	if wantStatus(t, "c1 fallback stream", r, 200) {
		checkStream(t, r, true)
		convID(t, r)
	}
	// The two conversation-id headers naming different ids.
	r = c1(g, t, tokMember, "n1", map[string]string{"gw-conversation-id": "a", "x-conversation-id": "b"}, map[string]any{"message": "x"})
	wantErr(t, "differing id headers", r, 400, "invalid_request_error", "invalid_field", "headers.x-conversation-id")
	// GW-User-Id over 256 characters.
	r = c1(g, t, tokMember, strings.Repeat("u", 257), nil, map[string]any{"message": "x"})
	wantErr(t, "long GW-User-Id", r, 400, "invalid_request_error", "invalid_field", "headers.gw-user-id")
	// temperature bounds are inclusive.
	wantStatus(t, "temperature 2.0", c1(g, t, tokMember, "n1", nil, map[string]any{"message": "x", "temperature": 2.0, "model": "lm-4-scout-cloudA"}), 200)
	wantStatus(t, "temperature 0", g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-4-scout-cloudA", "temperature", 0)), 200)
	// A /c1 error before the first byte with stream true is a JSON envelope.
	r = g.post(t, "/c1/chat", tokMember, user("n1"), map[string]any{"message": "x", "model": "lm-4-scout-local"})
	wantErr(t, "c1 stream, local refused", r, 503, "overloaded_error", "upstream_unavailable", anyParam)
}

func TestImages(t *testing.T) {
	t.Parallel()
	cloudA := upstreamtest.New(t)
	g := startGW(t, gwOpts{cloudA: cloudA.URL})
	gen := func(tok string, body map[string]any) *resp {
		return g.post(t, "/v1/images/generations", tok, nil, body)
	}
	wantErr(t, "image model outside allowlist", gen(tokMember, map[string]any{"model": "lm-image", "prompt": "cat"}), 400, "invalid_request_error", "model_not_in_allowlist", "model")
	r := gen(tokBetaMem, map[string]any{"model": "lm-image", "prompt": "cat"})
	if !wantStatus(t, "generate", r, 200) {
		return
	}
	d := asSlice(r.JSON["data"])
	if len(d) != 1 {
		t.Fatalf("images data: %s", trunc(r.Body))
	}
	img := d[0].(map[string]any)
	id, _ := img["id"].(string)
	if id == "" || img["ttl_hours"] != float64(12) || img["created_at"] == nil || img["expires_at"] == nil {
		t.Errorf("image entry: %v", img)
	}
	wantStatus(t, "get image", g.get(t, "/v1/images/"+id, tokBetaMem, nil), 200)
	wantErr(t, "other tenant's image", g.get(t, "/v1/images/"+id, tokMember, nil), 404, "not_found_error", "image_not_found", "id")
	wantErr(t, "unknown image", g.get(t, "/v1/images/nope", tokBetaMem, nil), 404, "not_found_error", "image_not_found", "id")
	wantStatus(t, "ttl 168", gen(tokBetaMem, map[string]any{"model": "lm-image", "prompt": "cat", "ttl_hours": 168}), 200)
	wantErr(t, "ttl 169 over tenant max", gen(tokBetaMem, map[string]any{"model": "lm-image", "prompt": "cat", "ttl_hours": 169}), 400, "invalid_request_error", "invalid_field", "ttl_hours")
	r = g.get(t, "/v1/images", tokBetaAdmin, nil)
	if wantStatus(t, "list images", r, 200) && !strings.Contains(string(r.Body), id) {
		t.Errorf("list images lacks %s", id)
	}
	r = g.do(t, req{method: "DELETE", path: "/v1/images/" + id, token: tokBetaMem})
	wantStatus(t, "delete image", r, 200)
	wantErr(t, "deleted image", g.get(t, "/v1/images/"+id, tokBetaMem, nil), 404, "not_found_error", "image_not_found", "id")
}

// Header names are case-insensitive; x-request-id is on SSE answers too.
func TestStreamHeaders(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: local.URL})
	hr, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(`{"model":"lm-4-scout","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	hr.Header.Set("authorization", "Bearer "+tokMember)
	hr.Header["x-request-id"] = []string{"lower-case-id"}
	resp, err := client.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") != "lower-case-id" {
		t.Errorf("stream: status %d x-request-id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}
}

func TestRequestIDInLogsAndVerbatimUnary(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t, upstreamtest.WithScript(upstreamtest.Reply{Status: 500}))
	cloudA := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: local.URL, cloudA: cloudA.URL})
	r := g.post(t, "/v1/chat/completions", tokMember, map[string]string{"X-Request-Id": "trace-fallback-77"}, chatBody("lm-4-scout"))
	if wantStatus(t, "fallback", r, 200) {
		n := 0
		for i := 0; i < 50 && n < 3; i++ { // logs may follow the answer
			n = strings.Count(g.stderr.String(), "trace-fallback-77")
			time.Sleep(20 * time.Millisecond)
		}
		if n < 3 { // two attempts + the request line
			t.Errorf("request id in %d log lines, want each attempt logged with it (DECISIONS 4, 5):\n%s", n, tail(g.stderr.String(), 1500))
		}
	}
	// Unary answers are relayed verbatim.
	r = g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-4-scout-cloudA"))
	if wantStatus(t, "unary", r, 200) {
		calls := chatCalls(cloudA)
		hr, _ := http.NewRequest("POST", cloudA.URL+"/chat/completions", strings.NewReader(string(calls[len(calls)-1].Body)))
		dr, err := client.Do(hr)
		if err == nil {
			var b strings.Builder
			buf := make([]byte, 4096)
			for {
				n, err := dr.Body.Read(buf)
				b.Write(buf[:n])
				if err != nil {
					break
				}
			}
			dr.Body.Close()
			if strings.TrimSpace(b.String()) != strings.TrimSpace(string(r.Body)) {
				t.Errorf("unary answer not verbatim:\n got %s\nwant %s", r.Body, b.String())
			}
		}
	}
	// A 200 that is an OpenAI error object is 502 upstream_error.
	local.SetReply(upstreamtest.Reply{Body: []byte(`{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`)})
	r = g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-4-scout-local"))
	wantErr(t, "200 error object", r, 502, "api_error", "upstream_error", anyParam)
	// Public endpoints ignore a bad bearer.
	wantStatus(t, "healthz with bad bearer", g.get(t, "/healthz", "garbage", nil), 200)
	// /c1 with explicit nulls.
	local.SetReply(upstreamtest.Reply{})
	r = c1(g, t, tokMember, "z", nil, map[string]any{"message": "x", "conversation_id": nil, "model": nil, "provider": nil, "system_prompt": nil, "keep_last_turns": nil, "images": nil, "max_tokens": nil, "temperature": nil})
	if wantStatus(t, "c1 nulls", r, 200) && !uuidRE.MatchString(r.Header.Get("x-conversation-id")) {
		t.Errorf("c1 conversation_id null: header %q", r.Header.Get("x-conversation-id"))
	}
}

var typicalParams = map[string]any{
	"missing_authorization": "headers.authorization", "invalid_authorization": "headers.authorization",
	"model_not_in_allowlist": "model", "max_tokens_below_minimum": "max_tokens",
	"image_url_not_supported": "messages[].content[].image_url.url", "model_not_vision_capable": "messages[].content[].image_url",
	"tool_call_arguments_invalid": "messages[].tool_calls[].function.arguments", "context_window_exceeded": "messages",
	"embedding_input_too_large": "input", "agent_not_found": "name", "agent_tool_not_registered": "tools",
	"index_not_found": "id", "document_not_found": "doc_id", "session_not_found": "session_id",
	"session_agent_mismatch": "session_id", "session_compact_conflict": "session_id", "runtime_not_runnable": "body.runtime",
	"coding_agent_repo_not_allowed": "body.repo", "coding_agent_run_not_found": "run_id", "tenant_config_key_readonly": "key",
	"tenant_config_invalid_value": "key", "image_not_found": "id", "memory_bucket_full": "value",
	"memory_confirm_required": "confirm_token", "system_prompt_too_large": "content", "system_prompt_version_not_found": "version",
	"system_prompt_current_locked": "version", "conversation_not_found": "conversation_id", "cloudB_daily_quota_exhausted": "model",
	"forbidden": nil, "rate_limit_exceeded": nil, "route_not_found": nil, "internal_error": nil, "storage_error": nil,
	"upstream_error": nil, "upstream_timeout": nil, "upstream_unavailable": nil, "agent_busy": nil, "coding_agent_disabled": nil,
}

func TestErrorCatalogParams(t *testing.T) {
	t.Parallel()
	g := startGW(t, gwOpts{})
	r := g.get(t, "/errors", "", nil)
	for _, e := range asSlice(r.JSON["entries"]) {
		m := e.(map[string]any)
		want, ok := typicalParams[m["code"].(string)]
		if ok && m["typical_param"] != want {
			t.Errorf("catalog %s typical_param %v, want %v (spec Codes table)", m["code"], m["typical_param"], want)
		}
	}
}

func TestFlagsWinOverEnv(t *testing.T) {
	t.Parallel()
	flagDir := t.TempDir()
	g := startGW(t, gwOpts{args: []string{"-data-dir", flagDir}})
	c1(g, t, tokMember, "f", nil, map[string]any{"message": "x"})
	g.stop()
	if _, err := os.Stat(filepath.Join(flagDir, "gateway.db")); err != nil {
		t.Errorf("-data-dir flag did not win over GATEWAY_DATA_DIR: %v", err)
	}
	if _, err := os.Stat(filepath.Join(g.opts.dataDir, "gateway.db")); err == nil {
		t.Errorf("GATEWAY_DATA_DIR used although -data-dir was given")
	}
}

func TestC1ContextFloorConsent(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	cloudA := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: local.URL, cloudA: cloudA.URL})
	// Stored history counts toward the context window of what is forwarded.
	big := strings.Repeat("abcde ", 2500) // 15000 bytes, ~5000 tokens
	r := c1(g, t, tokMember, "cw", nil, map[string]any{"message": big, "model": "lm-text-8k"})
	if wantStatus(t, "turn 1 under window", r, 200) {
		id := convID(t, r)
		r = c1(g, t, tokMember, "cw", nil, map[string]any{"message": big, "model": "lm-text-8k", "conversation_id": id})
		wantErr(t, "turn 2 over window with history", r, 400, "invalid_request_error", "context_window_exceeded", "messages")
		r = c1(g, t, tokMember, "cw", nil, map[string]any{"message": big, "model": "lm-text-8k", "conversation_id": id, "keep_last_turns": 0})
		wantStatus(t, "turn 2 with keep_last_turns 0", r, 200)
	}
	// max_tokens flooring on /c1.
	r = c1(g, t, tokMember, "cw", nil, map[string]any{"message": "x", "model": "lm-reasoner", "max_tokens": 10})
	if wantStatus(t, "c1 reasoner floor", r, 200) {
		if r.Header.Get("gw-applied") != "max_tokens_floored=200" || r.Header.Get("x-rust-api-applied") != "max_tokens_floored=200" {
			t.Errorf("/c1 floor headers gw-applied %q x-rust-api-applied %q", r.Header.Get("gw-applied"), r.Header.Get("x-rust-api-applied"))
		}
	}
	// Consent on /c1 with the retry header.
	att := []any{map[string]any{"kind": "document", "doc_name": "c.txt", "content": "c1 doc"}}
	r = c1(g, t, tokMember, "cw", nil, map[string]any{"message": "read", "model": "lm-4-scout-cloudA", "attachments": att})
	wantErr(t, "c1 consent", r, 409, "conflict_error", "cloud_consent_required", anyParam)
	hash := ""
	if rc := asSlice(r.JSON["required_consents"]); len(rc) == 1 {
		hash, _ = rc[0].(map[string]any)["content_hash"].(string)
	}
	r = c1(g, t, tokMember, "cw", map[string]string{"GW-Cloud-Consent": hash + ";persist"}, map[string]any{"message": "read", "model": "lm-4-scout-cloudA", "attachments": att})
	wantStatus(t, "c1 consented", r, 200)
	// Persistence of memory, prompts, tenant config and consent grants across a restart.
	g.post(t, "/v1/memory", tokMember, user("cw"), mem("pk", "persisted", "private"))
	g.do(t, req{method: "PUT", path: "/v1/system-prompts/user", token: tokMember, hdr: user("cw"), body: map[string]any{"content": "UP-PERSIST"}})
	g.do(t, req{method: "PUT", path: "/v1/tenant/config", token: tokAdmin, body: map[string]any{"key": "compact_keep_last_n", "value": 7}})
	g2 := g.restart()
	if !strings.Contains(string(g2.get(t, "/v1/memory?visibility=private", tokMember, user("cw")).Body), "persisted") {
		t.Errorf("memory lost on restart")
	}
	if r := g2.get(t, "/v1/system-prompts/user", tokMember, user("cw")); r.JSON["content"] != "UP-PERSIST" {
		t.Errorf("system prompt lost on restart: %s", r.Body)
	}
	if r := g2.get(t, "/v1/tenant/config", tokMember, nil); !strings.Contains(string(r.Body), `"compact_keep_last_n":7`) {
		t.Errorf("tenant config lost on restart")
	}
	r = c1(g2, t, tokMember, "cw", nil, map[string]any{"message": "read", "model": "lm-4-scout-cloudA", "attachments": att})
	wantStatus(t, "persisted consent after restart", r, 200)
}

func TestAudio(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Content: "transcribed"}))
	g := startGW(t, gwOpts{local: local.URL})
	form := func(extra string) (string, string) {
		b := "--XB\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nlm-transcribe\r\n" + extra +
			"--XB\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFFxxxxWAVE\r\n--XB--\r\n"
		return b, "multipart/form-data; boundary=XB"
	}
	send := func(body, ct string) *resp {
		return g.do(t, req{method: "POST", path: "/v1/audio/transcriptions", token: tokBetaMem, hdr: map[string]string{"Content-Type": ct}, body: body})
	}
	b, ct := form("")
	r := send(b, ct)
	if wantStatus(t, "transcription", r, 200) {
		checkJSONCT(t, "transcription", r)
		if r.JSON["text"] != "transcribed" {
			t.Errorf("transcription: %s", r.Body)
		}
	}
	b, ct = form("--XB\r\nContent-Disposition: form-data; name=\"user_id\"\r\n\r\nx\r\n")
	wantErr(t, "multipart user_id", send(b, ct), 400, "invalid_request_error", "invalid_field", "body.user_id")
	wantErr(t, "not multipart", send(`{"model":"lm-transcribe"}`, "application/json"), 400, "invalid_request_error", "invalid_field", "headers.content-type")
	b, ct = form("")
	r = g.do(t, req{method: "POST", path: "/v1/audio/transcriptions", token: tokMember, hdr: map[string]string{"Content-Type": ct}, body: b})
	wantErr(t, "transcribe alias outside acme allowlist", r, 400, "invalid_request_error", "model_not_in_allowlist", "model")
	r = g.post(t, "/v1/embeddings", tokMember, nil, map[string]any{"model": "lm-embed", "input": "x"})
	if wantStatus(t, "embeddings", r, 200) {
		checkJSONCT(t, "embeddings", r)
	}
}
