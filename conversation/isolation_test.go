package conversation_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chatgw/gateway/conversation"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/google/go-cmp/cmp"
)

// seen is everything one tenant is shown of its conversation T-1001: the
// HTTP answers as written, byte for byte, and the repository's values.
type seen struct {
	GetOwner, GetAdmin   string // GET /c1/conversations/T-1001 as alice, and tenant-wide
	ListOwner, ListAdmin string // GET /c1/conversations as alice, and tenant-wide
	Load                 []string
	List                 []conversation.Summary
}

func (e *env) seen(t *testing.T, tenant string) seen {
	t.Helper()
	var s seen
	for _, r := range []struct {
		target, user string
		body         *string
	}{
		{"/c1/conversations/T-1001", "alice", &s.GetOwner},
		{"/c1/conversations/T-1001", "", &s.GetAdmin},
		{"/c1/conversations", "alice", &s.ListOwner},
		{"/c1/conversations", "", &s.ListAdmin},
	} {
		status, body := e.raw(t, "GET", r.target, tenant, r.user)
		if status != 200 {
			t.Fatalf("GET %s as %s %q = %d %s", r.target, tenant, r.user, status, body)
		}
		*r.body = body
	}
	ctx := context.Background()
	msgs, err := e.svc.Load(ctx, tenant, "alice", "T-1001")
	if err != nil {
		t.Fatal(err)
	}
	s.Load = rawStrings(msgs)
	if s.List, _, err = e.svc.List(ctx, tenant, "", conversation.MaxLimit, 0); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTenantsShareIDs gives two tenants the conversation id T-1001, through
// the same user id alice. While one tenant writes, reads, lists and deletes
// its T-1001, through the repository and the HTTP handlers, the other's
// T-1001 (its messages, its list entry, message_count and last_updated, and
// every answer about them, byte for byte) does not change; each step also
// checks that the acting tenant sees only its own conversation. Each tenant
// goes first once, and each acts while the other's conversation exists.
func TestTenantsShareIDs(t *testing.T) {
	for _, tc := range []struct{ first, second string }{
		{"acme", "globex"},
		{"globex", "acme"},
	} {
		t.Run(tc.first+" first", func(t *testing.T) {
			e := newEnv(t)
			e.turn(t, tc.first, "alice", "T-1001", tc.first+" printer on fire", tc.first+" prompt")
			e.turn(t, tc.first, "bob", "T-2000", tc.first+" other conversation", "")

			// The second tenant takes the id while the first holds it.
			want := e.seen(t, tc.first)
			for _, step := range useID(tc.second) {
				step.do(t, e)
				if diff := cmp.Diff(want, e.seen(t, tc.first)); diff != "" {
					t.Errorf("%s: %s's T-1001 mismatch (-want +got):\n%s", step.name, tc.first, diff)
				}
			}

			// And the other way round: the second tenant holds the id while
			// the first uses (and deletes) its own.
			e.turn(t, tc.second, "alice", "T-1001", tc.second+" printer on fire", tc.second+" prompt")
			want = e.seen(t, tc.second)
			for _, step := range useID(tc.first) {
				step.do(t, e)
				if diff := cmp.Diff(want, e.seen(t, tc.second)); diff != "" {
					t.Errorf("%s: %s's T-1001 mismatch (-want +got):\n%s", step.name, tc.second, diff)
				}
			}
		})
	}
}

type step struct {
	name string
	do   func(t *testing.T, e *env)
}

// useID is what tenant does with T-1001 of its user alice, each step checking
// what tenant itself is shown: create or append to it (whichever it is to the
// tenant), read and list it, have another user of the tenant refused, delete
// it over HTTP, recreate it and delete it through the repository. It ends with
// no T-1001 in tenant.
func useID(tenant string) []step {
	ctx := context.Background()
	wantMsgs := func(t *testing.T, e *env, n int) {
		t.Helper()
		got, err := e.svc.Load(ctx, tenant, "alice", "T-1001")
		if err != nil || len(got) != n || string(got[len(got)-1]) != string(wire.TextMessage("assistant", "re: "+tenant+" turn")) {
			t.Fatalf("%s Load(T-1001) = %s, %v; want %d messages ending in its own reply", tenant, rawStrings(got), err, n)
		}
	}
	return []step{
		{tenant + " appends", func(t *testing.T, e *env) {
			before, _ := e.svc.Load(ctx, tenant, "alice", "T-1001")
			e.turn(t, tenant, "alice", "T-1001", tenant+" turn", tenant+" prompt")
			wantMsgs(t, e, max(3, len(before)+2))
		}},
		{tenant + " appends again", func(t *testing.T, e *env) {
			before, _ := e.svc.Load(ctx, tenant, "alice", "T-1001")
			e.turn(t, tenant, "alice", "T-1001", tenant+" turn", "ignored")
			wantMsgs(t, e, len(before)+2)
		}},
		{tenant + " GETs", func(t *testing.T, e *env) {
			_, body := e.do(t, "GET", "/c1/conversations/T-1001", tenant, "alice")
			msgs, _ := body["messages"].([]any)
			first, _ := msgs[0].(map[string]any)
			if body["user_id"] != "alice" || first["content"] != tenant+" prompt" && first["content"] != tenant+" printer on fire" {
				t.Errorf("%s GET T-1001 = %v; want its own conversation", tenant, body)
			}
		}},
		{tenant + " lists", func(t *testing.T, e *env) {
			page, _, err := e.svc.List(ctx, tenant, "alice", conversation.MaxLimit, 0)
			if err != nil || len(page) != 1 || page[0].ID != "T-1001" || !page[0].LastUpdated.Equal(e.clock.Now().Add(-time.Second)) {
				t.Errorf("%s List = %+v, %v; want its T-1001, updated by its last turn", tenant, page, err)
			}
		}},
		{tenant + "'s bob is refused", func(t *testing.T, e *env) {
			if status, body := e.do(t, "GET", "/c1/conversations/T-1001", tenant, "bob"); status != 404 {
				t.Errorf("%s bob GET = %d %v; want 404", tenant, status, body)
			}
			if _, body := e.do(t, "DELETE", "/c1/conversations/T-1001", tenant, "bob"); body["deleted"] != 0.0 {
				t.Errorf("%s bob DELETE = %v; want deleted 0", tenant, body)
			}
			err := e.svc.Append(ctx, tenant, "bob", "T-1001", []json.RawMessage{wire.TextMessage("user", "x")}, "", nil)
			if errcat.CodeOf(err) != errcat.ConversationNotFound {
				t.Errorf("%s bob Append = %v; want conversation_not_found", tenant, err)
			}
		}},
		{tenant + " DELETEs", func(t *testing.T, e *env) {
			before, _ := e.svc.Load(ctx, tenant, "alice", "T-1001")
			if _, body := e.do(t, "DELETE", "/c1/conversations/T-1001", tenant, "alice"); body["deleted"] != float64(len(before)) {
				t.Errorf("%s DELETE = %v; want deleted %d, its own messages", tenant, body, len(before))
			}
			if status, _ := e.do(t, "GET", "/c1/conversations/T-1001", tenant, "alice"); status != 404 {
				t.Errorf("%s GET after DELETE = %d; want 404", tenant, status)
			}
		}},
		{tenant + " recreates and deletes", func(t *testing.T, e *env) {
			e.turn(t, tenant, "alice", "T-1001", tenant+" turn", tenant+" prompt")
			wantMsgs(t, e, 3)
			if n, err := e.svc.Delete(ctx, tenant, "", "T-1001"); err != nil || n != 3 {
				t.Errorf("%s Delete = %d, %v; want 3", tenant, n, err)
			}
			if got, err := e.svc.Load(ctx, tenant, "alice", "T-1001"); err != nil || got != nil {
				t.Errorf("%s Load after Delete = %s, %v; want nil, nil", tenant, rawStrings(got), err)
			}
		}},
	}
}
