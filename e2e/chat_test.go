package e2e_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"strconv"
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
		c("max_tokens 0 on the reasoning model", func() map[string]any {
			b := chatBody("lm-reasoner", "think")
			b["max_tokens"] = 0
			return b
		}(), "max_tokens_below_minimum", "max_tokens"),
		c("image http url", imageMsg("lm-4-scout", "https://example.com/cat.png"), "image_url_not_supported", "messages[].content[].image_url.url"),
		c("image plain http url", imageMsg("lm-vision", "http://example.com/cat.png"), "image_url_not_supported", "messages[].content[].image_url.url"),
		c("image http url as the only part", map[string]any{"model": "lm-4-scout", "messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "http://example.com/a.png"}}}}}}, "image_url_not_supported", "messages[].content[].image_url.url"),
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
		{name: "document to a chain alias with cloud backends", method: "POST", path: "/v1/chat/completions", token: tokAdmin,
			body:   attach("lm-4-scout", map[string]any{"kind": "document", "doc_name": "plan.txt", "content": "secret plan"}),
			status: 409, typ: "conflict_error", code: "cloud_consent_required", param: anyParam, ref: "spec Codes cloud_consent_required; DECISIONS 8.31: the chain may reach a cloud backend"},
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
		wantStatus(t, g.post(t, "/v1/chat/completions", tokAdmin, "", imageMsg("lm-vision", pngURI)), 200, "valid data URI image to the vision model")
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", toolCall(`{"city":"Paris"}`))
		wantStatus(t, r, 200, "valid tool call arguments")
		b := chatBody("lm-4-scout", "hi")
		b["temperature"] = 2.0
		wantStatus(t, g.post(t, "/v1/chat/completions", tokAdmin, "", b), 200, "temperature 2.0 is in range (spec Limits)")
		b["temperature"] = 0
		wantStatus(t, g.post(t, "/v1/chat/completions", tokAdmin, "", b), 200, "temperature 0 is in range")
		doc := map[string]any{"kind": "document", "doc_name": "a.txt", "content": "abc", "content_hash": "sha256:" + sha256Hex("abc")}
		wantStatus(t, g.post(t, "/v1/chat/completions", tokAdmin, "", attach("lm-4-scout-local", doc)), 200, "DECISIONS 8.31: a given content_hash that matches sha256:<hex of the content>")
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
		// what the fake itself answers to that body, fetched directly
		direct := doURL(t, client, "POST", g.Local.URL+"/chat/completions", "", "", mustJSON(up), nil)
		// verbatim but for its model, the alias asked for (issue 16 item 7)
		wantBody := strings.Replace(string(direct.Body), `"model":"lm-4-scout:17b-16e-instruct-q4_K_M"`, `"model":"lm-4-scout-local"`, 1)
		if strings.TrimSpace(string(r.Body)) != strings.TrimSpace(wantBody) {
			t.Errorf("answer not relayed verbatim:\n got %s\nwant %s (issue 3 item 3, issue 16 item 7)", r.Body, wantBody)
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Content-Type %q, want application/json (DECISIONS 8.30)", ct)
		}
	})

	t.Run("max_tokens flooring", func(t *testing.T) {
		for _, stream := range []bool{false, true} {
			b := chatBody("lm-reasoner", "think")
			b["max_tokens"] = 50
			b["stream"] = stream
			r := g.post(t, "/v1/chat/completions", tokAdmin, "", b)
			if !wantStatus(t, r, 200, "spec ModelConstraints min_max_tokens") {
				continue
			}
			if got := r.Header.Get("gw-applied"); got != "max_tokens_floored=200" {
				t.Errorf("stream %v: gw-applied = %q, want max_tokens_floored=200 (spec ModelConstraints; Limits)", stream, got)
			}
			if got := r.Header.Get("x-rust-api-applied"); got != "max_tokens_floored=200" {
				t.Errorf("stream %v: x-rust-api-applied = %q, want max_tokens_floored=200 (DECISIONS 5: sent together with gw-applied)", stream, got)
			}
			if up := lastBody(t, g.CloudA, "/chat/completions"); up["max_tokens"] != 200.0 {
				t.Errorf("stream %v: upstream max_tokens %v, want 200 (silently raised)", stream, up["max_tokens"])
			}
		}
		b := chatBody("lm-reasoner", "think")
		b["max_tokens"] = 1
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", b)
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
		// newer OpenAI clients send max_completion_tokens: floored the same way (internal/preflight/doc.go)
		mct := chatBody("lm-reasoner", "think")
		mct["max_completion_tokens"] = 50
		r = g.post(t, "/v1/chat/completions", tokAdmin, "", mct)
		if r.Status != 200 || r.Header.Get("gw-applied") != "max_tokens_floored=200" || lastBody(t, g.CloudA, "/chat/completions")["max_completion_tokens"] != 200.0 {
			t.Errorf("%s\n  max_completion_tokens 50 on lm-reasoner: want 200, gw-applied max_tokens_floored=200 and 200 upstream (spec ModelConstraints min_max_tokens)", r)
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
	if wantStatus(t, r, 200, "spec Errors rule 1: retry with GW-Cloud-Consent") {
		up := lastBody(t, g.CloudA, "/chat/completions")
		if _, ok := up["attachments"]; ok {
			t.Errorf("cloudA received attachments; DECISIONS 8.31: attachments itself is not forwarded")
		}
		if !strings.Contains(mustJSON(up["messages"]), "Document plan.txt:") {
			t.Errorf("cloudA messages %s, want the document as a text part 'Document plan.txt:' (DECISIONS 8.31)", truncate(mustJSON(up["messages"]), 300))
		}
	}
	r = g.post(t, "/v1/chat/completions", tokAdmin, "u1", body("lm-4-scout-cloudA"))
	wantErr(t, r, 409, "conflict_error", "cloud_consent_required", anyParam, "a consent without ;persist is not stored")
	// persist: a tenant-wide grant (another user, another token)
	r = g.do(t, "POST", "/v1/chat/completions", tokAdmin, "u1", body("lm-4-scout-cloudA"), H{"GW-Cloud-Consent": hash + ";persist"})
	wantStatus(t, r, 200, "spec Errors rule 1: ;persist")
	r = g.post(t, "/v1/chat/completions", tokMember, "u2", body("lm-4-scout-cloudB"))
	wantStatus(t, r, 200, "DECISIONS 8.31: a ;persist grant belongs to the tenant")
	// /c1 too
	c1doc := map[string]any{"message": "x", "stream": false, "model": "lm-4-scout-cloudA",
		"attachments": []any{map[string]any{"kind": "document", "doc_name": "other.txt", "content": "other doc"}}}
	r = g.post(t, "/c1/chat", tokMember, "u2", c1doc)
	wantErr(t, r, 409, "conflict_error", "cloud_consent_required", anyParam, "DECISIONS 8.31: consent on both endpoints")
	var c1hash string
	if rc := listOf(r.JSON()["required_consents"]); len(rc) == 1 {
		c1hash = str(rc[0]["content_hash"])
	}
	r = g.do(t, "POST", "/c1/chat", tokMember, "u2", c1doc, H{"GW-Cloud-Consent": c1hash + ";persist"})
	wantStatus(t, r, 200, "spec Errors rule 1: retry /c1/chat with GW-Cloud-Consent")
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

// TestConsentLocalOnlyChain: consent is asked only when the alias's chain has
// a configured non-local backend (docs/decisions.md, Consent).
func TestConsentLocalOnlyChain(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) { s.CloudAURL, s.CloudBURL = unset, emptyURL })
	b := chatBody("lm-4-scout", "summarise")
	b["attachments"] = []any{map[string]any{"kind": "document", "doc_name": "plan.txt", "content": "local only plan"}}
	r := g.post(t, "/v1/chat/completions", tokAdmin, "u1", b)
	if wantStatus(t, r, 200, "docs/decisions.md: consent only when the chain has a configured non-local backend") {
		if txt := textOf(messagesOf(lastBody(t, g.Local, "/chat/completions"))[0]); !strings.Contains(txt, "local only plan") {
			t.Errorf("local backend got %q, want the document text (DECISIONS 8.31)", txt)
		}
	}
	wantErr(t, g.post(t, "/v1/chat/completions", tokAdmin, "u1", func() map[string]any {
		b := chatBody("lm-4-scout-cloudA", "x")
		b["attachments"] = []any{map[string]any{"kind": "document", "doc_name": "plan.txt", "content": "local only plan"}}
		return b
	}()), 400, "invalid_request_error", "model_not_configured", "model", "a pinned unconfigured cloud alias has no backend (issue 16 item 7)")
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
	}.with(404, "not_found_error", "route_not_found", noParam, "spec Codes route_not_found"))
}

func TestQuotas(t *testing.T) {
	t.Parallel()
	// cloudA reports more tokens than quota's tokens_per_day (1000) for lm-4-scout-cloudA
	g := start(t, func(s *setup) { s.CloudA.Reply = upstreamtest.Reply{PromptTokens: 990, CompletionTokens: 20} })
	for i := 0; i < 2; i++ {
		wantStatus(t, g.post(t, "/v1/chat/completions", tokQuota, "", chatBody("lm-4-scout-local", "hi")), 200, "within requests_per_day 2")
	}
	r := g.post(t, "/v1/chat/completions", tokQuota, "", chatBody("lm-4-scout-local", "hi"))
	if wantErr(t, r, 429, "rate_limit_error", "model_quota_exhausted", anyParam, "spec Codes model_quota_exhausted") {
		body := string(r.Body)
		for _, w := range []string{"local", "cloudA", "cloudB", "token"} {
			if strings.Contains(strings.ToLower(r.JSON()["error"].(map[string]any)["message"].(string)), strings.ToLower(w)) {
				t.Errorf("model_quota_exhausted message names %q: %s (spec: names no upstream provider, no token counts)", w, body)
			}
		}
		for _, w := range []string{"local", "cloud", "token"} {
			if strings.Contains(strings.ToLower(body), w) {
				t.Errorf("model_quota_exhausted body names %q: %s (spec: names no upstream provider, no token counts)", w, body)
			}
		}
	}
	wantStatus(t, g.post(t, "/v1/chat/completions", tokQuota, "", chatBody("lm-4-scout-cloudB", "hi")), 200, "first cloudB request of the day")
	r = g.post(t, "/v1/chat/completions", tokQuota, "", chatBody("lm-4-scout-cloudB", "hi"))
	if wantErr(t, r, 429, "rate_limit_error", "cloudB_daily_quota_exhausted", "model", "spec Codes cloudB_daily_quota_exhausted") {
		fb, ok := r.JSON()["available_fallbacks"].([]any)
		if !ok || len(fb) == 0 {
			t.Errorf("cloudB_daily_quota_exhausted body lacks a non-empty available_fallbacks array: %s", r.Body)
		}
		for _, f := range fb {
			if f == "lm-4-scout-cloudB" {
				t.Errorf("available_fallbacks lists the exhausted alias itself: %v", fb)
			}
		}
		now := time.Now().UTC()
		next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
		want := int(next.Sub(now).Seconds())
		ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || ra < want-5 || ra > want+5 {
			t.Errorf("Retry-After %q, want about %d seconds until 00:00 UTC (spec Codes cloudB_daily_quota_exhausted)", r.Header.Get("Retry-After"), want)
		}
	}
	if n := chatCalls(g.CloudB); n != 1 {
		t.Errorf("cloudB received %d chat calls, want 1: a request over the quota is not forwarded", n)
	}
	// /c1 is held to the same budget
	r = g.post(t, "/c1/chat", tokQuota, "u", map[string]any{"message": "hi", "stream": false, "model": "lm-4-scout-local"})
	wantErr(t, r, 429, "rate_limit_error", "model_quota_exhausted", anyParam, "quota on /c1")
	// another tenant is not affected
	wantStatus(t, g.post(t, "/v1/chat/completions", tokMember, "", chatBody("lm-4-scout-local", "hi")), 200, "quota is per tenant")

	// tokens_per_day: the first answer spends 1010 of 1000 tokens, the next request is refused
	small := chatBody("lm-4-scout-cloudA", "hi")
	small["max_tokens"] = 10
	wantStatus(t, g.post(t, "/v1/chat/completions", tokQuota, "", small), 200, "docs/decisions.md quotas: within tokens_per_day")
	r = g.post(t, "/v1/chat/completions", tokQuota, "", small)
	if wantErr(t, r, 429, "rate_limit_error", "model_quota_exhausted", noParam, "docs/decisions.md quotas: tokens_per_day used up; spec Codes model_quota_exhausted") {
		if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("tokens_per_day 429 Retry-After %q, want whole seconds (spec Events 6: Retry-After on quota 429)", r.Header.Get("Retry-After"))
		}
		if strings.Contains(string(r.Body), "1010") || strings.Contains(string(r.Body), "1000") {
			t.Errorf("model_quota_exhausted body gives token counts: %s (spec Codes)", r.Body)
		}
	}
	if n := chatCalls(g.CloudA); n != 1 {
		t.Errorf("cloudA received %d chat calls, want 1: a request over the token budget is not forwarded", n)
	}
}
