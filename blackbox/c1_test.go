package blackbox_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// Group 3: /c1 chat and conversations.

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func c1(g *gw, t *testing.T, tok, u string, hdr map[string]string, body map[string]any) *resp {
	t.Helper()
	h := map[string]string{"GW-User-Id": u}
	for k, v := range hdr {
		h[k] = v
	}
	if _, ok := body["stream"]; !ok {
		body["stream"] = false
	}
	return g.post(t, "/c1/chat", tok, h, body)
}

func convID(t *testing.T, r *resp) string {
	t.Helper()
	a, b := r.Header.Get("gw-conversation-id"), r.Header.Get("x-conversation-id")
	if a == "" || a != b {
		t.Errorf("conversation id headers gw=%q x=%q, want both, equal (DECISIONS 5)", a, b)
	}
	return a
}

func roles(msgs []map[string]any) string {
	var s []string
	for _, m := range msgs {
		c, _ := m["content"].(string)
		if c == "" {
			b, _ := json.Marshal(m["content"])
			c = string(b)
		}
		s = append(s, fmt.Sprintf("%v:%s", m["role"], c))
	}
	return strings.Join(s, " | ")
}

func storedMessages(t *testing.T, g *gw, tok, u, id string) []map[string]any {
	t.Helper()
	r := g.get(t, "/c1/conversations/"+id, tok, user(u))
	if !wantStatus(t, "GET conversation", r, 200) {
		return nil
	}
	var v struct {
		ConversationID string           `json:"conversation_id"`
		UserID         any              `json:"user_id"`
		Messages       []map[string]any `json:"messages"`
	}
	json.Unmarshal(r.Body, &v)
	if v.ConversationID != id {
		t.Errorf("GET conversation: conversation_id %q, want %q", v.ConversationID, id)
	}
	if u != "" && v.UserID != u {
		t.Errorf("GET conversation: user_id %v, want %q", v.UserID, u)
	}
	return v.Messages
}

func TestC1History(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: local.URL})
	r := c1(g, t, tokMember, "u1", nil, map[string]any{"message": "turn one", "system_prompt": "SP-ONE", "model": "lm-4-scout-local"})
	if !wantStatus(t, "turn 1", r, 200) {
		return
	}
	checkJSONCT(t, "c1 json", r)
	if r.JSON["object"] != "chat.completion" {
		t.Errorf("c1 unary answer not a chat.completion: %s", trunc(r.Body))
	}
	id := convID(t, r)
	if !uuidRE.MatchString(id) {
		t.Errorf("generated conversation id %q is not a UUID", id)
	}
	// Turn 2 by body id, with another system_prompt (ignored).
	r = c1(g, t, tokMember, "u1", nil, map[string]any{"message": "turn two", "conversation_id": id, "system_prompt": "SP-TWO", "model": "lm-4-scout-local"})
	wantStatus(t, "turn 2", r, 200)
	if convID(t, r) != id {
		t.Errorf("turn 2 answered another id")
	}
	// Turn 3 by x-conversation-id header only.
	r = c1(g, t, tokMember, "u1", map[string]string{"x-conversation-id": id}, map[string]any{"message": "turn three", "model": "lm-4-scout-local"})
	wantStatus(t, "turn 3 (x- header)", r, 200)
	// Turn 4 by gw-conversation-id header, same id in body too.
	r = c1(g, t, tokMember, "u1", map[string]string{"gw-conversation-id": id}, map[string]any{"message": "turn four", "conversation_id": id, "model": "lm-4-scout-local"})
	wantStatus(t, "turn 4 (gw- header + body)", r, 200)

	calls := chatCalls(local)
	if len(calls) != 4 {
		t.Fatalf("upstream calls %d, want 4", len(calls))
	}
	want := []string{
		"system:SP-ONE | user:turn one",
		"system:SP-ONE | user:turn one | assistant:" + upstreamtest.DefaultContent + " | user:turn two",
		"system:SP-ONE | user:turn one | assistant:" + upstreamtest.DefaultContent + " | user:turn two | assistant:" + upstreamtest.DefaultContent + " | user:turn three",
	}
	for i, w := range want {
		if got := roles(upstreamMessages(t, calls[i])); got != w {
			t.Errorf("turn %d upstream messages:\n got %s\nwant %s", i+1, got, w)
		}
	}
	if strings.Contains(string(calls[1].Body), "SP-TWO") {
		t.Errorf("system_prompt of turn 2 reached the upstream")
	}
	msgs := storedMessages(t, g, tokMember, "u1", id)
	if len(msgs) != 9 || msgs[0]["role"] != "system" || msgs[0]["content"] != "SP-ONE" {
		t.Errorf("stored history (%d): %s", len(msgs), roles(msgs))
	}

	// Header/body mismatch.
	r = c1(g, t, tokMember, "u1", map[string]string{"x-conversation-id": "other-id"}, map[string]any{"message": "x", "conversation_id": id})
	wantErr(t, "body/header mismatch", r, 400, "invalid_request_error", "invalid_field", "body.conversation_id")
	r = c1(g, t, tokMember, "u1", map[string]string{"gw-conversation-id": "other-id"}, map[string]any{"message": "x", "conversation_id": id})
	wantErr(t, "body/gw-header mismatch", r, 400, "invalid_request_error", "invalid_field", "body.conversation_id")

	// keep_last_turns.
	before := len(chatCalls(local))
	r = c1(g, t, tokMember, "u1", nil, map[string]any{"message": "k1", "conversation_id": id, "keep_last_turns": 1, "model": "lm-4-scout-local"})
	wantStatus(t, "keep_last_turns 1", r, 200)
	r = c1(g, t, tokMember, "u1", nil, map[string]any{"message": "k0", "conversation_id": id, "keep_last_turns": 0, "model": "lm-4-scout-local"})
	wantStatus(t, "keep_last_turns 0", r, 200)
	calls = chatCalls(local)
	if len(calls) == before+2 {
		if got, w := roles(upstreamMessages(t, calls[before])), "system:SP-ONE | user:turn four | assistant:"+upstreamtest.DefaultContent+" | user:k1"; got != w {
			t.Errorf("keep_last_turns 1:\n got %s\nwant %s", got, w)
		}
		if got, w := roles(upstreamMessages(t, calls[before+1])), "system:SP-ONE | user:k0"; got != w {
			t.Errorf("keep_last_turns 0:\n got %s\nwant %s", got, w)
		}
	}
	if msgs := storedMessages(t, g, tokMember, "u1", id); len(msgs) != 13 {
		t.Errorf("keep_last_turns must not trim storage: %d messages stored, want 13", len(msgs))
	}
	r = c1(g, t, tokMember, "u1", nil, map[string]any{"message": "x", "conversation_id": id, "keep_last_turns": -1})
	wantErr(t, "keep_last_turns -1", r, 400, "invalid_request_error", "invalid_field", "body.keep_last_turns")

	// Ephemeral: not stored, history still sent.
	r = c1(g, t, tokMember, "u1", nil, map[string]any{"message": "eph", "conversation_id": id, "ephemeral": true, "model": "lm-4-scout-local"})
	wantStatus(t, "ephemeral turn", r, 200)
	calls = chatCalls(local)
	if got := upstreamMessages(t, calls[len(calls)-1]); len(got) != 14 {
		t.Errorf("ephemeral turn: upstream got %d messages, want 14 (history + current)", len(got))
	}
	if msgs := storedMessages(t, g, tokMember, "u1", id); len(msgs) != 13 {
		t.Errorf("ephemeral turn stored: %d messages, want 13", len(msgs))
	}
	r = c1(g, t, tokMember, "u1", nil, map[string]any{"message": "eph new", "ephemeral": true, "model": "lm-4-scout-local"})
	if wantStatus(t, "ephemeral new conversation", r, 200) {
		eid := convID(t, r)
		wantErr(t, "ephemeral conversation not persisted", g.get(t, "/c1/conversations/"+eid, tokMember, user("u1")), 404, "not_found_error", "conversation_not_found", "conversation_id")
	}

	// Streaming /c1 (default stream true): persisted after the stream ends.
	r = g.post(t, "/c1/chat", tokMember, user("u1"), map[string]any{"message": "streamed", "conversation_id": id, "model": "lm-4-scout-local"})
	if wantStatus(t, "c1 stream", r, 200) {
		checkStream(t, r, false)
		convID(t, r)
		msgs := storedMessages(t, g, tokMember, "u1", id)
		if len(msgs) != 15 || msgs[14]["content"] != upstreamtest.DefaultContent || msgs[13]["content"] != "streamed" {
			t.Errorf("streamed turn not persisted: %s", roles(msgs))
		}
	}

	// A dropped stream stores nothing and sends gw.error.
	local.SetReply(upstreamtest.Reply{Drop: true, DropAfter: 1})
	r = g.post(t, "/c1/chat", tokMember, user("u1"), map[string]any{"message": "dropped", "conversation_id": id, "model": "lm-4-scout-local"})
	if wantStatus(t, "c1 dropped stream", r, 200) {
		if !strings.Contains(string(r.Body), "event: gw.error") || strings.Contains(string(r.Body), "[DONE]") {
			t.Errorf("c1 dropped stream: %s", trunc(r.Body))
		}
	}
	if msgs := storedMessages(t, g, tokMember, "u1", id); len(msgs) != 15 {
		t.Errorf("cut turn stored something: %d messages", len(msgs))
	}
	local.SetReply(upstreamtest.Reply{})

	// Restart persistence.
	g2 := g.restart()
	if msgs := storedMessages(t, g2, tokMember, "u1", id); len(msgs) != 15 {
		t.Errorf("after restart: %d messages, want 15", len(msgs))
	}
	r = c1(g2, t, tokMember, "u1", nil, map[string]any{"message": "after restart", "conversation_id": id, "model": "lm-4-scout-local"})
	wantStatus(t, "turn after restart", r, 200)
}

func TestC1ValidationAndImages(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	cloudA := upstreamtest.New(t)
	cloudB := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: local.URL, cloudA: cloudA.URL, cloudB: cloudB.URL})
	cases := []struct {
		name             string
		body             map[string]any
		status           int
		typ, code, param string
	}{
		{"missing message", map[string]any{}, 400, "invalid_request_error", "missing_field", "body.message"},
		{"unknown field", map[string]any{"message": "x", "foo": 1}, 400, "invalid_request_error", "invalid_field", "body.foo"},
		{"bad provider", map[string]any{"message": "x", "provider": "cloudC"}, 400, "invalid_request_error", "invalid_field", "body.provider"},
		{"temperature", map[string]any{"message": "x", "temperature": 2.1}, 400, "invalid_request_error", "invalid_field", "body.temperature"},
		{"max_tokens negative", map[string]any{"message": "x", "max_tokens": -1}, 400, "invalid_request_error", "invalid_field", "body.max_tokens"},
		{"max_tokens zero", map[string]any{"message": "x", "max_tokens": 0}, 400, "invalid_request_error", "max_tokens_below_minimum", "max_tokens"},
		{"model not allowed", map[string]any{"message": "x", "model": "lm-image"}, 400, "invalid_request_error", "model_not_in_allowlist", "model"},
		{"stream not bool", map[string]any{"message": "x", "stream": "yes"}, 400, "invalid_request_error", "invalid_field", "body.stream"},
		{"http image", map[string]any{"message": "see", "images": []any{map[string]any{"url": "https://example.com/x.png"}}}, 400, "invalid_request_error", "image_url_not_supported", "messages[].content[].image_url.url"},
		{"bad base64 image", map[string]any{"message": "see", "images": []any{map[string]any{"url": "data:image/png;base64,***"}}}, 400, "invalid_request_error", "image_base64_invalid", anyParam},
		{"image to text model", map[string]any{"message": "see", "model": "lm-text-8k", "images": []any{map[string]any{"url": pngDataURI}}}, 400, "invalid_request_error", "model_not_vision_capable", "messages[].content[].image_url"},
		{"context window", map[string]any{"message": strings.Repeat("word ", 6000), "model": "lm-text-8k"}, 400, "invalid_request_error", "context_window_exceeded", "messages"},
		{"doc consent", map[string]any{"message": "read", "model": "lm-4-scout-cloudA", "attachments": []any{map[string]any{"kind": "document", "doc_name": "a.txt", "content": "abc"}}}, 409, "conflict_error", "cloud_consent_required", anyParam},
		{"doc hash mismatch", map[string]any{"message": "read", "model": "lm-4-scout-local", "attachments": []any{map[string]any{"kind": "document", "doc_name": "a.txt", "content": "abc", "content_hash": "sha256:00"}}}, 400, "invalid_request_error", "invalid_field", "body.attachments[0].content_hash"},
		{"unknown conversation is fine? no: never persisted id is a new key", nil, 0, "", "", ""},
	}
	for _, c := range cases {
		if c.body == nil {
			continue
		}
		wantErr(t, c.name, c1(g, t, tokMember, "u1", nil, c.body), c.status, c.typ, c.code, c.param)
	}
	if n := len(chatCalls(local)) + len(chatCalls(cloudA)) + len(chatCalls(cloudB)); n != 0 {
		t.Errorf("rejected /c1 requests reached upstreams %d times", n)
	}

	// images become parts of the user message.
	r := c1(g, t, tokMember, "u1", nil, map[string]any{"message": "look", "model": "lm-vision", "images": []any{map[string]any{"url": pngDataURI, "detail": "low"}}})
	if wantStatus(t, "images", r, 200) {
		calls := chatCalls(local)
		msgs := upstreamMessages(t, calls[len(calls)-1])
		last := msgs[len(msgs)-1]
		parts, _ := last["content"].([]any)
		if len(parts) != 2 {
			t.Errorf("images: user content %v, want [text, image_url]", last["content"])
		} else {
			p0, _ := parts[0].(map[string]any)
			p1, _ := parts[1].(map[string]any)
			iu, _ := p1["image_url"].(map[string]any)
			if p0["type"] != "text" || p0["text"] != "look" || p1["type"] != "image_url" || iu["url"] != pngDataURI || iu["detail"] != "low" {
				t.Errorf("images parts: %v", parts)
			}
		}
		id := convID(t, r)
		sm := storedMessages(t, g, tokMember, "u1", id)
		if len(sm) != 2 {
			t.Errorf("stored image turn: %s", roles(sm))
		} else if _, ok := sm[0]["content"].([]any); !ok {
			t.Errorf("stored image turn content not a parts array: %v", sm[0]["content"])
		}
	}
	// images ignored when message is already a parts array.
	r = c1(g, t, tokMember, "u1", nil, map[string]any{"message": []any{textPart("parts")}, "model": "lm-vision", "images": []any{map[string]any{"url": pngDataURI}}})
	if wantStatus(t, "parts + images", r, 200) {
		calls := chatCalls(local)
		msgs := upstreamMessages(t, calls[len(calls)-1])
		if parts, _ := msgs[len(msgs)-1]["content"].([]any); len(parts) != 1 {
			t.Errorf("images not ignored with a parts message: %v", msgs[len(msgs)-1]["content"])
		}
	}

	// provider selects the alias; model wins over provider.
	for _, c := range []struct {
		body  map[string]any
		fake  *upstreamtest.Server
		model string
	}{
		{map[string]any{"message": "x", "provider": "cloudA"}, cloudA, "lm-4-scout-17b-16e-instruct"},
		{map[string]any{"message": "x", "provider": "cloudB"}, cloudB, "lm-4-scout-17b-16e-instruct:free"},
		{map[string]any{"message": "x", "provider": "local"}, local, "lm-4-scout:17b-16e-instruct-q4_K_M"},
		{map[string]any{"message": "x", "provider": "auto"}, local, "lm-4-scout:17b-16e-instruct-q4_K_M"},
		{map[string]any{"message": "x"}, local, "lm-4-scout:17b-16e-instruct-q4_K_M"},
		{map[string]any{"message": "x", "provider": "cloudB", "model": "lm-4-scout-cloudA"}, cloudA, "lm-4-scout-17b-16e-instruct"},
	} {
		n := len(chatCalls(c.fake))
		r := c1(g, t, tokMember, "u1", nil, c.body)
		if wantStatus(t, fmt.Sprint("provider ", c.body), r, 200) {
			calls := chatCalls(c.fake)
			if len(calls) != n+1 || calls[n].Model != c.model {
				t.Errorf("provider %v: not routed to %s", c.body, c.model)
			}
		}
	}
	// tools / tool_choice / response_format pass through.
	r = c1(g, t, tokMember, "u1", nil, map[string]any{"message": "x", "model": "lm-4-scout-local",
		"tools":           []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{"type": "object"}}}},
		"tool_choice":     "auto",
		"response_format": map[string]any{"type": "json_object"}})
	if wantStatus(t, "tools pass-through", r, 200) {
		calls := chatCalls(local)
		b := bodyMap(t, calls[len(calls)-1])
		if b["tools"] == nil || b["tool_choice"] != "auto" || b["response_format"] == nil {
			t.Errorf("tools/tool_choice/response_format not passed through: %s", calls[len(calls)-1].Body)
		}
	}
}

func TestC1IsolationPaginationDelete(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	g := startGW(t, gwOpts{local: local.URL})
	r := c1(g, t, tokMember, "alice", nil, map[string]any{"message": "a1", "system_prompt": "S"})
	if !wantStatus(t, "alice turn", r, 200) {
		return
	}
	aid := convID(t, r)
	c1(g, t, tokMember, "alice", nil, map[string]any{"message": "a2", "conversation_id": aid})

	nf := func(name string, r *resp) {
		t.Helper()
		wantErr(t, name, r, 404, "not_found_error", "conversation_not_found", "conversation_id")
	}
	nf("bob GET alice's", g.get(t, "/c1/conversations/"+aid, tokMember, user("bob")))
	nf("bob chats in alice's", c1(g, t, tokMember, "bob", nil, map[string]any{"message": "hijack", "conversation_id": aid}))
	nf("bob chats in alice's by header", c1(g, t, tokMember, "bob", map[string]string{"x-conversation-id": aid}, map[string]any{"message": "hijack"}))
	nf("other tenant admin GET", g.get(t, "/c1/conversations/"+aid, tokBetaAdmin, nil))
	nf("other tenant same user GET", g.get(t, "/c1/conversations/"+aid, tokBetaMem, user("alice")))
	nf("unknown id", g.get(t, "/c1/conversations/nope", tokMember, user("alice")))
	// Tenant admin: tenant-wide read without user.
	r = g.get(t, "/c1/conversations/"+aid, tokAdmin, nil)
	if wantStatus(t, "admin tenant-wide GET", r, 200) {
		if n := len(asSlice(r.JSON["messages"])); n != 5 {
			t.Errorf("admin GET: %d messages", n)
		}
	}
	// Admin with a user header is filtered like anyone.
	nf("admin as bob", g.get(t, "/c1/conversations/"+aid, tokAdmin, user("bob")))

	// Listing.
	list := func(tok, u, q string) *resp {
		var h map[string]string
		if u != "" {
			h = user(u)
		}
		return g.get(t, "/c1/conversations"+q, tok, h)
	}
	r = list(tokMember, "bob", "")
	if wantStatus(t, "bob list", r, 200) {
		if r.JSON["object"] != "list" || len(asSlice(r.JSON["data"])) != 0 || r.JSON["has_more"] != false || r.JSON["limit"] != float64(50) || r.JSON["offset"] != float64(0) {
			t.Errorf("bob list: %s", trunc(r.Body))
		}
	}
	// carol: 3 conversations, 1 s apart in the second ones so that order is defined.
	var cids []string
	for i := 0; i < 3; i++ {
		r := c1(g, t, tokMember, "carol", nil, map[string]any{"message": fmt.Sprint("c", i)})
		cids = append(cids, convID(t, r))
		if i < 2 {
			time.Sleep(1050 * time.Millisecond)
		}
	}
	r = list(tokMember, "carol", "?limit=2")
	if wantStatus(t, "carol limit 2", r, 200) {
		d := asSlice(r.JSON["data"])
		if len(d) != 2 || r.JSON["has_more"] != true || r.JSON["limit"] != float64(2) {
			t.Errorf("limit=2: %s", trunc(r.Body))
		} else {
			s0 := d[0].(map[string]any)
			if s0["conversation_id"] != cids[2] || d[1].(map[string]any)["conversation_id"] != cids[1] {
				t.Errorf("list not newest first: %v, created %v", d, cids)
			}
			if s0["message_count"] != float64(2) || s0["user_id"] != "carol" {
				t.Errorf("summary: %v", s0)
			}
			if lu, _ := s0["last_updated"].(string); lu == "" {
				t.Errorf("last_updated missing")
			} else if _, err := time.Parse(time.RFC3339, lu); err != nil {
				t.Errorf("last_updated %q not RFC 3339", lu)
			}
		}
	}
	r = list(tokMember, "carol", "?limit=2&offset=2")
	if wantStatus(t, "carol offset 2", r, 200) {
		d := asSlice(r.JSON["data"])
		if len(d) != 1 || r.JSON["has_more"] != false || r.JSON["offset"] != float64(2) {
			t.Errorf("offset=2: %s", trunc(r.Body))
		} else if d[0].(map[string]any)["conversation_id"] != cids[0] {
			t.Errorf("offset=2: oldest expected")
		}
	}
	r = list(tokMember, "carol", "?limit=3")
	if wantStatus(t, "carol limit 3", r, 200) && r.JSON["has_more"] != false {
		t.Errorf("limit=3 of 3: has_more %v", r.JSON["has_more"])
	}
	r = list(tokMember, "carol", "?offset=10")
	if wantStatus(t, "carol offset past end", r, 200) && len(asSlice(r.JSON["data"])) != 0 {
		t.Errorf("offset past end: %s", trunc(r.Body))
	}
	wantStatus(t, "limit 500", list(tokMember, "carol", "?limit=500"), 200)
	wantStatus(t, "limit 1", list(tokMember, "carol", "?limit=1"), 200)
	for _, q := range []struct{ q, param string }{
		{"?limit=501", "query.limit"}, {"?limit=0", "query.limit"}, {"?limit=-1", "query.limit"},
		{"?limit=abc", "query.limit"}, {"?offset=-1", "query.offset"}, {"?offset=x", "query.offset"},
	} {
		wantErr(t, "list "+q.q, list(tokMember, "carol", q.q), 400, "invalid_request_error", "invalid_field", q.param)
	}
	r = list(tokAdmin, "", "?limit=500")
	if wantStatus(t, "admin tenant-wide list", r, 200) && len(asSlice(r.JSON["data"])) != 4 {
		t.Errorf("admin tenant-wide list: %d conversations, want 4", len(asSlice(r.JSON["data"])))
	}
	r = list(tokBetaAdmin, "", "")
	if wantStatus(t, "beta admin list", r, 200) && len(asSlice(r.JSON["data"])) != 0 {
		t.Errorf("beta admin sees acme conversations")
	}

	// Delete counts.
	del := func(tok, u, id string) *resp {
		return g.do(t, req{method: "DELETE", path: "/c1/conversations/" + id, token: tok, hdr: user(u)})
	}
	r = del(tokMember, "bob", aid)
	if wantStatus(t, "bob deletes alice's", r, 200) && r.JSON["deleted"] != float64(0) {
		t.Errorf("delete other user's: %s, want deleted 0", r.Body)
	}
	r = del(tokBetaMem, "alice", aid)
	if wantStatus(t, "other tenant deletes", r, 200) && r.JSON["deleted"] != float64(0) {
		t.Errorf("delete other tenant's: %s", r.Body)
	}
	r = del(tokMember, "alice", aid)
	if wantStatus(t, "alice deletes", r, 200) && r.JSON["deleted"] != float64(5) {
		t.Errorf("delete own: %s, want deleted 5 (system + 2 turns)", r.Body)
	}
	checkJSONCT(t, "delete", r)
	r = del(tokMember, "alice", aid)
	if wantStatus(t, "alice deletes again", r, 200) && r.JSON["deleted"] != float64(0) {
		t.Errorf("second delete: %s", r.Body)
	}
	nf("after delete", g.get(t, "/c1/conversations/"+aid, tokMember, user("alice")))
	r = del(tokMember, "alice", "never-existed")
	if wantStatus(t, "delete unknown", r, 200) && r.JSON["deleted"] != float64(0) {
		t.Errorf("delete unknown: %s", r.Body)
	}
}
