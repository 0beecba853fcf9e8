package e2e_test

import (
	"bytes"
	"mime/multipart"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

func TestEmbeddings(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	const ref = "spec Limits Embedding input; Codes embedding_input_too_large"
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "x"
		}
		return out
	}
	ok := []struct {
		name  string
		input any
	}{
		{"256 elements", many(256)},
		{"element of 8192 bytes", []string{strings.Repeat("a", 8192)}},
		{"string of 8192 bytes", strings.Repeat("a", 8192)},
		{"8192 bytes of two-byte runes", []string{strings.Repeat("é", 4096)}},
		{"256 elements of 8192 bytes", func() []string {
			out := many(256)
			for i := range out {
				out[i] = strings.Repeat("a", 8192)
			}
			return out
		}()},
	}
	for _, c := range ok {
		r := g.post(t, "/v1/embeddings", tokMember, "", map[string]any{"model": "lm-embed", "input": c.input})
		wantStatus(t, r, 200, ref+": "+c.name+" is within the limit")
	}
	if r := g.post(t, "/v1/embeddings", tokMember, "", map[string]any{"model": "lm-embed", "input": []string{"a", "b"}}); wantStatus(t, r, 200, "embeddings") {
		if len(listData(r)) != 2 {
			t.Errorf("embeddings answer %s, want 2 embeddings", truncate(string(r.Body), 200))
		}
		if up := lastBody(t, g.Local, "/embeddings"); up["model"] != "lm-embed-text:v1.5" {
			t.Errorf("upstream embeddings model %v, want router_alias lm-embed-text:v1.5 (DECISIONS 8.5)", up["model"])
		}
	}
	// a string or a single token array is one element; a token counts 4 bytes (docs/decisions.md)
	tokens := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i % 50000
		}
		return out
	}
	tokenArrays := func(n, each int) [][]int {
		out := make([][]int, n)
		for i := range out {
			out[i] = tokens(each)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		input any
	}{
		{"one token array of 2048 tokens", tokens(2048)},
		{"256 token arrays of 2048 tokens", tokenArrays(256, 2048)},
	} {
		r := g.post(t, "/v1/embeddings", tokMember, "", map[string]any{"model": "lm-embed", "input": c.input})
		wantStatus(t, r, 200, "docs/decisions.md embeddings: "+c.name+" is within the limit")
	}
	c := func(name string, input any) errCase {
		return errCase{name: name, method: "POST", path: "/v1/embeddings", token: tokMember,
			body: map[string]any{"model": "lm-embed", "input": input}, status: 400, typ: "invalid_request_error",
			code: "embedding_input_too_large", param: "input", ref: ref}
	}
	n := callsOn(g, "/embeddings")
	runErrCases(t, g, errCases{
		c("257 elements", many(257)),
		c("element of 8193 bytes", []string{"ok", strings.Repeat("a", 8193)}),
		c("string of 8193 bytes", strings.Repeat("a", 8193)),
		c("8194 bytes of 4097 two-byte runes", []string{strings.Repeat("é", 4097)}),
		c("one token array of 2049 tokens", tokens(2049)),
		c("a token array of 2049 tokens among others", [][]int{tokens(3), tokens(2049)}),
		c("257 token arrays", tokenArrays(257, 1)),
		{name: "model not allowed", method: "POST", path: "/v1/embeddings", token: tokTiny, body: map[string]any{"model": "lm-embed", "input": []string{"a"}},
			status: 400, typ: "invalid_request_error", code: "model_not_in_allowlist", param: "model", ref: "spec Codes model_not_in_allowlist"},
		{name: "image model", method: "POST", path: "/v1/embeddings", token: tokMember, body: map[string]any{"model": "lm-image", "input": "x"},
			status: 400, typ: "invalid_request_error", code: "model_not_in_allowlist", param: "model", ref: "spec Codes model_not_in_allowlist: not an embeddings alias"},
		{name: "missing input", method: "POST", path: "/v1/embeddings", token: tokMember, body: map[string]any{"model": "lm-embed"},
			status: 400, typ: "invalid_request_error", code: "missing_field", param: "input", ref: "DECISIONS 8.2"},
		{name: "missing model", method: "POST", path: "/v1/embeddings", token: tokMember, body: map[string]any{"input": []string{"a"}},
			status: 400, typ: "invalid_request_error", code: "missing_field", param: "model", ref: "DECISIONS 8.2"},
	})
	if m := callsOn(g, "/embeddings"); m != n {
		t.Errorf("rejected embeddings reached the upstream (%d calls)", m-n)
	}
}

func TestImages(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	gen := func(token string, body map[string]any) *resp {
		return g.post(t, "/v1/images/generations", token, "", body)
	}
	wantErr(t, gen(tokTiny, map[string]any{"model": "lm-image", "prompt": "cat"}), 400, "invalid_request_error", "model_not_in_allowlist", "model", "spec Codes model_not_in_allowlist (tiny does not allow lm-image)")
	r := gen(tokAdmin, map[string]any{"model": "lm-image", "prompt": "a cat"})
	if !wantStatus(t, r, 200, "DECISIONS 8.15 images") {
		t.FailNow()
	}
	data := listData(r)
	if len(data) != 1 {
		t.Fatalf("generation answer %s, want one image", truncate(string(r.Body), 300))
	}
	id, _ := data[0]["id"].(string)
	if id == "" {
		t.Fatalf("generated image has no id (spec: an image is addressed by id): %s", truncate(string(r.Body), 300))
	}
	checkImage := func(m map[string]any, ttl float64) {
		t.Helper()
		if m["ttl_hours"] != ttl {
			t.Errorf("image %v ttl_hours %v, want %v (DECISIONS 8.25)", m["id"], m["ttl_hours"], ttl)
		}
		ca, err1 := time.Parse(time.RFC3339, str(m["created_at"]))
		ea, err2 := time.Parse(time.RFC3339, str(m["expires_at"]))
		if err1 != nil || err2 != nil {
			t.Errorf("image created_at %v expires_at %v: want RFC 3339 (DECISIONS 8.25)", m["created_at"], m["expires_at"])
		} else if d := ea.Sub(ca); d < time.Duration(ttl)*time.Hour-time.Second || d > time.Duration(ttl)*time.Hour+time.Second {
			t.Errorf("image expires_at - created_at = %v, want %vh", d, ttl)
		}
	}
	checkImage(data[0], 12)
	if up := lastBody(t, g.CloudA, "/images/generations"); up["model"] != "lm-diffusion-xl" {
		t.Errorf("upstream image body %s: want model = router_alias lm-diffusion-xl (DECISIONS 8.5)", truncate(mustJSON(up), 300))
	}
	r = g.get(t, "/v1/images", tokMember, "")
	found := false
	for _, m := range listData(r) {
		if m["id"] == id {
			found = true
			checkImage(m, 12)
		}
	}
	if !found {
		t.Errorf("GET /v1/images %s lacks %s (spec: lists the tenant's stored images)", truncate(string(r.Body), 300), id)
	}
	r = g.get(t, "/v1/images/"+id, tokMember, "other-user")
	wantStatus(t, r, 200, "DECISIONS 8.25: images are tenant-scoped, no per-user filter")
	const nf = "spec Codes image_not_found"
	wantErr(t, g.get(t, "/v1/images/"+id, tokGlobex, ""), 404, "not_found_error", "image_not_found", "id", nf+": other tenant")
	wantErr(t, g.get(t, "/v1/images/img_does_not_exist", tokAdmin, ""), 404, "not_found_error", "image_not_found", "id", nf+": wrong id")
	wantErr(t, g.do(t, "DELETE", "/v1/images/"+id, tokGlobex, "", nil, nil), 404, "not_found_error", "image_not_found", "id", nf+": delete of another tenant's image")
	if r := g.get(t, "/v1/images", tokGlobex, ""); len(listData(r)) != 0 {
		t.Errorf("globex lists acme's images: %s", truncate(string(r.Body), 300))
	}
	wantStatus(t, g.do(t, "DELETE", "/v1/images/"+id, tokAdmin, "", nil, nil), 200, "DECISIONS 8.15 DELETE /v1/images/{id}")
	wantErr(t, g.get(t, "/v1/images/"+id, tokAdmin, ""), 404, "not_found_error", "image_not_found", "id", nf+": deleted")

	// ttl_hours up to the tenant's image_max_ttl_hours (default 168)
	r = gen(tokAdmin, map[string]any{"model": "lm-image", "prompt": "a dog", "ttl_hours": 168})
	if wantStatus(t, r, 200, "DECISIONS 8.25: ttl_hours up to 168 by default") && len(listData(r)) == 1 {
		checkImage(listData(r)[0], 168)
		if up := lastBody(t, g.CloudA, "/images/generations"); up["ttl_hours"] != nil || up["prompt"] != "a dog" {
			t.Errorf("upstream image body %s: want the OpenAI body without ttl_hours (DECISIONS 8.15: OpenAI body plus ttl_hours)", truncate(mustJSON(up), 300))
		}
	}
	wantErr(t, gen(tokAdmin, map[string]any{"model": "lm-image", "prompt": "a dog", "ttl_hours": 169}),
		400, "invalid_request_error", "invalid_field", "ttl_hours", "DECISIONS 8.25: ttl_hours above the tenant's value")
	wantStatus(t, g.do(t, "PUT", "/v1/tenant/config", tokAdmin, "", map[string]any{"key": "image_max_ttl_hours", "value": 720}, nil), 200, "raise image_max_ttl_hours")
	wantStatus(t, gen(tokAdmin, map[string]any{"model": "lm-image", "prompt": "a dog", "ttl_hours": 720}), 200, "DECISIONS 8.25: raised to 720")
	wantErr(t, gen(tokAdmin, map[string]any{"model": "lm-image", "prompt": "a dog", "ttl_hours": 721}),
		400, "invalid_request_error", "invalid_field", "ttl_hours", "DECISIONS 8.25")

	// answer shapes, the content endpoint, the default model (docs/decisions.md Images)
	const imgRef = "docs/decisions.md Images"
	r = gen(tokAdmin, map[string]any{"prompt": "no model", "response_format": "b64_json"})
	if wantStatus(t, r, 200, imgRef+": without model the first image alias") && len(listData(r)) == 1 {
		d := listData(r)[0]
		if d["model"] != "lm-image" || str(d["b64_json"]) == "" || d["url"] != nil {
			t.Errorf("b64_json answer item %s, want model lm-image, b64_json and no url (%s)", truncate(mustJSON(d), 300), imgRef)
		}
	}
	r = gen(tokAdmin, map[string]any{"model": "lm-image", "prompt": "url please"})
	if wantStatus(t, r, 200, imgRef) && len(listData(r)) == 1 {
		d := listData(r)[0]
		id := str(d["id"])
		u := str(d["url"])
		if !strings.HasSuffix(u, "/v1/images/"+id+"/content") || d["b64_json"] != nil {
			t.Errorf("default answer item url %q b64_json %v, want url …/v1/images/%s/content and no b64_json (%s)", u, d["b64_json"], id, imgRef)
		}
		c := g.get(t, "/v1/images/"+id+"/content", tokMember, "")
		if wantStatus(t, c, 200, imgRef+": GET /v1/images/{id}/content returns the raw bytes") {
			if ct := c.Header.Get("Content-Type"); ct != "image/png" || !bytes.HasPrefix(c.Body, []byte("\x89PNG")) {
				t.Errorf("image content %q %q, want image/png bytes", ct, truncate(string(c.Body), 20))
			}
		}
		wantErr(t, g.get(t, "/v1/images/"+id+"/content", "", ""), 401, "authentication_error", "missing_authorization", "headers.authorization", imgRef+": the content url needs the bearer")
		wantErr(t, g.get(t, "/v1/images/"+id+"/content", tokGlobex, ""), 404, "not_found_error", "image_not_found", "id", "spec Codes image_not_found: other tenant")
	}
	// ttl_hours defaults to 12, or the tenant's maximum when lower
	wantStatus(t, g.do(t, "PUT", "/v1/tenant/config", tokGlobex, "", map[string]any{"key": "image_max_ttl_hours", "value": 6}, nil), 200, "set image_max_ttl_hours 6")
	r = gen(tokGlobex, map[string]any{"model": "lm-image", "prompt": "short-lived"})
	if wantStatus(t, r, 200, imgRef) && len(listData(r)) == 1 {
		checkImage(listData(r)[0], 6)
	}

	// image_gen_rate_per_hour enforced per tenant (the image above counts)
	wantStatus(t, g.do(t, "PUT", "/v1/tenant/config", tokGlobex, "", map[string]any{"key": "image_gen_rate_per_hour", "value": 2}, nil), 200, "set image_gen_rate_per_hour 2")
	wantStatus(t, gen(tokGlobex, map[string]any{"model": "lm-image", "prompt": "one"}), 200, "second image of the hour")
	r = gen(tokGlobex, map[string]any{"model": "lm-image", "prompt": "two"})
	if wantErr(t, r, 429, "rate_limit_error", "model_quota_exhausted", anyParam, "issue 3 item 6; docs/decisions.md: image_gen_rate_per_hour exceeded is 429 model_quota_exhausted") {
		if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("image rate 429 without Retry-After seconds (%q)", r.Header.Get("Retry-After"))
		}
	}
	// acme's images are not counted against globex
	wantStatus(t, gen(tokAdmin, map[string]any{"model": "lm-image", "prompt": "acme"}), 200, "image_gen_rate_per_hour is per tenant")
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
		wantJSON(t, r)
		if r.JSON()["text"] != "transcribed words" {
			t.Errorf("%s answer %s, want {\"text\":\"transcribed words\"}", path, r.Body)
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
	wantErr(t, g.post(t, "/v1/audio/transcriptions", tokGlobex, "", `{"model":"lm-transcribe"}`),
		400, "invalid_request_error", "invalid_field", "headers.content-type", "spec /v1/audio: multipart/form-data only")
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
