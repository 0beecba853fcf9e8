package e2e_test

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
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
	c := func(name string, input any) errCase {
		return errCase{name: name, method: "POST", path: "/v1/embeddings", token: tokMember,
			body: map[string]any{"model": "lm-embed", "input": input}, status: 400, typ: "invalid_request_error",
			code: "embedding_input_too_large", param: "input", ref: ref}
	}
	n := chatCallsPath(g, "/embeddings")
	runErrCases(t, g, errCases{
		c("257 elements", many(257)),
		c("element of 8193 bytes", []string{"ok", strings.Repeat("a", 8193)}),
		c("string of 8193 bytes", strings.Repeat("a", 8193)),
		c("8194 bytes of 4097 two-byte runes", []string{strings.Repeat("é", 4097)}),
		{name: "model not allowed", method: "POST", path: "/v1/embeddings", token: tokTiny, body: map[string]any{"model": "lm-embed", "input": []string{"a"}},
			status: 400, typ: "invalid_request_error", code: "model_not_in_allowlist", param: "model", ref: "spec Codes model_not_in_allowlist"},
		{name: "missing input", method: "POST", path: "/v1/embeddings", token: tokMember, body: map[string]any{"model": "lm-embed"},
			status: 400, typ: "invalid_request_error", code: "missing_field", param: "input", ref: "DECISIONS 8.2"},
		{name: "missing model", method: "POST", path: "/v1/embeddings", token: tokMember, body: map[string]any{"input": []string{"a"}},
			status: 400, typ: "invalid_request_error", code: "missing_field", param: "model", ref: "DECISIONS 8.2"},
	})
	if m := chatCallsPath(g, "/embeddings"); m != n {
		t.Errorf("rejected embeddings reached the upstream (%d calls)", m-n)
	}
}

func chatCallsPath(g *gw, suffix string) int {
	n := 0
	for _, c := range append(append(g.Local.Calls(), g.CloudA.Calls()...), g.CloudB.Calls()...) {
		if strings.HasSuffix(c.Path, suffix) {
			n++
		}
	}
	return n
}

func TestImages(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	gen := func(token string, body map[string]any) *resp {
		return g.post(t, "/v1/images/generations", token, "", body)
	}
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
	}
	wantErr(t, gen(tokAdmin, map[string]any{"model": "lm-image", "prompt": "a dog", "ttl_hours": 169}),
		400, "invalid_request_error", "invalid_field", "ttl_hours", "DECISIONS 8.25: ttl_hours above the tenant's value")
	wantStatus(t, g.do(t, "PUT", "/v1/tenant/config", tokAdmin, "", map[string]any{"key": "image_max_ttl_hours", "value": 720}, nil), 200, "raise image_max_ttl_hours")
	wantStatus(t, gen(tokAdmin, map[string]any{"model": "lm-image", "prompt": "a dog", "ttl_hours": 720}), 200, "DECISIONS 8.25: raised to 720")
	wantErr(t, gen(tokAdmin, map[string]any{"model": "lm-image", "prompt": "a dog", "ttl_hours": 721}),
		400, "invalid_request_error", "invalid_field", "ttl_hours", "DECISIONS 8.25")

	// image_gen_rate_per_hour enforced per tenant
	wantStatus(t, g.do(t, "PUT", "/v1/tenant/config", tokGlobex, "", map[string]any{"key": "image_gen_rate_per_hour", "value": 1}, nil), 200, "set image_gen_rate_per_hour 1")
	wantStatus(t, gen(tokGlobex, map[string]any{"model": "lm-image", "prompt": "one"}), 200, "first image of the hour")
	r = gen(tokGlobex, map[string]any{"model": "lm-image", "prompt": "two"})
	if r.Status != 429 {
		t.Errorf("%s\n  want 429 once image_gen_rate_per_hour (1) is used up (issue 3 item 6)", r)
	} else if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("image rate 429 without Retry-After seconds (%q)", r.Header.Get("Retry-After"))
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func TestQuotas(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
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
	}
	wantStatus(t, g.post(t, "/v1/chat/completions", tokQuota, "", chatBody("lm-4-scout-cloudB", "hi")), 200, "first cloudB request of the day")
	r = g.post(t, "/v1/chat/completions", tokQuota, "", chatBody("lm-4-scout-cloudB", "hi"))
	if wantErr(t, r, 429, "rate_limit_error", "cloudB_daily_quota_exhausted", "model", "spec Codes cloudB_daily_quota_exhausted") {
		fb, ok := r.JSON()["available_fallbacks"].([]any)
		if !ok {
			t.Errorf("cloudB_daily_quota_exhausted body lacks the available_fallbacks array: %s", r.Body)
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
	// /c1 is held to the same budget
	r = g.post(t, "/c1/chat", tokQuota, "u", map[string]any{"message": "hi", "stream": false, "model": "lm-4-scout-local"})
	wantErr(t, r, 429, "rate_limit_error", "model_quota_exhausted", anyParam, "quota on /c1")
	// another tenant is not affected
	wantStatus(t, g.post(t, "/v1/chat/completions", tokMember, "", chatBody("lm-4-scout-local", "hi")), 200, "quota is per tenant")
}

func TestToolsAndConfirmTokens(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	r := g.post(t, "/v1/tools/execute", tokMember, "alice", map[string]any{"inspect": true})
	if wantStatus(t, r, 200, "DECISIONS 7: inspect") {
		var inv struct {
			Tools []map[string]any `json:"tools"`
		}
		json.Unmarshal(r.Body, &inv)
		names := map[string]bool{}
		for _, tl := range inv.Tools {
			n, _ := tl["name"].(string)
			names[n] = true
			if _, ok := tl["description"].(string); !ok || tl["parameters"] == nil {
				t.Errorf("tool %v lacks description or parameters (DECISIONS 7)", tl)
			}
		}
		for _, n := range []string{"memory_remember", "memory_forget", "current_time"} {
			if !names[n] {
				t.Errorf("inspect lacks tool %s (spec /v1/memory*: memory tools; DECISIONS 7)", n)
			}
		}
	}
	remember := func(user string, args map[string]any) *resp {
		return g.post(t, "/v1/tools/execute", tokMember, user, map[string]any{"name": "memory_remember", "arguments": args})
	}
	args := func(value, token string) map[string]any {
		m := map[string]any{"key": "team", "value": value, "visibility": "public"}
		if token != "" {
			m["confirm_token"] = token
		}
		return m
	}
	publicHas := func(user, key string) bool {
		for _, e := range listData(g.get(t, "/v1/memory?visibility=public", tokMember, user)) {
			if e["key"] == key {
				return true
			}
		}
		return false
	}
	first := func(value string) string {
		r := remember("alice", args(value, ""))
		m := r.JSON()
		tok, _ := m["confirm_token"].(string)
		if r.Status != 200 || m["confirm_required"] != true || tok == "" || m["expires_in"] != 60.0 {
			t.Errorf("%s\n  want 200 {confirm_required:true, confirm_token, expires_in:60} (spec Errors rule 2; DECISIONS 8.7)", r)
		}
		return tok
	}
	tok := first("blue")
	if publicHas("alice", "team") {
		t.Errorf("a public memory_remember without token wrote the entry (DECISIONS 8.7: writes nothing)")
	}
	const ref = "spec Codes memory_confirm_required; DECISIONS 8.7"
	wantErr(t, remember("alice", args("blue", "wrong-token")), 400, "invalid_request_error", "memory_confirm_required", "confirm_token", ref+": wrong token")
	wantErr(t, remember("alice", args("green", tok)), 400, "invalid_request_error", "memory_confirm_required", "confirm_token", ref+": other arguments")
	wantErr(t, remember("bob", args("blue", tok)), 400, "invalid_request_error", "memory_confirm_required", "confirm_token", ref+": other user")
	tok = first("blue") // a failed check may have burnt the token; ask again
	r = remember("alice", args("blue", tok))
	if wantStatus(t, r, 200, ref+": repeat with the token writes") && !publicHas("bob", "team") {
		t.Errorf("after the confirmed write, bob does not see the public entry (DECISIONS 6: public buckets are shared)")
	}
	wantErr(t, remember("alice", args("blue", tok)), 400, "invalid_request_error", "memory_confirm_required", "confirm_token", ref+": reused token")
	tok = first("red")
	r = g.post(t, "/v1/tools/execute", tokGlobexMem, "alice", map[string]any{"name": "memory_remember", "arguments": args("red", tok)})
	wantErr(t, r, 400, "invalid_request_error", "memory_confirm_required", "confirm_token", ref+": other tenant")
	// private via the tool path writes at once
	r = remember("alice", map[string]any{"key": "pet", "value": "cat", "visibility": "private"})
	if wantStatus(t, r, 200, "DECISIONS 8.24: private memory_remember writes at once") {
		if r.JSON()["confirm_required"] == true {
			t.Errorf("private memory_remember asked for confirmation (DECISIONS 8.24)")
		}
		found := false
		for _, e := range listData(g.get(t, "/v1/memory?visibility=private", tokMember, "alice")) {
			found = found || (e["key"] == "pet" && e["value"] == "cat")
		}
		if !found {
			t.Errorf("private memory_remember did not write")
		}
	}
	// forget
	r = g.post(t, "/v1/tools/execute", tokMember, "alice", map[string]any{"name": "memory_forget", "arguments": map[string]any{"key": "pet", "visibility": "private"}})
	wantStatus(t, r, 200, "memory_forget")
	if len(listData(g.get(t, "/v1/memory?visibility=private", tokMember, "alice"))) != 0 {
		t.Errorf("memory_forget did not delete")
	}
	// memory tools need a user
	r = g.post(t, "/v1/tools/execute", tokMember, "", map[string]any{"name": "memory_remember", "arguments": map[string]any{"key": "a", "value": "b", "visibility": "private"}})
	wantErr(t, r, 400, "invalid_request_error", "missing_field", "headers.gw-user-id", "DECISIONS 8.18: memory always needs a user")
}

func TestMemory(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	put := func(token, user string, body map[string]any) *resp {
		return g.post(t, "/v1/memory", token, user, body)
	}
	usage := func(user, vis string) map[string]any {
		r := g.get(t, "/v1/memory/usage?visibility="+vis, tokMember, user)
		if !wantStatus(t, r, 200, "GET /v1/memory/usage") {
			return nil
		}
		return r.JSON()
	}
	const capRef = "spec Limits Memory bucket 16 KB; DECISIONS 8.8 (16384 bytes, key+value UTF-8)"
	// exact boundary: 1 + 16383 = 16384
	r := put(tokMember, "alice", map[string]any{"key": "k", "value": strings.Repeat("v", 16383), "visibility": "private"})
	if wantStatus(t, r, 200, capRef+": exactly the cap fits") {
		u := usage("alice", "private")
		if u["used_bytes"] != 16384.0 || u["cap_bytes"] != 16384.0 || u["entries"] != 1.0 {
			t.Errorf("usage %v, want used_bytes 16384, cap_bytes 16384, entries 1 (DECISIONS 6)", u)
		}
	}
	r = put(tokMember, "alice", map[string]any{"key": "k2", "value": "x", "visibility": "private"})
	wantErr(t, r, 409, "conflict_error", "memory_bucket_full", "value", capRef+": one byte over")
	// an upsert that would overflow keeps the old value
	r = put(tokMember, "alice", map[string]any{"key": "k", "value": strings.Repeat("w", 16384), "visibility": "private"})
	wantErr(t, r, 409, "conflict_error", "memory_bucket_full", "value", capRef+": upsert over the cap")
	for _, e := range listData(g.get(t, "/v1/memory?visibility=private", tokMember, "alice")) {
		if e["key"] == "k" && !strings.HasPrefix(str(e["value"]), "vvv") {
			t.Errorf("a refused upsert changed the value (issue 5 item 1: the old value stays)")
		}
	}
	// an upsert of the same size replaces, not adds
	r = put(tokMember, "alice", map[string]any{"key": "k", "value": strings.Repeat("y", 16383), "visibility": "private"})
	wantStatus(t, r, 200, capRef+": upsert counts the replaced value once")
	// other users and the public bucket are separate buckets
	wantStatus(t, put(tokMember, "bob", map[string]any{"key": "k", "value": strings.Repeat("b", 16383), "visibility": "private"}), 200, "bob's bucket is his own")
	wantStatus(t, put(tokMember, "alice", map[string]any{"key": "pub", "value": "shared", "visibility": "public"}), 200, "public bucket")
	// UTF-8 bytes, not runes
	r = put(tokMember, "carol", map[string]any{"key": "k", "value": strings.Repeat("é", 8192), "visibility": "private"})
	wantErr(t, r, 409, "conflict_error", "memory_bucket_full", "value", capRef+": 1 + 16384 UTF-8 bytes (8192 runes)")
	r = put(tokMember, "carol", map[string]any{"key": "é", "value": strings.Repeat("é", 8191), "visibility": "private"})
	wantStatus(t, r, 200, capRef+": 2 + 16382 bytes")

	// isolation
	for _, e := range listData(g.get(t, "/v1/memory?visibility=private", tokMember, "bob")) {
		if strings.HasPrefix(str(e["value"]), "y") {
			t.Errorf("bob sees alice's private entry (issue 5 item 1)")
		}
	}
	found := false
	for _, e := range listData(g.get(t, "/v1/memory?visibility=public", tokMember, "bob")) {
		found = found || e["key"] == "pub"
	}
	if !found {
		t.Errorf("bob does not see alice's public entry (DECISIONS 6)")
	}
	if n := len(listData(g.get(t, "/v1/memory?visibility=public", tokGlobexMem, "bob"))); n != 0 {
		t.Errorf("globex's bob sees %d public entries of acme (tenant isolation)", n)
	}
	if n := len(listData(g.get(t, "/v1/memory?visibility=public&scope_id=other", tokMember, "bob"))); n != 0 {
		t.Errorf("scope other lists %d entries of scope default (DECISIONS 6: buckets per scope_id)", n)
	}
	// delete
	wantStatus(t, g.do(t, "DELETE", "/v1/memory?visibility=private&key=k", tokMember, "alice", nil, nil), 200, "spec DELETE /v1/memory")
	if u := usage("alice", "private"); u != nil && (u["used_bytes"] != 0.0 || u["entries"] != 0.0) {
		t.Errorf("usage after delete %v, want 0 bytes, 0 entries", u)
	}
	const inv = "invalid_request_error"
	runErrCases(t, g, errCases{
		{name: "bad visibility", method: "POST", path: "/v1/memory", token: tokMember, user: "alice",
			body: map[string]any{"key": "a", "value": "b", "visibility": "secret"}, status: 400, typ: inv, code: "invalid_field", param: "body.visibility", ref: "DECISIONS 8.2"},
		{name: "unknown field", method: "POST", path: "/v1/memory", token: tokMember, user: "alice",
			body: map[string]any{"key": "a", "value": "b", "visibility": "private", "colour": "red"}, status: 400, typ: inv, code: "invalid_field", param: "body.colour", ref: "DECISIONS 5: unknown fields in the gateway's own schemas"},
		{name: "missing key", method: "POST", path: "/v1/memory", token: tokMember, user: "alice",
			body: map[string]any{"value": "b", "visibility": "private"}, status: 400, typ: inv, code: "missing_field", param: "body.key", ref: "DECISIONS 8.2"},
		{name: "value not a string", method: "POST", path: "/v1/memory", token: tokMember, user: "alice",
			body: map[string]any{"key": "a", "value": 5, "visibility": "private"}, status: 400, typ: inv, code: "invalid_field", param: "body.value", ref: "DECISIONS 8.2"},
		{name: "invalid json", method: "POST", path: "/v1/memory", token: tokMember, user: "alice",
			body: `{"key":`, status: 400, typ: inv, code: "invalid_json", param: anyParam, ref: "spec Codes invalid_json"},
		{name: "usage bad visibility", method: "GET", path: "/v1/memory/usage?visibility=nope", token: tokMember, user: "alice",
			status: 400, typ: inv, code: "invalid_field", param: "query.visibility", ref: "DECISIONS 8.2"},
	})
}

// TestConfirmTokenExpiry waits past the 60 s lifetime of a confirm token; it
// runs only with E2E_LONG=1 (it would double the suite's time).
func TestConfirmTokenExpiry(t *testing.T) {
	if os.Getenv("E2E_LONG") == "" {
		t.Skip("waits 61 s: set E2E_LONG=1")
	}
	t.Parallel()
	g := start(t, nil)
	args := map[string]any{"key": "late", "value": "v", "visibility": "public"}
	r := g.post(t, "/v1/tools/execute", tokMember, "alice", map[string]any{"name": "memory_remember", "arguments": args})
	tok := str(r.JSON()["confirm_token"])
	if tok == "" {
		t.Fatalf("%s: no confirm_token", r)
	}
	time.Sleep(61 * time.Second)
	args["confirm_token"] = tok
	r = g.post(t, "/v1/tools/execute", tokMember, "alice", map[string]any{"name": "memory_remember", "arguments": args})
	wantErr(t, r, 400, "invalid_request_error", "memory_confirm_required", "confirm_token", "spec Limits: memory confirm token 60 s; DECISIONS 8.7: expired token")
}
