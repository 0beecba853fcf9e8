package blackbox_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// Group 2: /v1/chat/completions, /v1/models, /v1/info, /readyz.

var pngDataURI = func() string {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var b bytes.Buffer
	png.Encode(&b, img)
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}()

func userParts(parts ...any) []any {
	return []any{map[string]any{"role": "user", "content": parts}}
}

func imgPart(url string) map[string]any {
	return map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}}
}

func textPart(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func TestChatPreflight(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	cloudA := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: local.URL, cloudA: cloudA.URL})
	badArgs := []any{
		map[string]any{"role": "user", "content": "hi"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{not json"}}}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "ok"},
	}
	cases := []struct {
		name             string
		body             any
		status           int
		typ, code, param string
	}{
		{"missing messages", map[string]any{"model": "lm-4-scout"}, 400, "invalid_request_error", "missing_field", "messages"},
		{"messages not array", map[string]any{"model": "lm-4-scout", "messages": "hi"}, 400, "invalid_request_error", "invalid_field", "messages"},
		{"missing model", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}, 400, "invalid_request_error", "missing_field", "model"},
		{"model not allowed", chatBody("lm-transcribe"), 400, "invalid_request_error", "model_not_in_allowlist", "model"},
		{"model unknown", chatBody("no-such-model"), 400, "invalid_request_error", "model_not_in_allowlist", "model"},
		{"invalid json", "{", 400, "invalid_request_error", "invalid_json", anyParam},
		{"temperature high", chatBody("lm-4-scout", "temperature", 2.5), 400, "invalid_request_error", "invalid_field", "temperature"},
		{"temperature negative", chatBody("lm-4-scout", "temperature", -0.1), 400, "invalid_request_error", "invalid_field", "temperature"},
		{"max_tokens 0", chatBody("lm-4-scout", "max_tokens", 0), 400, "invalid_request_error", "max_tokens_below_minimum", "max_tokens"},
		{"max_tokens 0 reasoner", chatBody("lm-reasoner", "max_tokens", 0), 400, "invalid_request_error", "max_tokens_below_minimum", "max_tokens"},
		{"http image url", map[string]any{"model": "lm-vision", "messages": userParts(textPart("see"), imgPart("https://example.com/a.png"))}, 400, "invalid_request_error", "image_url_not_supported", "messages[].content[].image_url.url"},
		{"http image url plain", map[string]any{"model": "lm-4-scout", "messages": userParts(imgPart("http://example.com/a.png"))}, 400, "invalid_request_error", "image_url_not_supported", "messages[].content[].image_url.url"},
		{"bad base64", map[string]any{"model": "lm-vision", "messages": userParts(imgPart("data:image/png;base64,!!!!not-base64***"))}, 400, "invalid_request_error", "image_base64_invalid", anyParam},
		{"not an image", map[string]any{"model": "lm-vision", "messages": userParts(imgPart("data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("plain text, not png"))))}, 400, "invalid_request_error", "image_decode_error", anyParam},
		{"mime missing", map[string]any{"model": "lm-vision", "messages": userParts(imgPart("data:;base64," + strings.TrimPrefix(pngDataURI, "data:image/png;base64,")))}, 400, "invalid_request_error", "image_decode_error", anyParam},
		{"text model with image", map[string]any{"model": "lm-text-8k", "messages": userParts(textPart("see"), imgPart(pngDataURI))}, 400, "invalid_request_error", "model_not_vision_capable", "messages[].content[].image_url"},
		{"text model with image attachment", map[string]any{"model": "lm-text-8k", "messages": []any{map[string]any{"role": "user", "content": "see"}}, "attachments": []any{map[string]any{"kind": "image", "url": pngDataURI}}}, 400, "invalid_request_error", "model_not_vision_capable", "messages[].content[].image_url"},
		{"tool args invalid", map[string]any{"model": "lm-4-scout", "messages": badArgs}, 400, "invalid_request_error", "tool_call_arguments_invalid", "messages[].tool_calls[].function.arguments"},
		{"context window", map[string]any{"model": "lm-text-8k", "messages": []any{map[string]any{"role": "user", "content": strings.Repeat("word ", 6000)}}}, 400, "invalid_request_error", "context_window_exceeded", "messages"},
		{"context window with max_tokens", chatBody("lm-text-8k", "max_tokens", 9000), 400, "invalid_request_error", "context_window_exceeded", "messages"},
		{"doc to cloud without consent", map[string]any{"model": "lm-4-scout-cloudA", "messages": []any{map[string]any{"role": "user", "content": "read"}}, "attachments": []any{map[string]any{"kind": "document", "doc_name": "plan.txt", "content": "secret plan"}}}, 409, "conflict_error", "cloud_consent_required", anyParam},
		{"doc to chain with cloud without consent", map[string]any{"model": "lm-4-scout", "messages": []any{map[string]any{"role": "user", "content": "read"}}, "attachments": []any{map[string]any{"kind": "document", "doc_name": "plan.txt", "content": "secret plan"}}}, 409, "conflict_error", "cloud_consent_required", anyParam},
		{"doc hash mismatch", map[string]any{"model": "lm-4-scout-local", "messages": []any{map[string]any{"role": "user", "content": "read"}}, "attachments": []any{map[string]any{"kind": "document", "doc_name": "plan.txt", "content": "secret plan", "content_hash": "sha256:00"}}}, 400, "invalid_request_error", "invalid_field", "attachments[0].content_hash"},
	}
	for _, c := range cases {
		r := g.post(t, "/v1/chat/completions", tokMember, nil, c.body)
		wantErr(t, c.name, r, c.status, c.typ, c.code, c.param)
	}
	if n := len(chatCalls(local)) + len(chatCalls(cloudA)); n != 0 {
		t.Errorf("pre-flight rejections reached the upstream %d times", n)
	}

	// Consent: required_consents names the document, the retry with the header passes.
	doc := map[string]any{"model": "lm-4-scout-cloudA", "messages": []any{map[string]any{"role": "user", "content": "read"}}, "attachments": []any{map[string]any{"kind": "document", "doc_name": "plan.txt", "content": "secret plan"}}}
	h := sha256.Sum256([]byte("secret plan"))
	hash := "sha256:" + hex.EncodeToString(h[:])
	r := g.post(t, "/v1/chat/completions", tokMember, nil, doc)
	if rc, _ := r.JSON["required_consents"].([]any); len(rc) != 1 {
		t.Errorf("cloud_consent_required: required_consents %v", r.JSON["required_consents"])
	} else if m, _ := rc[0].(map[string]any); m["content_hash"] != hash || m["doc_name"] != "plan.txt" {
		t.Errorf("required_consents[0] = %v, want content_hash %s doc_name plan.txt", m, hash)
	}
	r = g.post(t, "/v1/chat/completions", tokMember, map[string]string{"GW-Cloud-Consent": hash}, doc)
	if wantStatus(t, "consented retry", r, 200) {
		calls := chatCalls(cloudA)
		if len(calls) != 1 {
			t.Fatalf("cloudA calls %d", len(calls))
		}
		b := bodyMap(t, calls[0])
		if _, ok := b["attachments"]; ok {
			t.Errorf("attachments forwarded upstream (DECISIONS 8.31)")
		}
		if !strings.Contains(string(calls[0].Body), "Document plan.txt:") {
			t.Errorf("document not turned into a text part: %s", calls[0].Body)
		}
	}
	// Consent is not kept without ;persist.
	wantErr(t, "consent not persisted", g.post(t, "/v1/chat/completions", tokMember, nil, doc), 409, "conflict_error", "cloud_consent_required", anyParam)
	// ;persist grants the tenant.
	wantStatus(t, "persist grant", g.post(t, "/v1/chat/completions", tokMember, map[string]string{"GW-Cloud-Consent": hash + ";persist"}, doc), 200)
	wantStatus(t, "persisted grant, other token", g.post(t, "/v1/chat/completions", tokAdmin, nil, doc), 200)
	// Local-only alias needs no consent.
	doc2 := map[string]any{"model": "lm-4-scout-local", "messages": []any{map[string]any{"role": "user", "content": "read"}}, "attachments": []any{map[string]any{"kind": "document", "doc_name": "other.txt", "content": "other"}}}
	wantStatus(t, "doc to local alias", g.post(t, "/v1/chat/completions", tokMember, nil, doc2), 200)
	// Tenant without the setting: no consent needed.
	doc3 := map[string]any{"model": "lm-4-scout-cloudA", "messages": []any{map[string]any{"role": "user", "content": "read"}}, "attachments": []any{map[string]any{"kind": "document", "doc_name": "b.txt", "content": "beta doc"}}}
	wantStatus(t, "doc to cloud, tenant without consent setting", g.post(t, "/v1/chat/completions", tokBetaMem, nil, doc3), 200)

	// A valid data-URI image to a vision model passes; an image attachment becomes an image_url part.
	before := len(chatCalls(local))
	wantStatus(t, "valid image", g.post(t, "/v1/chat/completions", tokMember, nil, map[string]any{"model": "lm-vision", "messages": userParts(textPart("see"), imgPart(pngDataURI))}), 200)
	wantStatus(t, "image attachment", g.post(t, "/v1/chat/completions", tokMember, nil, map[string]any{"model": "lm-vision", "messages": []any{map[string]any{"role": "user", "content": "see"}}, "attachments": []any{map[string]any{"kind": "image", "url": pngDataURI}}}), 200)
	if calls := chatCalls(local); len(calls) == before+2 {
		if !strings.Contains(string(calls[before+1].Body), `"image_url"`) {
			t.Errorf("image attachment not forwarded as image_url part: %s", trunc(calls[before+1].Body))
		}
	}
}

func TestChatMaxTokensFloor(t *testing.T) {
	t.Parallel()
	cloudA := upstreamtest.New(t)
	g := startGW(t, gwOpts{cloudA: cloudA.URL})
	for _, stream := range []bool{false, true} {
		r := g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-reasoner", "max_tokens", 50, "stream", stream))
		if !wantStatus(t, "reasoner max_tokens 50", r, 200) {
			continue
		}
		for _, h := range []string{"gw-applied", "x-rust-api-applied"} {
			if got := r.Header.Get(h); got != "max_tokens_floored=200" {
				t.Errorf("stream=%v: header %s = %q, want max_tokens_floored=200", stream, h, got)
			}
		}
		calls := chatCalls(cloudA)
		if mt := bodyMap(t, calls[len(calls)-1])["max_tokens"]; mt != float64(200) {
			t.Errorf("stream=%v: upstream max_tokens %v, want 200", stream, mt)
		}
	}
	r := g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-reasoner", "max_tokens", 300))
	if wantStatus(t, "reasoner max_tokens 300", r, 200) && (r.Header.Get("gw-applied") != "" || r.Header.Get("x-rust-api-applied") != "") {
		t.Errorf("max_tokens 300: floor header present")
	}
	r = g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-reasoner", "max_tokens", 1))
	if wantStatus(t, "reasoner max_tokens 1", r, 200) && r.Header.Get("gw-applied") != "max_tokens_floored=200" {
		t.Errorf("max_tokens 1: gw-applied %q", r.Header.Get("gw-applied"))
	}
}

type fb struct {
	name                  string
	local, cloudA, cloudB *upstreamtest.Reply // nil: refused
	model                 string
	status                int
	code                  string
	served                string // which fake answers (200)
	fallback              bool
	calls                 [3]int // chat calls on local, cloudA, cloudB
	env                   map[string]string
}

func ok() *upstreamtest.Reply      { return &upstreamtest.Reply{} }
func st(s int) *upstreamtest.Reply { return &upstreamtest.Reply{Status: s} }

func TestChatFallback(t *testing.T) {
	t.Parallel()
	cases := []fb{
		{name: "local refused -> cloudA", local: nil, cloudA: ok(), cloudB: ok(), model: "lm-4-scout", status: 200, served: "cloudA", fallback: true, calls: [3]int{0, 1, 0}},
		{name: "local 500 -> cloudA", local: st(500), cloudA: ok(), cloudB: ok(), model: "lm-4-scout", status: 200, served: "cloudA", fallback: true, calls: [3]int{1, 1, 0}},
		{name: "local 429 -> cloudA", local: st(429), cloudA: ok(), cloudB: ok(), model: "lm-4-scout", status: 200, served: "cloudA", fallback: true, calls: [3]int{1, 1, 0}},
		{name: "local 503, cloudA 502 -> cloudB", local: st(503), cloudA: st(502), cloudB: ok(), model: "lm-4-scout", status: 200, served: "cloudB", fallback: true, calls: [3]int{1, 1, 1}},
		{name: "first-byte time-out -> cloudA", local: &upstreamtest.Reply{Hang: true}, cloudA: ok(), cloudB: ok(), model: "lm-4-scout", status: 200, served: "cloudA", fallback: true, calls: [3]int{1, 1, 0}},
		{name: "slow headers -> cloudA", local: &upstreamtest.Reply{Latency: 2 * time.Second}, cloudA: ok(), cloudB: ok(), model: "lm-4-scout", status: 200, served: "cloudA", fallback: true, calls: [3]int{1, 1, 0}},
		{name: "local ok, no fallback", local: ok(), cloudA: ok(), cloudB: ok(), model: "lm-4-scout", status: 200, served: "local", calls: [3]int{1, 0, 0}},
		{name: "pinned local refused", local: nil, cloudA: ok(), cloudB: ok(), model: "lm-4-scout-local", status: 503, code: "upstream_unavailable", calls: [3]int{0, 0, 0}},
		{name: "pinned local 500", local: st(500), cloudA: ok(), cloudB: ok(), model: "lm-4-scout-local", status: 502, code: "upstream_error", calls: [3]int{1, 0, 0}},
		{name: "pinned cloudA 429", local: ok(), cloudA: &upstreamtest.Reply{Status: 429, RetryAfter: "7"}, cloudB: ok(), model: "lm-4-scout-cloudA", status: 429, code: "upstream_bad_request", calls: [3]int{0, 1, 0}},
		{name: "pinned cloudB hang, total time-out", local: ok(), cloudA: ok(), cloudB: &upstreamtest.Reply{Hang: true}, model: "lm-4-scout-cloudB", status: 504, code: "upstream_timeout", calls: [3]int{0, 0, 1},
			env: map[string]string{"GATEWAY_FIRST_BYTE_TIMEOUT": "10s", "GATEWAY_UPSTREAM_TIMEOUT": "800ms"}},
		{name: "pinned cloudB silent past the first-byte time-out", local: ok(), cloudA: ok(), cloudB: &upstreamtest.Reply{Hang: true}, model: "lm-4-scout-cloudB", status: 504, code: "upstream_timeout", calls: [3]int{0, 0, 1}},
		{name: "chain all hang, total time-out", local: &upstreamtest.Reply{Hang: true}, cloudA: &upstreamtest.Reply{Hang: true}, cloudB: &upstreamtest.Reply{Hang: true}, model: "lm-4-scout", status: 504, code: "upstream_timeout", calls: [3]int{1, 0, 0},
			env: map[string]string{"GATEWAY_FIRST_BYTE_TIMEOUT": "10s", "GATEWAY_UPSTREAM_TIMEOUT": "800ms"}},
		{name: "local 400 -> upstream_bad_request, no fallback", local: &upstreamtest.Reply{Status: 400, ErrorMessage: "bad thing here"}, cloudA: ok(), cloudB: ok(), model: "lm-4-scout", status: 400, code: "upstream_bad_request", calls: [3]int{1, 0, 0}},
		{name: "pinned 422", local: &upstreamtest.Reply{Status: 422, ErrorMessage: "unprocessable x"}, model: "lm-4-scout-local", status: 422, code: "upstream_bad_request", calls: [3]int{1, 0, 0}},
		{name: "all refused -> 503", model: "lm-4-scout", status: 503, code: "upstream_unavailable"},
		{name: "local 500, clouds refused -> 502", local: st(500), model: "lm-4-scout", status: 502, code: "upstream_error", calls: [3]int{1, 0, 0}},
		{name: "all 500 -> 502", local: st(500), cloudA: st(500), cloudB: st(500), model: "lm-4-scout", status: 502, code: "upstream_error", calls: [3]int{1, 1, 1}},
		{name: "200 with non-JSON body -> 502", local: &upstreamtest.Reply{Body: []byte("<html>oops</html>"), ContentType: "text/html"}, model: "lm-4-scout-local", status: 502, code: "upstream_error", calls: [3]int{1, 0, 0}},
	}
	for _, c := range cases {
		for _, stream := range []bool{false, true} {
			c, stream := c, stream
			name := c.name
			if stream {
				name += " stream"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runFallback(t, c, stream)
			})
		}
	}
}

func fakeFor(t *testing.T, r *upstreamtest.Reply) (*upstreamtest.Server, string) {
	if r == nil {
		return nil, upstreamtest.RefusedURL(t)
	}
	s := upstreamtest.New(t, upstreamtest.WithReply(*r))
	return s, s.URL
}

func runFallback(t *testing.T, c fb, stream bool) {
	l, lu := fakeFor(t, c.local)
	a, au := fakeFor(t, c.cloudA)
	b, bu := fakeFor(t, c.cloudB)
	env := map[string]string{"GATEWAY_FIRST_BYTE_TIMEOUT": "300ms", "GATEWAY_UPSTREAM_TIMEOUT": "1500ms"}
	for k, v := range c.env {
		env[k] = v
	}
	g := startGW(t, gwOpts{local: lu, cloudA: au, cloudB: bu, env: env})
	start := time.Now()
	r := g.post(t, "/v1/chat/completions", tokMember, nil, chatBody(c.model, "stream", stream))
	el := time.Since(start)
	fakes := []*upstreamtest.Server{l, a, b}
	names := []string{"local", "cloudA", "cloudB"}
	for i, f := range fakes {
		n := 0
		if f != nil {
			n = len(chatCalls(f))
		}
		if n != c.calls[i] {
			t.Errorf("%s chat calls %d, want %d", names[i], n, c.calls[i])
		}
	}
	if c.status != 200 {
		wantErr(t, c.name, r, c.status, map[int]string{400: "invalid_request_error", 422: "invalid_request_error", 429: "invalid_request_error", 502: "api_error", 503: "overloaded_error", 504: "timeout_error"}[c.status], c.code, anyParam)
		if c.code == "upstream_bad_request" && c.local != nil && c.local.ErrorMessage != "" {
			if e, _ := r.JSON["error"].(map[string]any); e == nil || !strings.Contains(e["message"].(string), c.local.ErrorMessage) {
				t.Errorf("upstream reason not in message: %s", trunc(r.Body))
			}
		}
		if c.status == 429 && r.Header.Get("Retry-After") != "7" {
			t.Errorf("upstream Retry-After not passed on: %q (DECISIONS 8.13)", r.Header.Get("Retry-After"))
		}
		if c.code == "upstream_timeout" && el > 3*time.Second {
			t.Errorf("upstream_timeout after %v with GATEWAY_UPSTREAM_TIMEOUT=800ms", el)
		}
		return
	}
	if !wantStatus(t, c.name, r, 200) {
		return
	}
	// The backend that served got its router_alias as model.
	wantModel := map[string]string{"local": "lm-4-scout:17b-16e-instruct-q4_K_M", "cloudA": "lm-4-scout-17b-16e-instruct", "cloudB": "lm-4-scout-17b-16e-instruct:free"}[c.served]
	for i, f := range fakes {
		if names[i] == c.served && f != nil {
			calls := chatCalls(f)
			if len(calls) > 0 && calls[len(calls)-1].Model != wantModel {
				t.Errorf("model sent to %s: %q, want router_alias %q", c.served, calls[len(calls)-1].Model, wantModel)
			}
		}
	}
	notice := r.Header.Get("GW-Notice")
	if !stream {
		if c.fallback && !strings.Contains(notice, "backend_fallback") {
			t.Errorf("GW-Notice %q, want backend_fallback (DECISIONS 5)", notice)
		}
		if !c.fallback && strings.Contains(notice, "backend_fallback") {
			t.Errorf("GW-Notice %q without a fallback", notice)
		}
		var cc map[string]any
		json.Unmarshal(r.Body, &cc)
		if cc["object"] != "chat.completion" {
			t.Errorf("answer not a chat.completion: %s", trunc(r.Body))
		}
		checkJSONCT(t, "chat json", r)
		return
	}
	checkStream(t, r, c.fallback)
}

// checkStream checks an SSE answer: OpenAI chunks, optional gw.notice
// backend_fallback before [DONE] with the stream's own id/created/model.
func checkStream(t *testing.T, r *resp, fallback bool) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("stream Content-Type %q", ct)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("stream Cache-Control %q, want no-cache (DECISIONS 8.30)", cc)
	}
	evs := parseSSE(r.Body)
	if len(evs) == 0 || evs[len(evs)-1].Data != "[DONE]" || evs[len(evs)-1].Event != "" {
		t.Errorf("stream does not end with data: [DONE]: %s", trunc(r.Body))
		return
	}
	var id, model string
	var created float64
	var content strings.Builder
	var notices []map[string]any
	for i, e := range evs[:len(evs)-1] {
		var m map[string]any
		if err := json.Unmarshal([]byte(e.Data), &m); err != nil {
			t.Errorf("event %d data not JSON: %q", i, e.Data)
			continue
		}
		switch e.Event {
		case "":
			if m["object"] != "chat.completion.chunk" {
				t.Errorf("event %d object %v", i, m["object"])
			}
			if id == "" {
				id, _ = m["id"].(string)
				model, _ = m["model"].(string)
				created, _ = m["created"].(float64)
			}
			for _, ch := range asSlice(m["choices"]) {
				d, _ := ch.(map[string]any)["delta"].(map[string]any)
				s, _ := d["content"].(string)
				content.WriteString(s)
			}
		case "gw.notice":
			if i < len(evs)-2 && evs[len(evs)-2].Event != "gw.notice" {
				// fine as long as before [DONE]
			}
			if m["object"] != "chat.completion.chunk" || m["id"] != id || m["model"] != model || m["created"] != created {
				t.Errorf("gw.notice not shaped like the stream's chunks (id %v/%v model %v/%v created %v/%v object %v): %s", m["id"], id, m["model"], model, m["created"], created, m["object"], e.Data)
			}
			if ch, ok := m["choices"].([]any); !ok || len(ch) != 0 {
				t.Errorf("gw.notice choices %v, want []", m["choices"])
			}
			n, _ := m["gw_notice"].(map[string]any)
			if n == nil || n["code"] == nil || n["message"] == nil {
				t.Errorf("gw.notice gw_notice %v, want {code, message}", m["gw_notice"])
			}
			notices = append(notices, n)
		default:
			t.Errorf("unexpected event %q: %s", e.Event, e.Data)
		}
	}
	if content.String() != upstreamtest.DefaultContent {
		t.Errorf("streamed content %q, want %q", content.String(), upstreamtest.DefaultContent)
	}
	got := false
	for _, n := range notices {
		if n["code"] == "backend_fallback" {
			got = true
			if msg, _ := n["message"].(string); !strings.Contains(msg, "lm-4-scout") {
				t.Errorf("backend_fallback message %q does not name the alias", msg)
			}
		}
	}
	if got != fallback {
		t.Errorf("gw.notice backend_fallback present=%v, want %v; body %s", got, fallback, trunc(r.Body))
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func TestChatStreamVerbatimAndDrop(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Chunks: 5, Content: "one two three four five"}))
	cloudA := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: local.URL, cloudA: cloudA.URL})
	r := g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-4-scout", "stream", true, "stream_options", map[string]any{"include_usage": true}))
	if wantStatus(t, "stream", r, 200) {
		// What the fake itself sends for the same request.
		call := chatCalls(local)[0]
		hr, _ := http.NewRequest("POST", local.URL+"/chat/completions", bytes.NewReader(call.Body))
		hr.Header.Set("Content-Type", "application/json")
		dr, err := client.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		want.ReadFrom(dr.Body)
		dr.Body.Close()
		wevs, gevs := parseSSE(want.Bytes()), parseSSE(r.Body)
		var gd []string
		for _, e := range gevs {
			if e.Event == "" {
				gd = append(gd, e.Data)
			}
		}
		var wd []string
		for _, e := range wevs {
			wd = append(wd, e.Data)
		}
		if strings.Join(gd, "\n") != strings.Join(wd, "\n") {
			t.Errorf("stream not relayed verbatim:\n got %q\nwant %q", gd, wd)
		}
		// Unknown fields pass through verbatim.
		if !strings.Contains(string(call.Body), `"stream_options"`) {
			t.Errorf("stream_options not passed through: %s", call.Body)
		}
	}
	// A dropped stream: gw.error, no [DONE], no fallback after the first byte.
	local.SetReply(upstreamtest.Reply{Chunks: 5, Drop: true, DropAfter: 2})
	r = g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-4-scout", "stream", true))
	if wantStatus(t, "dropped stream", r, 200) {
		evs := parseSSE(r.Body)
		var gotErr bool
		for _, e := range evs {
			if e.Data == "[DONE]" {
				t.Errorf("dropped stream ends with [DONE]")
			}
			if e.Event == "gw.error" {
				gotErr = true
				var m map[string]any
				json.Unmarshal([]byte(e.Data), &m)
				if er, _ := m["error"].(map[string]any); er == nil || er["code"] == nil || er["type"] == nil || er["message"] == nil {
					t.Errorf("gw.error data not an error envelope: %s", e.Data)
				}
			}
		}
		if !gotErr {
			t.Errorf("dropped stream: no gw.error event: %s", trunc(r.Body))
		}
		if n := len(chatCalls(cloudA)); n != 0 {
			t.Errorf("fell back to cloudA after the first byte (%d calls)", n)
		}
	}
	// A dropped unary answer falls back? Not after bytes reached the client; before: next backend.
	local.SetReply(upstreamtest.Reply{})
	r = g.post(t, "/v1/chat/completions", tokMember, nil, chatBody("lm-4-scout"))
	if wantStatus(t, "unary", r, 200) && r.Header.Get("GW-Notice") != "" {
		t.Errorf("GW-Notice %q on a plain answer", r.Header.Get("GW-Notice"))
	}
}

func TestModelsInfoReady(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	cloudA := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: local.URL, cloudA: cloudA.URL})
	r := g.get(t, "/v1/models", tokMember, nil)
	if wantStatus(t, "models", r, 200) {
		checkJSONCT(t, "models", r)
		if r.JSON["object"] != "list" {
			t.Errorf("/v1/models object %v", r.JSON["object"])
		}
		var ids []string
		for _, d := range asSlice(r.JSON["data"]) {
			m := d.(map[string]any)
			ids = append(ids, m["id"].(string))
			if m["object"] != "model" || m["created"] == nil || m["owned_by"] == nil {
				t.Errorf("model entry shape: %v", m)
			}
		}
		if strings.Join(sorted(ids), ",") != strings.Join(sorted(acmeModels), ",") {
			t.Errorf("/v1/models ids %v, want the allowlist %v", ids, acmeModels)
		}
	}
	r = g.get(t, "/v1/models", tokBetaMem, nil)
	if wantStatus(t, "models beta", r, 200) && len(asSlice(r.JSON["data"])) != 10 {
		t.Errorf("tenant without models list: %d models, want all 10", len(asSlice(r.JSON["data"])))
	}
	r = g.get(t, "/v1/info", tokMember, nil)
	if wantStatus(t, "info", r, 200) {
		if _, ok := r.JSON["notes"].(string); !ok {
			t.Errorf("/v1/info notes missing")
		}
		models := asSlice(r.JSON["models"])
		if len(models) != len(acmeModels) {
			t.Errorf("/v1/info %d models, want %d", len(models), len(acmeModels))
		}
		for _, mm := range models {
			m := mm.(map[string]any)
			for _, f := range []string{"alias", "description", "family", "context_window", "modalities", "tools", "json_mode", "reasoning_mode", "license", "backends", "constraints", "notes", "kind"} {
				if _, ok := m[f]; !ok {
					t.Errorf("/v1/info %v: field %s missing", m["alias"], f)
				}
			}
			mod, _ := m["modalities"].(map[string]any)
			for _, f := range []string{"text_in", "text_out", "image_in", "audio_in", "video_in", "image_out"} {
				if _, ok := mod[f].(bool); !ok {
					t.Errorf("/v1/info %v: modalities.%s not boolean", m["alias"], f)
				}
			}
			con, _ := m["constraints"].(map[string]any)
			if v, ok := con["accepts_image_url"].(bool); !ok || v {
				t.Errorf("/v1/info %v: accepts_image_url %v, want false", m["alias"], con["accepts_image_url"])
			}
			for _, bb := range asSlice(m["backends"]) {
				b := bb.(map[string]any)
				p, _ := b["provider"].(string)
				if p != "local" && p != "cloudA" && p != "cloudB" {
					t.Errorf("/v1/info %v: provider %q", m["alias"], p)
				}
				if _, ok := b["router_alias"].(string); !ok {
					t.Errorf("/v1/info %v: router_alias missing", m["alias"])
				}
				if _, ok := b["base_url_env"]; ok {
					t.Errorf("/v1/info %v: base_url_env leaked", m["alias"])
				}
				want := "available"
				if p == "cloudB" {
					want = "unconfigured"
				}
				if b["status"] != want {
					t.Errorf("/v1/info %v backend %s: status %v, want %s (DECISIONS 2)", m["alias"], p, b["status"], want)
				}
				if p == "local" && b["pricing"] != nil {
					t.Errorf("/v1/info %v: local pricing %v, want null", m["alias"], b["pricing"])
				}
			}
			if m["alias"] == "lm-reasoner" && con["min_max_tokens"] != float64(200) {
				t.Errorf("lm-reasoner min_max_tokens %v", con["min_max_tokens"])
			}
		}
	}
	r = g.get(t, "/readyz", "", nil)
	if wantStatus(t, "readyz", r, 200) {
		checkReady(t, r, true, "available", "available")
	}
}

func checkReady(t *testing.T, r *resp, ready bool, router, local string) {
	t.Helper()
	checkJSONCT(t, "readyz", r)
	if r.JSON["ready"] != ready || r.JSON["router"] != router || r.JSON["local_backend"] != local {
		t.Errorf("readyz %s, want ready=%v router=%s local_backend=%s", trunc(r.Body), ready, router, local)
	}
	p, _ := r.JSON["probes"].(map[string]any)
	for _, k := range []string{"router", "local_backend", "cloudA", "cloudB"} {
		pk, _ := p[k].(map[string]any)
		if pk == nil {
			t.Errorf("readyz probes.%s missing (DECISIONS 8.21): %s", k, trunc(r.Body))
			continue
		}
		for _, f := range []string{"configured", "reachable", "ms"} {
			if _, ok := pk[f]; !ok {
				t.Errorf("readyz probes.%s.%s missing", k, f)
			}
		}
	}
}

func TestReadyzNotReady(t *testing.T) {
	t.Parallel()
	g := startGW(t, gwOpts{})
	r := g.get(t, "/readyz", "", nil)
	if wantStatus(t, "readyz local refused, no cloud", r, 503) {
		checkReady(t, r, false, "unconfigured", "unconfigured")
		p, _ := r.JSON["probes"].(map[string]any)
		lb, _ := p["local_backend"].(map[string]any)
		if lb["configured"] != true || lb["reachable"] != false {
			t.Errorf("probes.local_backend %v, want configured true reachable false", lb)
		}
	}
	// Local unconfigured (empty URL), cloudA answering: ready, local unconfigured.
	cloudA := upstreamtest.New(t)
	g2 := startGW(t, gwOpts{localSet: true, local: "", cloudA: cloudA.URL})
	r = g2.get(t, "/readyz", "", nil)
	if wantStatus(t, "readyz local unconfigured, cloudA up", r, 200) {
		checkReady(t, r, true, "available", "unconfigured")
	}
	r = g2.get(t, "/v1/info", tokAdmin, nil)
	for _, mm := range asSlice(r.JSON["models"]) {
		for _, bb := range asSlice(mm.(map[string]any)["backends"]) {
			b := bb.(map[string]any)
			if b["provider"] == "local" && b["status"] != "unconfigured" {
				t.Errorf("/v1/info local backend with empty URL: status %v", b["status"])
			}
		}
	}
	// A hanging local backend: the probe gives up within ~1 s.
	hang := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Hang: true}))
	g3 := startGW(t, gwOpts{local: hang.URL})
	start := time.Now()
	r = g3.get(t, "/readyz", "", nil)
	if d := time.Since(start); d > 1800*time.Millisecond {
		t.Errorf("readyz with a hanging backend took %v, want about 1s", d)
	}
	wantStatus(t, "readyz hanging local", r, 503)
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
