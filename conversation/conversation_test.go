package conversation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/conversation"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a conversation service over a memstore with a fake clock, served by
// the routes the root wires.
type env struct {
	st    *memstore.Store
	clock *clock.Fake
	svc   *conversation.Service
	h     http.Handler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{st: testkit.MemStore(t), clock: clock.NewFake(t0)}
	e.svc = conversation.New(conversation.Config{Store: e.st, Clock: e.clock})
	e.h = testkit.Router(t, map[string]http.HandlerFunc{
		"GET /c1/conversations":        e.svc.ListConversations,
		"GET /c1/conversations/:id":    e.svc.GetConversation,
		"DELETE /c1/conversations/:id": e.svc.DeleteConversation,
	})
	return e
}

// send serves one request as user of tenant ("": no GW-User-Id), whose
// principal is a tenant admin (the tests read tenant-wide too).
func (e *env) send(t *testing.T, method, target, tenant, user string) *httptest.ResponseRecorder {
	t.Helper()
	return testkit.Serve(t, e.h, testkit.Request{Method: method, Target: target, User: user,
		Principal: &auth.Principal{Tenant: &auth.Tenant{ID: tenant}, Role: auth.RoleTenantAdmin}})
}

// do sends one request (see send) and returns the status and the JSON
// answer.
func (e *env) do(t *testing.T, method, target, tenant, user string) (int, map[string]any) {
	t.Helper()
	w := e.send(t, method, target, tenant, user)
	var body map[string]any
	testkit.Decode(t, w, w.Code, &body)
	return w.Code, body
}

// raw sends one request (see send) and returns the status and the body as it
// was written.
func (e *env) raw(t *testing.T, method, target, tenant, user string) (int, string) {
	t.Helper()
	w := e.send(t, method, target, tenant, user)
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type = %q", method, target, ct)
	}
	return w.Code, w.Body.String()
}

// turn appends a user message and an assistant reply, then moves the clock.
func (e *env) turn(t *testing.T, tenant, user, id, text, sys string) {
	t.Helper()
	err := e.svc.Append(context.Background(), tenant, user, id,
		[]json.RawMessage{wire.TextMessage("user", text), wire.TextMessage("assistant", "re: "+text)}, sys, nil)
	if err != nil {
		t.Fatalf("Append(%s/%s/%s): %v", tenant, user, id, err)
	}
	e.clock.Advance(time.Second)
}

func TestAppendLoad(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	got, err := e.svc.Load(ctx, "t1", "alice", "c1")
	if err != nil || got != nil {
		t.Fatalf("Load(new) = %v, %v; want nil, nil", got, err)
	}
	e.turn(t, "t1", "alice", "c1", "one", "be brief")
	e.turn(t, "t1", "alice", "c1", "two", "ignored later")
	got, err = e.svc.Load(ctx, "t1", "alice", "c1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"role":"system","content":"be brief"}`,
		`{"role":"user","content":"one"}`,
		`{"role":"assistant","content":"re: one"}`,
		`{"role":"user","content":"two"}`,
		`{"role":"assistant","content":"re: two"}`,
	}
	if diff := cmp.Diff(want, rawStrings(got)); diff != "" {
		t.Errorf("Load() mismatch (-want +got):\n%s", diff)
	}
}

func rawStrings(msgs []json.RawMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m)
	}
	return out
}

func TestOwnership(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.turn(t, "t1", "alice", "c1", "secret", "")

	if _, err := e.svc.Load(ctx, "t1", "bob", "c1"); errcat.CodeOf(err) != errcat.ConversationNotFound {
		t.Errorf("Load(bob) error = %v; want conversation_not_found", err)
	}
	err := e.svc.Append(ctx, "t1", "bob", "c1", []json.RawMessage{wire.TextMessage("user", "x")}, "", nil)
	if errcat.CodeOf(err) != errcat.ConversationNotFound {
		t.Errorf("Append(bob) error = %v; want conversation_not_found", err)
	}
	// Ids are scoped to the tenant: to another tenant c1 is an id it never
	// stored, as c2 is (TestTenantsShareIDs shows that using it changes
	// nothing for t1).
	for _, id := range []string{"c1", "c2"} {
		if got, err := e.svc.Load(ctx, "t2", "alice", id); err != nil || got != nil {
			t.Errorf("Load(t2, %s) = %v, %v; want nil, nil", id, got, err)
		}
	}

	tests := []struct {
		name, method, tenant, user string
		status                     int
		code                       string
	}{
		{"owner", "GET", "t1", "alice", 200, ""},
		{"admin view", "GET", "t1", "", 200, ""},
		{"other user", "GET", "t1", "bob", 404, "conversation_not_found"},
		{"other tenant", "GET", "t2", "alice", 404, "conversation_not_found"},
		{"other tenant admin", "GET", "t2", "", 404, "conversation_not_found"},
		{"delete other user", "DELETE", "t1", "bob", 200, ""},
		{"delete other tenant", "DELETE", "t2", "alice", 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.do(t, tc.method, "/c1/conversations/c1", tc.tenant, tc.user)
			if status != tc.status {
				t.Fatalf("status = %d; want %d (%v)", status, tc.status, body)
			}
			if got := testkit.ErrorOf(t, status, body); got.Code != tc.code || (got.Code != "" && got.Param != "conversation_id") {
				t.Errorf("error = %s %s; want %q conversation_id", got.Code, got.Param, tc.code)
			}
			if tc.method == "DELETE" && body["deleted"] != 0.0 {
				t.Errorf("deleted = %v; want 0", body["deleted"])
			}
			if tc.code != "" && strings.Contains(fmt.Sprint(body), "secret") {
				t.Errorf("404 leaks content: %v", body)
			}
		})
	}
	if status, _ := e.do(t, "GET", "/c1/conversations/c1", "t1", "alice"); status != 200 {
		t.Errorf("after foreign deletes: GET = %d; want 200", status)
	}
}

func TestGet(t *testing.T) {
	e := newEnv(t)
	e.turn(t, "t1", "alice", "c1", "hello", "sys")
	parts := json.RawMessage(`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}`)
	calls := json.RawMessage(`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`)
	if err := e.svc.Append(context.Background(), "t1", "alice", "c1", []json.RawMessage{parts, calls}, "", nil); err != nil {
		t.Fatal(err)
	}
	status, body := e.do(t, "GET", "/c1/conversations/c1", "t1", "alice")
	if status != 200 {
		t.Fatalf("status = %d: %v", status, body)
	}
	want := map[string]any{
		"conversation_id": "c1",
		"user_id":         "alice",
		"messages": []any{
			map[string]any{"role": "system", "content": "sys"},
			map[string]any{"role": "user", "content": "hello"},
			map[string]any{"role": "assistant", "content": "re: hello"},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "look"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AAAA"}},
			}},
			map[string]any{"role": "assistant", "content": "", "tool_calls": []any{
				map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}},
			}},
		},
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("GET mismatch (-want +got):\n%s", diff)
	}
}

func TestListOrderAndCounts(t *testing.T) {
	e := newEnv(t)
	e.turn(t, "t1", "alice", "a", "1", "sys") // 3 messages
	e.turn(t, "t1", "bob", "b", "1", "")
	e.turn(t, "t1", "alice", "c", "1", "")
	e.turn(t, "t1", "u", "u1", "1", "")
	e.turn(t, "t1", "u1", "u10", "1", "")      // "u" must not see "u1"'s conversations
	e.turn(t, "t2", "alice", "other", "1", "") // another tenant
	e.turn(t, "t1", "alice", "a", "2", "")     // a becomes the newest of alice

	_, body := e.do(t, "GET", "/c1/conversations", "t1", "alice")
	want := map[string]any{
		"object": "list",
		"data": []any{
			map[string]any{"conversation_id": "a", "message_count": 5.0, "last_updated": "2025-03-01T12:00:06Z", "user_id": "alice"},
			map[string]any{"conversation_id": "c", "message_count": 2.0, "last_updated": "2025-03-01T12:00:02Z", "user_id": "alice"},
		},
		"limit": 50.0, "offset": 0.0, "has_more": false,
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("list alice mismatch (-want +got):\n%s", diff)
	}

	_, body = e.do(t, "GET", "/c1/conversations", "t1", "u")
	if diff := cmp.Diff([]string{"u1"}, ids(body)); diff != "" {
		t.Errorf("list u mismatch (-want +got):\n%s", diff)
	}
	_, body = e.do(t, "GET", "/c1/conversations", "t1", "")
	if diff := cmp.Diff([]string{"a", "u10", "u1", "c", "b"}, ids(body)); diff != "" {
		t.Errorf("tenant-wide list mismatch (-want +got):\n%s", diff)
	}
	_, body = e.do(t, "GET", "/c1/conversations", "t3", "alice")
	if diff := cmp.Diff([]string{}, ids(body)); diff != "" {
		t.Errorf("empty tenant list mismatch (-want +got):\n%s", diff)
	}
}

func ids(body map[string]any) []string {
	out := []string{}
	data, _ := body["data"].([]any)
	for _, d := range data {
		out = append(out, d.(map[string]any)["conversation_id"].(string))
	}
	return out
}

func TestListPagination(t *testing.T) {
	e := newEnv(t)
	const n = 501
	for i := range n {
		e.turn(t, "t1", "alice", fmt.Sprintf("c%03d", i), "x", "")
	}
	newest := func(i int) string { return fmt.Sprintf("c%03d", n-1-i) }
	tests := []struct {
		query   string
		status  int
		param   string
		count   int
		first   string
		hasMore bool
	}{
		{query: "", status: 200, count: 50, first: newest(0), hasMore: true},
		{query: "?limit=1", status: 200, count: 1, first: newest(0), hasMore: true},
		{query: "?limit=500", status: 200, count: 500, first: newest(0), hasMore: true},
		{query: "?limit=500&offset=1", status: 200, count: 500, first: newest(1), hasMore: false},
		{query: "?limit=2&offset=499", status: 200, count: 2, first: newest(499), hasMore: false},
		{query: "?limit=2&offset=498", status: 200, count: 2, first: newest(498), hasMore: true},
		{query: "?offset=501", status: 200, count: 0, hasMore: false},
		{query: "?offset=100000", status: 200, count: 0, hasMore: false},
		{query: "?limit=0", status: 400, param: "query.limit"},
		{query: "?limit=501", status: 400, param: "query.limit"},
		{query: "?limit=-1", status: 400, param: "query.limit"},
		{query: "?limit=abc", status: 400, param: "query.limit"},
		{query: "?limit=1.5", status: 400, param: "query.limit"},
		{query: "?limit=", status: 400, param: "query.limit"},
		{query: "?offset=-1", status: 400, param: "query.offset"},
		{query: "?offset=x", status: 400, param: "query.offset"},
		{query: "?offset=99999999999999999999", status: 400, param: "query.offset"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			status, body := e.do(t, "GET", "/c1/conversations"+tc.query, "t1", "alice")
			if status != tc.status {
				t.Fatalf("status = %d; want %d (%v)", status, tc.status, body)
			}
			if tc.status != 200 {
				if got := testkit.ErrorOf(t, status, body); got.Code != "invalid_field" || got.Param != tc.param {
					t.Errorf("error = %s %s; want invalid_field %s", got.Code, got.Param, tc.param)
				}
				return
			}
			got := ids(body)
			if len(got) != tc.count || body["has_more"] != tc.hasMore {
				t.Fatalf("got %d items, has_more %v; want %d, %v", len(got), body["has_more"], tc.count, tc.hasMore)
			}
			if tc.count > 0 && got[0] != tc.first {
				t.Errorf("first = %s; want %s", got[0], tc.first)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	e := newEnv(t)
	e.turn(t, "t1", "alice", "c1", "1", "sys")
	e.turn(t, "t1", "alice", "c1", "2", "")
	e.turn(t, "t1", "alice", "c2", "1", "")

	status, body := e.do(t, "DELETE", "/c1/conversations/c1", "t1", "alice")
	if status != 200 || body["deleted"] != 5.0 {
		t.Fatalf("DELETE = %d %v; want 200 deleted 5", status, body)
	}
	if status, body = e.do(t, "DELETE", "/c1/conversations/c1", "t1", "alice"); body["deleted"] != 0.0 {
		t.Errorf("second DELETE = %d %v; want deleted 0", status, body)
	}
	if status, body = e.do(t, "DELETE", "/c1/conversations/nope", "t1", "alice"); body["deleted"] != 0.0 {
		t.Errorf("DELETE unknown = %d %v; want deleted 0", status, body)
	}
	if status, _ := e.do(t, "GET", "/c1/conversations/c1", "t1", "alice"); status != 404 {
		t.Errorf("GET after DELETE = %d; want 404", status)
	}
	for _, user := range []string{"alice", ""} {
		if _, body := e.do(t, "GET", "/c1/conversations", "t1", user); !cmp.Equal([]string{"c2"}, ids(body)) {
			t.Errorf("list(%q) after DELETE = %v; want [c2]", user, ids(body))
		}
	}
	// The id can be used again, by anyone, as a new conversation.
	e.turn(t, "t1", "bob", "c1", "again", "new sys")
	if got, _ := e.svc.Load(context.Background(), "t1", "bob", "c1"); len(got) != 3 {
		t.Errorf("reused id holds %d messages; want 3", len(got))
	}
}

func TestOddIDs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// Ids holding the key encoding's special bytes stay apart.
	for _, id := range []string{"a", "a\x00", "a\x00\x01", "ab", "a/b"} {
		e.turn(t, "t\x00", "u\x00", id, id, "")
	}
	for _, id := range []string{"a", "a\x00", "a\x00\x01", "ab", "a/b"} {
		got, err := e.svc.Load(ctx, "t\x00", "u\x00", id)
		if err != nil || len(got) != 2 || string(got[0]) != string(wire.TextMessage("user", id)) {
			t.Errorf("Load(%q) = %s, %v", id, rawStrings(got), err)
		}
	}
	if got, _ := e.svc.Load(ctx, "t", "u\x00", "a"); got != nil {
		t.Errorf("tenant prefix leaked: %s", rawStrings(got))
	}
	page, _, err := e.svc.List(ctx, "t\x00", "u", 10, 0)
	if err != nil || len(page) != 0 {
		t.Errorf("List(user prefix) = %v, %v; want nothing", page, err)
	}
}

func TestStorageError(t *testing.T) {
	e := newEnv(t)
	e.turn(t, "t1", "alice", "c1", "1", "")
	errDisk := errors.New("disk on fire")
	for _, tc := range []struct{ method, target string }{
		{"GET", "/c1/conversations"},
		{"GET", "/c1/conversations/c1"},
		{"DELETE", "/c1/conversations/c1"},
	} {
		e.st.FailNext(errDisk)
		status, body := e.do(t, tc.method, tc.target, "t1", "alice")
		if code := testkit.ErrorOf(t, status, body).Code; status != 500 || code != "storage_error" || strings.Contains(fmt.Sprint(body), "fire") {
			t.Errorf("%s %s = %d %v; want 500 storage_error without cause", tc.method, tc.target, status, body)
		}
	}
	e.st.FailNext(errDisk)
	err := e.svc.Append(context.Background(), "t1", "alice", "c1", []json.RawMessage{wire.TextMessage("user", "x")}, "", nil)
	if errcat.CodeOf(err) != errcat.StorageError || !errors.Is(err, errDisk) {
		t.Errorf("Append error = %v; want storage_error wrapping the cause", err)
	}
	if got, _ := e.svc.Load(context.Background(), "t1", "alice", "c1"); len(got) != 2 {
		t.Errorf("failed Append changed the history: %s", rawStrings(got))
	}
}
