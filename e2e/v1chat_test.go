package e2e_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

var (
	pngURI  = "data:image/png;base64," + onePixelPNG
	jpegURI = "data:image/jpeg;base64," + encodeImage("jpeg")
	gifURI  = "data:image/gif;base64," + encodeImage("gif")
)

func encodeImage(kind string) string {
	img := image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black, color.White})
	var b bytes.Buffer
	if kind == "jpeg" {
		jpeg.Encode(&b, img, nil)
	} else {
		gif.Encode(&b, img, nil)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// imageMsg is a user message with a text part and an image_url part.
func imageMsg(model, url string) map[string]any {
	return map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "what is this?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}},
	}}}}
}

func TestChatCompletionsPreflight(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	const (
		inv   = "invalid_request_error"
		vref  = "spec POST /v1/chat/completions; Codes table; DECISIONS 8.2/8.3"
		pngOK = "data:image/png;base64," + onePixelPNG
	)
	c := func(name string, body any, code, param string) errCase {
		return errCase{name: name, method: "POST", path: "/v1/chat/completions", token: tokAdmin, body: body,
			status: 400, typ: inv, code: code, param: param, ref: vref}
	}
	toolCall := func(args string) map[string]any {
		return map[string]any{"model": "lm-4-scout", "messages": []any{
			map[string]any{"role": "user", "content": "weather?"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": args}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
		}}
	}
	withField := func(k string, v any) map[string]any {
		b := chatBody("lm-4-scout", "hi")
		b[k] = v
		return b
	}
	attach := func(model string, a ...any) map[string]any {
		b := chatBody(model, "see attached")
		b["attachments"] = a
		return b
	}
	cases := errCases{
		c("invalid json", `{"model":`, "invalid_json", anyParam),
		c("body is an array", `[1,2]`, "invalid_json", anyParam),
		c("missing messages", map[string]any{"model": "lm-4-scout"}, "missing_field", "messages"),
		c("missing model", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}, "missing_field", "model"),
		c("messages a string", map[string]any{"model": "lm-4-scout", "messages": "hi"}, "invalid_field", "messages"),
		c("messages of numbers", map[string]any{"model": "lm-4-scout", "messages": []any{1, 2}}, "invalid_field", "messages"),
		c("model a number", map[string]any{"model": 7, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}, "invalid_field", "model"),
		c("model unknown", chatBody("gpt-unknown", "hi"), "model_not_in_allowlist", "model"),
		c("model not in tenant allowlist", chatBody("lm-transcribe", "hi"), "model_not_in_allowlist", "model"),
		c("temperature above 2", withField("temperature", 2.5), "invalid_field", "temperature"),
		c("temperature below 0", withField("temperature", -0.1), "invalid_field", "temperature"),
		c("temperature a string", withField("temperature", "hot"), "invalid_field", "temperature"),
		c("max_tokens 0", withField("max_tokens", 0), "max_tokens_below_minimum", "max_tokens"),
		c("max_tokens negative", withField("max_tokens", -5), "max_tokens_below_minimum", "max_tokens"),
		c("image http url", imageMsg("lm-4-scout", "https://example.com/cat.png"), "image_url_not_supported", "messages[].content[].image_url.url"),
		c("image plain http url", imageMsg("lm-vision", "http://example.com/cat.png"), "image_url_not_supported", "messages[].content[].image_url.url"),
		c("data uri without comma", imageMsg("lm-4-scout", "data:image/png;base64"), "image_decode_error", anyParam),
		c("data uri without mime", imageMsg("lm-4-scout", "data:;base64,"+onePixelPNG), "image_decode_error", anyParam),
		c("data uri bmp", imageMsg("lm-4-scout", "data:image/bmp;base64,"+onePixelPNG), "image_decode_error", anyParam),
		c("data uri bytes not an image", imageMsg("lm-4-scout", "data:image/png;base64,"+base64.StdEncoding.EncodeToString([]byte("hello world, not a picture"))), "image_decode_error", anyParam),
		c("png bytes labelled jpeg", imageMsg("lm-4-scout", "data:image/jpeg;base64,"+onePixelPNG), "image_decode_error", anyParam),
		c("base64 invalid", imageMsg("lm-4-scout", "data:image/png;base64,!!!not*base64!!!"), "image_base64_invalid", anyParam),
		c("image to text-only model", imageMsg("lm-text-8k", pngOK), "model_not_vision_capable", "messages[].content[].image_url"),
		c("image attachment to text-only model", attach("lm-text-8k", map[string]any{"kind": "image", "url": pngOK}), "model_not_vision_capable", "messages[].content[].image_url"),
		c("image to reasoning model (image_in false)", imageMsg("lm-reasoner", pngOK), "model_not_vision_capable", "messages[].content[].image_url"),
		c("tool call arguments not JSON", toolCall("{not json"), "tool_call_arguments_invalid", "messages[].tool_calls[].function.arguments"),
		c("tool call arguments truncated", toolCall(`{"city":"Paris"`), "tool_call_arguments_invalid", "messages[].tool_calls[].function.arguments"),
		c("context window exceeded by prompt", chatBody("lm-text-8k", strings.Repeat("word ", 8000)), "context_window_exceeded", "messages"),
		c("context window exceeded by max_tokens", func() map[string]any {
			b := chatBody("lm-text-8k", "short")
			b["max_tokens"] = 9000
			return b
		}(), "context_window_exceeded", "messages"),
		c("attachment hash mismatch", attach("lm-4-scout-local", map[string]any{"kind": "document", "doc_name": "a.txt", "content": "abc", "content_hash": "sha256:00"}), "invalid_field", "attachments[0].content_hash"),
	}
	runErrCases(t, g, cases)
	if n := chatCalls(g.Local) + chatCalls(g.CloudA) + chatCalls(g.CloudB); n != 0 {
		t.Errorf("pre-flight failures reached the upstream %d times, want 0 (issue 3 item 5: before anything is forwarded)", n)
	}

	t.Run("valid images pass", func(t *testing.T) {
		for _, u := range []string{pngURI, jpegURI, gifURI} {
			r := g.post(t, "/v1/chat/completions", tokAdmin, "", imageMsg("lm-4-scout-local", u))
			wantStatus(t, r, 200, "valid data URI image ("+u[:16]+")")
		}
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", toolCall(`{"city":"Paris"}`))
		wantStatus(t, r, 200, "valid tool call arguments")
		b := chatBody("lm-4-scout", "hi")
		b["temperature"] = 2.0
		wantStatus(t, g.post(t, "/v1/chat/completions", tokAdmin, "", b), 200, "temperature 2.0 is in range (spec Limits)")
		b["temperature"] = 0
		wantStatus(t, g.post(t, "/v1/chat/completions", tokAdmin, "", b), 200, "temperature 0 is in range")
	})

	t.Run("image attachment becomes a content part", func(t *testing.T) {
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", attach("lm-4-scout-local", map[string]any{"kind": "image", "url": pngURI}))
		if !wantStatus(t, r, 200, "DECISIONS 8.31") {
			return
		}
		body := lastBody(t, g.Local, "/chat/completions")
		if _, ok := body["attachments"]; ok {
			t.Errorf("upstream received attachments; DECISIONS 8.31: attachments itself is not forwarded")
		}
		msgs := messagesOf(body)
		last := msgs[len(msgs)-1]
		if !strings.Contains(mustJSON(last["content"]), `"image_url"`) || !strings.Contains(mustJSON(last["content"]), onePixelPNG) {
			t.Errorf("upstream last message %s, want an image_url part with the data URI (DECISIONS 8.31)", mustJSON(last))
		}
	})

	t.Run("passthrough verbatim", func(t *testing.T) {
		b := chatBody("lm-4-scout-local", "hi")
		b["custom_vendor_field"] = map[string]any{"x": 1}
		b["seed"] = 42
		b["response_format"] = map[string]any{"type": "json_object"}
		b["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{"type": "object"}}}}
		r := g.do(t, "POST", "/v1/chat/completions", tokAdmin, "", b, nil)
		if !wantStatus(t, r, 200, "spec: request passed through verbatim") {
			return
		}
		up := lastBody(t, g.Local, "/chat/completions")
		if up["model"] != "lm-4-scout:17b-16e-instruct-q4_K_M" {
			t.Errorf("upstream model %v, want router_alias lm-4-scout:17b-16e-instruct-q4_K_M (DECISIONS 8.5)", up["model"])
		}
		for _, k := range []string{"custom_vendor_field", "seed", "response_format", "tools"} {
			if mustJSON(up[k]) != mustJSON(b[k]) {
				t.Errorf("upstream %s = %s, want %s (DECISIONS 5: unknown fields passed through verbatim)", k, mustJSON(up[k]), mustJSON(b[k]))
			}
		}
		calls := g.Local.Calls()
		h := calls[len(calls)-1].Header
		if strings.Contains(h.Get("Authorization"), tokAdmin) {
			t.Errorf("the client's bearer token was forwarded to the upstream")
		}
		m := r.JSON()
		if m["object"] != "chat.completion" || m["choices"] == nil {
			t.Errorf("response %s is not an OpenAI chat completion", truncate(string(r.Body), 300))
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Content-Type %q, want application/json (DECISIONS 8.30)", ct)
		}
	})

	t.Run("max_tokens flooring", func(t *testing.T) {
		b := chatBody("lm-reasoner", "think")
		b["max_tokens"] = 50
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", b)
		if !wantStatus(t, r, 200, "spec ModelConstraints min_max_tokens") {
			return
		}
		if got := r.Header.Get("gw-applied"); got != "max_tokens_floored=200" {
			t.Errorf("gw-applied = %q, want max_tokens_floored=200 (spec ModelConstraints; Limits)", got)
		}
		if got := r.Header.Get("x-rust-api-applied"); got != "max_tokens_floored=200" {
			t.Errorf("x-rust-api-applied = %q, want max_tokens_floored=200 (DECISIONS 5: sent together with gw-applied)", got)
		}
		if up := lastBody(t, g.CloudA, "/chat/completions"); up["max_tokens"] != 200.0 {
			t.Errorf("upstream max_tokens %v, want 200 (silently raised)", up["max_tokens"])
		}
		b["max_tokens"] = 1
		r = g.post(t, "/v1/chat/completions", tokAdmin, "", b)
		if r.Status != 200 || r.Header.Get("gw-applied") != "max_tokens_floored=200" {
			t.Errorf("max_tokens 1 on lm-reasoner: %d gw-applied %q, want 200 and floored=200 (DECISIONS 8.19)", r.Status, r.Header.Get("gw-applied"))
		}
		b["max_tokens"] = 300
		r = g.post(t, "/v1/chat/completions", tokAdmin, "", b)
		if r.Status != 200 || r.Header.Get("gw-applied") != "" || r.Header.Get("x-rust-api-applied") != "" {
			t.Errorf("max_tokens 300 on lm-reasoner: %d gw-applied %q, want 200 and no header", r.Status, r.Header.Get("gw-applied"))
		}
		if up := lastBody(t, g.CloudA, "/chat/completions"); up["max_tokens"] != 300.0 {
			t.Errorf("upstream max_tokens %v, want 300 unchanged", up["max_tokens"])
		}
		// streaming carries the header too
		b["max_tokens"] = 10
		b["stream"] = true
		r = g.post(t, "/v1/chat/completions", tokAdmin, "", b)
		if r.Status != 200 || r.Header.Get("gw-applied") != "max_tokens_floored=200" {
			t.Errorf("streaming max_tokens 10 on lm-reasoner: %d gw-applied %q, want floored=200", r.Status, r.Header.Get("gw-applied"))
		}
	})
}

func TestCloudConsent(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	doc := map[string]any{"kind": "document", "doc_name": "plan.txt", "content": "the secret plan"}
	hash := "sha256:" + sha256Hex("the secret plan")
	body := func(model string) map[string]any {
		b := chatBody(model, "summarise")
		b["attachments"] = []any{doc}
		return b
	}
	r := g.post(t, "/v1/chat/completions", tokAdmin, "u1", body("lm-4-scout-cloudA"))
	if wantErr(t, r, 409, "conflict_error", "cloud_consent_required", anyParam, "spec Codes: cloud_consent_required; DECISIONS 8.31") {
		rc, _ := r.JSON()["required_consents"].([]any)
		if len(rc) != 1 || mustJSON(rc[0]) != mustJSON(map[string]any{"content_hash": hash, "doc_name": "plan.txt"}) {
			t.Errorf("required_consents = %s, want [{content_hash %s, doc_name plan.txt}] (spec Errors: required_consents)", mustJSON(r.JSON()["required_consents"]), hash)
		}
	}
	if chatCalls(g.CloudA) != 0 {
		t.Errorf("the document reached cloudA without consent")
	}
	// a local model needs no consent
	r = g.post(t, "/v1/chat/completions", tokAdmin, "u1", body("lm-4-scout-local"))
	if wantStatus(t, r, 200, "spec Errors rule 1: alternatively the documents go to a local model") {
		msgs := messagesOf(lastBody(t, g.Local, "/chat/completions"))
		if txt := textOf(msgs[len(msgs)-1]); !strings.Contains(txt, "Document plan.txt:") || !strings.Contains(txt, "the secret plan") {
			t.Errorf("upstream last user message %q, want a text part 'Document plan.txt:' with the content (DECISIONS 8.31)", txt)
		}
	}
	// consent for this request only
	r = g.do(t, "POST", "/v1/chat/completions", tokAdmin, "u1", body("lm-4-scout-cloudA"), H{"GW-Cloud-Consent": hash})
	wantStatus(t, r, 200, "spec Errors rule 1: retry with GW-Cloud-Consent")
	r = g.post(t, "/v1/chat/completions", tokAdmin, "u1", body("lm-4-scout-cloudA"))
	wantErr(t, r, 409, "conflict_error", "cloud_consent_required", anyParam, "a consent without ;persist is not stored")
	// persist: a tenant-wide grant (another user, another token)
	r = g.do(t, "POST", "/v1/chat/completions", tokAdmin, "u1", body("lm-4-scout-cloudA"), H{"GW-Cloud-Consent": hash + ";persist"})
	wantStatus(t, r, 200, "spec Errors rule 1: ;persist")
	r = g.post(t, "/v1/chat/completions", tokMember, "u2", body("lm-4-scout-cloudB"))
	wantStatus(t, r, 200, "DECISIONS 8.31: a ;persist grant belongs to the tenant")
	// /c1 too
	r = g.post(t, "/c1/chat", tokMember, "u2", map[string]any{"message": "x", "stream": false, "model": "lm-4-scout-cloudA",
		"attachments": []any{map[string]any{"kind": "document", "doc_name": "other.txt", "content": "other doc"}}})
	wantErr(t, r, 409, "conflict_error", "cloud_consent_required", anyParam, "DECISIONS 8.31: consent on both endpoints")
	// two documents: one consent header entry each; a missing one is named alone
	d1 := map[string]any{"kind": "document", "doc_name": "a.txt", "content": "doc A text"}
	d2 := map[string]any{"kind": "document", "doc_name": "b.txt", "content": "doc B text"}
	h1, h2 := "sha256:"+sha256Hex("doc A text"), "sha256:"+sha256Hex("doc B text")
	two := chatBody("lm-4-scout-cloudA", "both")
	two["attachments"] = []any{d1, d2}
	r = g.do(t, "POST", "/v1/chat/completions", tokAdmin, "u1", two, H{"GW-Cloud-Consent": h1})
	if wantErr(t, r, 409, "conflict_error", "cloud_consent_required", anyParam, "spec Errors rule 1: one entry per consented document") {
		if got := mustJSON(r.JSON()["required_consents"]); got != mustJSON([]any{map[string]any{"content_hash": h2, "doc_name": "b.txt"}}) {
			t.Errorf("required_consents %s, want only b.txt (a.txt was consented)", got)
		}
	}
	r = g.do(t, "POST", "/v1/chat/completions", tokAdmin, "u1", two, H{"GW-Cloud-Consent": h1 + ", " + h2})
	wantStatus(t, r, 200, "spec Errors rule 1: GW-Cloud-Consent: <hash>[;persist][, ...]")
	// a tenant without the setting is not asked
	r = g.post(t, "/v1/chat/completions", tokNoConsent, "u1", body("lm-4-scout-cloudA"))
	wantStatus(t, r, 200, "spec: enforced only for tenants with c1_cloud_doc_consent on")
}

func TestFallback(t *testing.T) {
	t.Parallel()
	type want struct {
		status                int
		code                  string
		local, cloudA, cloudB int // chat calls received
		from                  string
		notice                bool
		retryAfter            string
		typ                   string
	}
	cases := []struct {
		name  string
		model string
		mod   func(t *testing.T, s *setup)
		want  want
		ref   string
	}{
		{"local refused -> cloudA", "lm-4-scout", func(t *testing.T, s *setup) { s.LocalURL = refused(t) },
			want{status: 200, cloudA: 1, from: "chatcmpl-clouda", notice: true}, "spec: falls back to cloudA; DECISIONS 4"},
		{"local 500 -> cloudA", "lm-4-scout", func(t *testing.T, s *setup) { s.Local.Reply = upstreamtest.Reply{Status: 500} },
			want{status: 200, local: 1, cloudA: 1, from: "chatcmpl-clouda", notice: true}, "DECISIONS 4: 5xx falls back"},
		{"local 503 cloudA 429 -> cloudB", "lm-4-scout", func(t *testing.T, s *setup) {
			s.Local.Reply = upstreamtest.Reply{Status: 503}
			s.CloudA.Reply = upstreamtest.Reply{Status: 429}
		}, want{status: 200, local: 1, cloudA: 1, cloudB: 1, from: "chatcmpl-cloudb", notice: true}, "DECISIONS 4: 429 falls back"},
		{"local first-byte timeout -> cloudA", "lm-4-scout", func(t *testing.T, s *setup) {
			s.Env["GATEWAY_FIRST_BYTE_TIMEOUT"] = "300ms"
			s.Local.Reply = upstreamtest.Reply{Latency: 5 * time.Second}
		}, want{status: 200, local: 1, cloudA: 1, from: "chatcmpl-clouda", notice: true}, "DECISIONS 4, 8.12: time-out before first byte falls back"},
		{"local unset -> cloudA, no fallback notice needed", "lm-4-scout", func(t *testing.T, s *setup) { s.LocalURL = emptyURL },
			want{status: 200, cloudA: 1, from: "chatcmpl-clouda"}, "spec /v1/info notes: unconfigured backend skipped"},
		{"local 400 -> no fallback, upstream_bad_request", "lm-4-scout", func(t *testing.T, s *setup) {
			s.Local.Reply = upstreamtest.Reply{Status: 400, ErrorMessage: "bad thing from upstream"}
		}, want{status: 400, code: "upstream_bad_request", typ: "invalid_request_error", local: 1}, "spec Codes upstream_bad_request; DECISIONS 4 (4xx other than 429 is not a fallback trigger)"},
		{"pinned local 500 never falls back", "lm-4-scout-local", func(t *testing.T, s *setup) { s.Local.Reply = upstreamtest.Reply{Status: 500} },
			want{status: 502, code: "upstream_error", typ: "api_error", local: 1}, "spec: pinned alias; DECISIONS 8.13"},
		{"pinned local refused", "lm-4-scout-local", func(t *testing.T, s *setup) { s.LocalURL = refused(t) },
			want{status: 503, code: "upstream_unavailable", typ: "overloaded_error"}, "spec Codes upstream_unavailable"},
		{"pinned cloudA 422 status passthrough", "lm-4-scout-cloudA", func(t *testing.T, s *setup) {
			s.CloudA.Reply = upstreamtest.Reply{Status: 422, ErrorMessage: "unprocessable thing"}
		}, want{status: 422, code: "upstream_bad_request", typ: "invalid_request_error", cloudA: 1}, "DECISIONS 8.13: same status"},
		{"pinned cloudA 429 with Retry-After", "lm-4-scout-cloudA", func(t *testing.T, s *setup) {
			s.CloudA.Reply = upstreamtest.Reply{Status: 429, RetryAfter: "7"}
		}, want{status: 429, code: "upstream_bad_request", typ: "invalid_request_error", cloudA: 1, retryAfter: "7"}, "DECISIONS 8.13: upstream Retry-After passed on for 429"},
		{"pinned cloudB 404 passthrough", "lm-4-scout-cloudB", func(t *testing.T, s *setup) {
			s.CloudB.Reply = upstreamtest.Reply{Status: 404, ErrorMessage: "no such model upstream"}
		}, want{status: 404, code: "upstream_bad_request", typ: "invalid_request_error", cloudB: 1}, "DECISIONS 8.13"},
		{"all refused", "lm-4-scout", func(t *testing.T, s *setup) {
			s.LocalURL, s.CloudAURL, s.CloudBURL = refused(t), refused(t), refused(t)
		}, want{status: 503, code: "upstream_unavailable", typ: "overloaded_error"}, "DECISIONS 8.20"},
		{"all 500", "lm-4-scout", func(t *testing.T, s *setup) {
			s.Local.Reply = upstreamtest.Reply{Status: 500}
			s.CloudA.Reply = upstreamtest.Reply{Status: 500}
			s.CloudB.Reply = upstreamtest.Reply{Status: 502}
		}, want{status: 502, code: "upstream_error", typ: "api_error", local: 1, cloudA: 1, cloudB: 1}, "DECISIONS 8.20"},
		{"last answered wins over refused", "lm-4-scout", func(t *testing.T, s *setup) {
			s.LocalURL = refused(t)
			s.CloudA.Reply = upstreamtest.Reply{Status: 500}
			s.CloudBURL = refused(t)
		}, want{status: 502, code: "upstream_error", typ: "api_error", cloudA: 1}, "DECISIONS 8.20: the error of the last backend that answered"},
		{"last backend 429", "lm-4-scout", func(t *testing.T, s *setup) {
			s.Local.Reply = upstreamtest.Reply{Status: 500}
			s.CloudA.Reply = upstreamtest.Reply{Status: 500}
			s.CloudB.Reply = upstreamtest.Reply{Status: 429, RetryAfter: "3"}
		}, want{status: 429, code: "upstream_bad_request", typ: "invalid_request_error", local: 1, cloudA: 1, cloudB: 1, retryAfter: "3"}, "DECISIONS 8.13"},
		{"all unconfigured", "lm-4-scout", func(t *testing.T, s *setup) {
			s.LocalURL, s.CloudAURL, s.CloudBURL = emptyURL, unset, unset
		}, want{status: 503, code: "upstream_unavailable", typ: "overloaded_error"}, "DECISIONS 8.20"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := start(t, func(s *setup) { tc.mod(t, s) })
			for _, stream := range []bool{false, true} {
				b := chatBody(tc.model, "hello")
				if stream {
					b["stream"] = true
				}
				reqID := fmt.Sprintf("fb-%d-%v", time.Now().UnixNano(), stream)
				r := g.do(t, "POST", "/v1/chat/completions", tokAdmin, "", b, H{"X-Request-Id": reqID})
				w := tc.want
				if w.status == 200 && w.notice {
					// DECISIONS 4: each attempt and its outcome is logged with the request id
					attempts := func() int {
						n := 0
						for _, line := range strings.Split(g.stderr.String(), "\n") {
							if strings.Contains(line, reqID) && strings.Contains(line, "attempt") {
								n++
							}
						}
						return n
					}
					tried := 1 + w.cloudA + w.cloudB
					if !waitFor(time.Second, func() bool { return attempts() >= tried }) {
						t.Errorf("log has %d attempt lines with request id %s, want %d: one per backend tried (DECISIONS 4: each attempt and its outcome is logged with the request id)", attempts(), reqID, tried)
					}
				}
				if w.status == 200 {
					if !wantStatus(t, r, 200, tc.ref) {
						continue
					}
					if !stream {
						if id := r.JSON()["id"]; id != w.from {
							t.Errorf("answer id %v, want %s (answered by the expected backend)", id, w.from)
						}
						notice := r.Header.Get("GW-Notice")
						if w.notice && !strings.Contains(notice, "backend_fallback") {
							t.Errorf("non-streaming fallback answer: GW-Notice %q, want backend_fallback (DECISIONS 5; spec Events 2)", notice)
						}
					} else {
						checkFallbackStream(t, r, w.from, w.notice)
					}
				} else {
					wantErr(t, r, w.status, w.typ, w.code, anyParam, tc.ref)
					if stream && strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
						t.Errorf("streaming request failed before the first byte answered SSE, want the JSON error envelope (DECISIONS 5)")
					}
					if w.retryAfter != "" && r.Header.Get("Retry-After") != w.retryAfter {
						t.Errorf("Retry-After %q, want %q passed on (DECISIONS 8.13)", r.Header.Get("Retry-After"), w.retryAfter)
					}
					msg := string(r.Body)
					for _, leak := range []string{"sk-clouda-secret-key", "sk-cloudb-secret-key", strings.TrimPrefix(g.Local.URL, "http://"), strings.TrimPrefix(g.CloudA.URL, "http://")} {
						if strings.Contains(msg, leak) {
							t.Errorf("error body leaks %q: %s (issue 3 item 4)", leak, msg)
						}
					}
					if w.code == "upstream_bad_request" && strings.Contains(tc.name, "400") && !strings.Contains(msg, "bad thing from upstream") {
						t.Errorf("upstream_bad_request message %s lacks the upstream reason (spec Codes)", msg)
					}
				}
			}
			got := [3]int{chatCalls(g.Local), chatCalls(g.CloudA), chatCalls(g.CloudB)}
			w := tc.want
			if want := [3]int{2 * w.local, 2 * w.cloudA, 2 * w.cloudB}; got != want {
				t.Errorf("chat calls (local, cloudA, cloudB) = %v over two requests, want %v (%s)", got, want, tc.ref)
			}
			if w.cloudA > 0 {
				if up := lastBody(t, g.CloudA, "/chat/completions"); up["model"] != "lm-4-scout-17b-16e-instruct" && tc.model == "lm-4-scout" {
					t.Errorf("cloudA got model %v, want its router_alias (DECISIONS 8.5)", up["model"])
				}
				calls := g.CloudA.Calls()
				if a := calls[len(calls)-1].Header.Get("Authorization"); a != "Bearer sk-clouda-secret-key" {
					t.Errorf("cloudA Authorization %q, want Bearer <GATEWAY_CLOUDA_API_KEY> (issue 3 item 2)", a)
				}
			}
			if strings.Contains(g.stderr.String(), "sk-clouda-secret-key") {
				t.Errorf("the cloudA API key appears in gatewayd's log (issue 3 item 2: never logged)")
			}
		})
	}
}

// checkFallbackStream checks a streamed answer: chunks of the backend, a
// gw.notice backend_fallback chunk (when notice) before data: [DONE].
func checkFallbackStream(t *testing.T, r *resp, from string, notice bool) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("stream Content-Type %q, want text/event-stream (DECISIONS 8.30)", ct)
	}
	evs := parseSSE(r.Body)
	if len(evs) == 0 || evs[len(evs)-1].Data != "[DONE]" {
		t.Errorf("stream does not end with data: [DONE]: %s", truncate(string(r.Body), 500))
		return
	}
	var first map[string]any
	json.Unmarshal([]byte(evs[0].Data), &first)
	if first["id"] != from {
		t.Errorf("stream chunk id %v, want %s", first["id"], from)
	}
	var got *sseEvent
	for i := range evs {
		if evs[i].Event == "gw.notice" {
			got = &evs[i]
		}
	}
	if !notice {
		return
	}
	if got == nil {
		t.Errorf("fallback stream has no gw.notice event (DECISIONS 5): %s", truncate(string(r.Body), 800))
		return
	}
	var n map[string]any
	if err := json.Unmarshal([]byte(got.Data), &n); err != nil {
		t.Errorf("gw.notice data is not JSON: %s", got.Data)
		return
	}
	gn, _ := n["gw_notice"].(map[string]any)
	choices, isArr := n["choices"].([]any)
	if n["object"] != "chat.completion.chunk" || n["id"] != first["id"] || n["created"] != first["created"] || n["model"] != first["model"] ||
		!isArr || len(choices) != 0 || gn == nil || gn["code"] != "backend_fallback" {
		t.Errorf("gw.notice data %s, want {id:%v, object:chat.completion.chunk, created:%v, model:%v, choices:[], gw_notice:{code:backend_fallback,...}} (DECISIONS 5)", got.Data, first["id"], first["created"], first["model"])
	}
	if msg, _ := gn["message"].(string); msg == "" || strings.Contains(msg, "sk-") {
		t.Errorf("gw_notice.message %q: want a message naming the alias, never a key (DECISIONS 5)", msg)
	}
}

func TestStreaming(t *testing.T) {
	t.Parallel()
	t.Run("chunks verbatim", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.Local.Reply = upstreamtest.Reply{Content: "one two three four five", Chunks: 5} })
		b := chatBody("lm-4-scout-local", "hi")
		b["stream"] = true
		b["stream_options"] = map[string]any{"include_usage": true}
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", b)
		if !wantStatus(t, r, 200, "spec Events 1") {
			return
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Errorf("Content-Type %q, want text/event-stream (DECISIONS 8.30)", ct)
		}
		if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "no-cache") {
			t.Errorf("Cache-Control %q, want no-cache (DECISIONS 8.30)", cc)
		}
		up := lastBody(t, g.Local, "/chat/completions")
		// what the fake sends for that body, fetched directly
		direct := doURL(t, client, "POST", g.Local.URL+"/chat/completions", "", "", mustJSON(up), nil)
		want := parseSSE(direct.Body)
		got := parseSSE(r.Body)
		if mustJSON(got) != mustJSON(want) {
			t.Errorf("relayed stream differs from the upstream's:\n got %s\nwant %s (issue 3 item 3: chunks keep the OpenAI shape exactly)", mustJSON(got), mustJSON(want))
		}
		if contentOf(got) != "one two three four five" {
			t.Errorf("accumulated content %q", contentOf(got))
		}
	})
	t.Run("cut stream ends with gw.error and no DONE", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) {
			s.Local.Reply = upstreamtest.Reply{Chunks: 4, Drop: true, DropAfter: 2, Interval: 20 * time.Millisecond}
		})
		b := chatBody("lm-4-scout", "hi") // chain: must not fall back after the first byte
		b["stream"] = true
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", b)
		if r.Status != 200 {
			t.Fatalf("%s: want 200 (the stream started)", r)
		}
		evs := parseSSE(r.Body)
		var errEv *sseEvent
		for i := range evs {
			if evs[i].Data == "[DONE]" {
				t.Errorf("cut stream ends with data: [DONE] (DECISIONS 5: no [DONE] after gw.error)")
			}
			if evs[i].Event == "gw.error" {
				errEv = &evs[i]
			}
		}
		if errEv == nil {
			t.Fatalf("cut stream has no gw.error event (DECISIONS 5; issue 3 item 3): %s", r.Body)
		}
		if evs[len(evs)-1].Event != "gw.error" {
			t.Errorf("gw.error is not the last event")
		}
		var env struct {
			Error map[string]any `json:"error"`
		}
		if json.Unmarshal([]byte(errEv.Data), &env); env.Error["code"] == nil || env.Error["type"] == nil || env.Error["message"] == nil {
			t.Errorf("gw.error data %s, want the error envelope {\"error\":{type,code,message,param}} (DECISIONS 5)", errEv.Data)
		}
		if chatCalls(g.CloudA)+chatCalls(g.CloudB) != 0 {
			t.Errorf("fell back after the first byte (DECISIONS 4: never)")
		}
	})
	t.Run("pinned alias stream upstream error before first byte", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.CloudA.Reply = upstreamtest.Reply{Status: 500} })
		b := chatBody("lm-4-scout-cloudA", "hi")
		b["stream"] = true
		wantErr(t, g.post(t, "/v1/chat/completions", tokAdmin, "", b), 502, "api_error", "upstream_error", anyParam, "DECISIONS 5: before the first byte, the normal JSON error")
	})
	t.Run("client disconnect cancels upstream", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.Local.Reply = upstreamtest.Reply{Hang: true} })
		b := chatBody("lm-4-scout-local", "hi")
		b["stream"] = true
		req, _ := http.NewRequest("POST", g.Base+"/v1/chat/completions", strings.NewReader(mustJSON(b)))
		req.Header.Set("Authorization", "Bearer "+tokAdmin)
		c := &http.Client{Timeout: 500 * time.Millisecond}
		if res, err := c.Do(req); err == nil {
			res.Body.Close()
		}
		if err := g.Local.AwaitCanceled(ctxTimeout(t, 3*time.Second), 1); err != nil {
			t.Errorf("upstream call not cancelled after the client went away (issue 3 item 3)")
		}
	})
}

func TestModelsAndInfo(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) { s.CloudBURL = unset })
	t.Run("models list filtered by allowlist", func(t *testing.T) {
		for _, tc := range []struct {
			token string
			want  []string
		}{{tokAdmin, acmeModels}, {tokGlobex, allAliases}, {tokTiny, []string{"lm-4-scout-local"}}} {
			r := g.get(t, "/v1/models", tc.token, "")
			if !wantStatus(t, r, 200, "spec /v1/models") {
				continue
			}
			m := r.JSON()
			if m["object"] != "list" {
				t.Errorf("/v1/models object %v, want list", m["object"])
			}
			got := map[string]bool{}
			for _, d := range listData(r) {
				id, _ := d["id"].(string)
				got[id] = true
				if d["object"] != "model" || d["owned_by"] == nil {
					t.Errorf("/v1/models entry %v: want object model, created, owned_by (issue 3 item 1)", d)
				}
				if _, ok := d["created"].(float64); !ok {
					t.Errorf("/v1/models entry %v: created not an integer", d)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("/v1/models for %s: %d models %v, want %v (issue 3 item 1: filtered by the allowlist)", tc.token, len(got), keys(got), tc.want)
			}
			for _, w := range tc.want {
				if !got[w] {
					t.Errorf("/v1/models for %s lacks %s", tc.token, w)
				}
			}
		}
		// a tenant without model in its allowlist gets 400 on chat
		r := g.post(t, "/v1/chat/completions", tokTiny, "", chatBody("lm-4-scout", "hi"))
		wantErr(t, r, 400, "invalid_request_error", "model_not_in_allowlist", "model", "spec: model not in the allowlist")
		wantStatus(t, g.post(t, "/v1/chat/completions", tokTiny, "", chatBody("lm-4-scout-local", "hi")), 200, "allowed model")
	})
	t.Run("info", func(t *testing.T) {
		r := g.get(t, "/v1/info", tokGlobex, "")
		if !wantStatus(t, r, 200, "spec /v1/info") {
			return
		}
		var cat struct {
			Models []map[string]any `json:"models"`
			Notes  *string          `json:"notes"`
		}
		if err := json.Unmarshal(r.Body, &cat); err != nil || cat.Notes == nil {
			t.Fatalf("/v1/info: want {models, notes string}: %v %s", err, truncate(string(r.Body), 200))
		}
		byAlias := map[string]map[string]any{}
		kinds := map[string]bool{}
		for _, m := range cat.Models {
			alias, _ := m["alias"].(string)
			byAlias[alias] = m
			checkModelInfo(t, m)
			k, _ := m["kind"].(string)
			kinds[k] = true
		}
		for _, a := range allAliases {
			if byAlias[a] == nil {
				t.Errorf("/v1/info lacks %s (DECISIONS 4)", a)
			}
		}
		for _, k := range []string{"chat", "embeddings", "image_generation", "audio_transcription"} {
			if !kinds[k] {
				t.Errorf("/v1/info has no model of kind %s (DECISIONS 4, 8.5)", k)
			}
		}
		if m := byAlias["lm-4-scout"]; m != nil {
			var provs, stats []string
			for _, b := range m["backends"].([]any) {
				bm := b.(map[string]any)
				provs = append(provs, bm["provider"].(string))
				stats = append(stats, bm["status"].(string))
			}
			if strings.Join(provs, ",") != "local,cloudA,cloudB" {
				t.Errorf("lm-4-scout backends %v, want local,cloudA,cloudB (spec aliases table)", provs)
			}
			if strings.Join(stats, ",") != "available,available,unconfigured" {
				t.Errorf("lm-4-scout backend statuses %v with cloudB unset, want available,available,unconfigured (DECISIONS 2: unset URL is unconfigured)", stats)
			}
		}
		if m := byAlias["lm-reasoner"]; m != nil {
			if c, _ := m["constraints"].(map[string]any); c["min_max_tokens"] != 200.0 {
				t.Errorf("lm-reasoner min_max_tokens %v, want 200 (DECISIONS 4)", c["min_max_tokens"])
			}
		}
		if m := byAlias["lm-text-8k"]; m != nil {
			if mo, _ := m["modalities"].(map[string]any); mo["image_in"] != false {
				t.Errorf("lm-text-8k image_in %v, want false", mo["image_in"])
			}
		}
		if strings.Contains(string(r.Body), "127.0.0.1") || strings.Contains(string(r.Body), "sk-") {
			t.Errorf("/v1/info leaks a backend URL or key")
		}
	})
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// checkModelInfo checks every required field of a ModelInfo (spec ModelInfo,
// Modalities, ModelConstraints, BackendInfo).
func checkModelInfo(t *testing.T, m map[string]any) {
	t.Helper()
	alias := m["alias"]
	str := func(k string) {
		if _, ok := m[k].(string); !ok {
			t.Errorf("ModelInfo %v: %s not a string (spec ModelInfo: all fields required)", alias, k)
		}
	}
	boolean := func(o map[string]any, k, where string) {
		if _, ok := o[k].(bool); !ok {
			t.Errorf("ModelInfo %v: %s%s not a boolean (spec)", alias, where, k)
		}
	}
	for _, k := range []string{"alias", "description", "family", "license", "notes"} {
		str(k)
	}
	if cw, ok := m["context_window"].(float64); !ok || cw < 0 || cw != float64(int64(cw)) {
		t.Errorf("ModelInfo %v: context_window %v not a non-negative integer", alias, m["context_window"])
	}
	for _, k := range []string{"tools", "json_mode", "reasoning_mode"} {
		boolean(m, k, "")
	}
	mo, ok := m["modalities"].(map[string]any)
	if !ok {
		t.Errorf("ModelInfo %v: modalities missing", alias)
	} else {
		for _, k := range []string{"text_in", "text_out", "image_in", "audio_in", "video_in", "image_out"} {
			boolean(mo, k, "modalities.")
		}
	}
	c, ok := m["constraints"].(map[string]any)
	if !ok {
		t.Errorf("ModelInfo %v: constraints missing", alias)
	} else {
		if c["accepts_image_url"] != false {
			t.Errorf("ModelInfo %v: accepts_image_url %v, want false (spec: false for all providers)", alias, c["accepts_image_url"])
		}
		for _, k := range []string{"min_max_tokens", "typical_response_seconds"} {
			if v, present := c[k]; !present {
				t.Errorf("ModelInfo %v: constraints.%s absent (want integer or null)", alias, k)
			} else if v != nil {
				if f, ok := v.(float64); !ok || f < 0 {
					t.Errorf("ModelInfo %v: constraints.%s = %v", alias, k, v)
				}
			}
		}
	}
	bs, ok := m["backends"].([]any)
	if !ok || len(bs) == 0 {
		t.Errorf("ModelInfo %v: backends missing or empty", alias)
	}
	for _, b := range bs {
		bm, _ := b.(map[string]any)
		p, _ := bm["provider"].(string)
		if p != "local" && p != "cloudA" && p != "cloudB" {
			t.Errorf("ModelInfo %v: backend provider %q, want local, cloudA or cloudB (DECISIONS 8.5)", alias, p)
		}
		if s, _ := bm["router_alias"].(string); s == "" {
			t.Errorf("ModelInfo %v: backend router_alias missing", alias)
		}
		switch bm["status"] {
		case "available", "deprecated", "unconfigured", "planned":
		default:
			t.Errorf("ModelInfo %v: backend status %v not a BackendStatus", alias, bm["status"])
		}
		if p == "local" && bm["pricing"] != nil {
			t.Errorf("ModelInfo %v: local backend pricing %v, want null (spec BackendInfo)", alias, bm["pricing"])
		}
	}
}

func TestInfoUnconfigured(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) { s.LocalURL = emptyURL; s.CloudAURL = unset; s.CloudBURL = unset })
	r := g.get(t, "/v1/info", tokGlobex, "")
	if !wantStatus(t, r, 200, "spec /v1/info") {
		return
	}
	var cat struct {
		Models []map[string]any `json:"models"`
	}
	json.Unmarshal(r.Body, &cat)
	for _, m := range cat.Models {
		for _, b := range m["backends"].([]any) {
			if bm := b.(map[string]any); bm["status"] != "unconfigured" {
				t.Errorf("%v backend %v status %v with no URL configured, want unconfigured (DECISIONS 2)", m["alias"], bm["provider"], bm["status"])
			}
		}
	}
}
