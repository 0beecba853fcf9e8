package e2e_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

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
	if u := usage("zed", "public"); u != nil && u["used_bytes"] != float64(len("pub")+len("shared")) {
		t.Errorf("public usage seen by another user %v, want alice's %d bytes (DECISIONS 6: the public bucket is shared)", u, len("pub")+len("shared"))
	}
	// a full entry fits another scope's public bucket (alice's private bucket is
	// full, the default public bucket holds "pub")
	wantStatus(t, put(tokMember, "alice", map[string]any{"key": "k", "value": strings.Repeat("s", 16383), "visibility": "public", "scope_id": "team-b"}), 200, "DECISIONS 6: buckets per visibility and scope_id")
	// a smaller value frees its difference, to the byte
	wantStatus(t, put(tokMember, "dave", map[string]any{"key": "k", "value": strings.Repeat("v", 16383), "visibility": "private"}), 200, capRef+": full")
	wantStatus(t, put(tokMember, "dave", map[string]any{"key": "k", "value": strings.Repeat("v", 16000), "visibility": "private"}), 200, capRef+": replaced by a smaller value")
	wantStatus(t, put(tokMember, "dave", map[string]any{"key": "ab", "value": strings.Repeat("c", 381), "visibility": "private"}), 200, capRef+": a new entry fills the freed 384 bytes")
	wantErr(t, put(tokMember, "dave", map[string]any{"key": "z", "value": "1", "visibility": "private"}), 409, "conflict_error", "memory_bucket_full", "value", capRef+": and not one more")
	wantErr(t, put(tokMember, "erin", map[string]any{"key": "k", "value": strings.Repeat("v", 16384), "visibility": "private"}), 409, "conflict_error", "memory_bucket_full", "value", capRef+": 16385 bytes into an empty bucket")
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
	r = g.do(t, "DELETE", "/v1/memory?visibility=private&key=k", tokMember, "alice", nil, nil)
	if wantStatus(t, r, 200, "spec DELETE /v1/memory") && r.JSON()["deleted"] != true {
		t.Errorf("%s\n  want {\"deleted\":true} (docs/decisions.md Memory)", r)
	}
	r = g.do(t, "DELETE", "/v1/memory?visibility=private&key=k", tokMember, "alice", nil, nil)
	if wantStatus(t, r, 200, "spec DELETE /v1/memory") && r.JSON()["deleted"] != false {
		t.Errorf("%s\n  second delete: want {\"deleted\":false} (docs/decisions.md Memory)", r)
	}
	if u := usage("alice", "private"); u != nil && (u["used_bytes"] != 0.0 || u["entries"] != 0.0) {
		t.Errorf("usage after delete %v, want 0 bytes, 0 entries", u)
	}
	// POST answers the entry; an empty scope_id is the default scope; GET
	// without visibility lists the private entries, then the public ones
	const memRef = "docs/decisions.md Memory"
	r = put(tokMember, "gus", map[string]any{"key": "zz-private", "value": "p", "visibility": "private", "scope_id": ""})
	if wantStatus(t, r, 200, memRef) {
		if m := r.JSON(); m["key"] != "zz-private" || m["value"] != "p" || m["visibility"] != "private" || m["scope_id"] != "default" {
			t.Errorf("%s\n  want the entry {key, value, visibility, scope_id default} (%s: POST answers the entry; empty scope_id means default)", r, memRef)
		}
	}
	wantStatus(t, put(tokMember, "gus", map[string]any{"key": "aa-public", "value": "q", "visibility": "public", "scope_id": ""}), 200, memRef)
	var keys []string
	for _, e := range listData(g.get(t, "/v1/memory", tokMember, "gus")) {
		keys = append(keys, str(e["key"]))
	}
	if len(keys) < 2 || keys[0] != "zz-private" || !strings.Contains(strings.Join(keys, ","), "aa-public") || !strings.Contains(strings.Join(keys, ","), "pub") {
		t.Errorf("GET /v1/memory without visibility lists %v, want gus's private entry first, then the default scope's public ones (aa-public, pub) (%s)", keys, memRef)
	}
	if !strings.Contains(mustJSON(listData(g.get(t, "/v1/memory?visibility=public&scope_id=default", tokMember, "gus"))), "aa-public") {
		t.Errorf("an entry written with scope_id \"\" is not in scope default (%s)", memRef)
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
	// failed checks do not use the token up
	r = remember("alice", args("blue", tok))
	if wantStatus(t, r, 200, ref+": the token still confirms after failed checks") && r.JSON()["confirm_required"] == true {
		t.Errorf("%s\n  the confirmed write asked for confirmation again (DECISIONS 8.7)", r)
	}
	if !publicHas("alice", "team") {
		t.Errorf("the confirmed public memory_remember did not write (DECISIONS 8.7)")
	}
	tok = first("blue") // every public write needs its own confirmation
	r = remember("alice", args("blue", tok))
	if wantStatus(t, r, 200, ref+": repeat with the token writes") && !publicHas("bob", "team") {
		t.Errorf("after the confirmed write, bob does not see the public entry (DECISIONS 6: public buckets are shared)")
	}
	wantErr(t, remember("alice", args("blue", tok)), 400, "invalid_request_error", "memory_confirm_required", "confirm_token", ref+": reused token")
	tok = first("red")
	r = g.post(t, "/v1/tools/execute", tokGlobexMem, "alice", map[string]any{"name": "memory_remember", "arguments": args("red", tok)})
	wantErr(t, r, 400, "invalid_request_error", "memory_confirm_required", "confirm_token", ref+": other tenant")
	// an argument's field error names its place in the body (DECISIONS 8.2)
	const loc = "DECISIONS 8.2: body.<field>, nested with dots"
	wantErr(t, remember("alice", map[string]any{"value": "v", "visibility": "private"}), 400, "invalid_request_error", "missing_field", "body.arguments.key", loc)
	wantErr(t, remember("alice", map[string]any{"key": "k", "value": "v", "visibility": "all"}), 400, "invalid_request_error", "invalid_field", "body.arguments.visibility", loc)
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
	r = g.post(t, "/v1/tools/execute", tokMember, "alice", map[string]any{"name": "memory_remember", "arguments": `{"key":"as-string","value":"v","visibility":"private"}`})
	if wantStatus(t, r, 200, "docs/decisions.md: arguments may be a JSON string holding an object") {
		found := false
		for _, e := range listData(g.get(t, "/v1/memory?visibility=private", tokMember, "alice")) {
			found = found || e["key"] == "as-string"
		}
		if !found {
			t.Errorf("memory_remember with string arguments did not write")
		}
	}
	r = g.post(t, "/v1/tools/execute", tokMember, "alice", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}})
	wantErr(t, r, 400, "invalid_request_error", "invalid_field", "body.name", "DECISIONS 7: unknown tool name")
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
