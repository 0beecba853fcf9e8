package chat_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/chatgw/gateway/chat"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
)

// countingStore counts the read transactions of the store it wraps.
type countingStore struct {
	store.Store
	views atomic.Int64
}

func (c *countingStore) View(ctx context.Context, fn func(store.Tx) error) error {
	c.views.Add(1)
	return c.Store.View(ctx, fn)
}

// TestOneReadBeforeUpstream: a /c1 turn reads the tenant's config, the
// history and the injected prompts in one read transaction before it calls
// upstream (each is a round trip on a database server).
func TestOneReadBeforeUpstream(t *testing.T) {
	var cs *countingStore
	var viewsAtUpstream int64 = -1
	e := newEnv(t,
		withInject(func(string, string) (string, error) { return "memory", nil }),
		func(e *env, c *chat.Config) {
			cs = &countingStore{Store: e.st}
			c.Store = cs
			e.up.reply = func(n int, req *upstream.Request) (*upstream.Response, error) {
				viewsAtUpstream = cs.views.Load()
				return textReply(n, req)
			}
		})
	if rec := e.post(t, "alice", `{"message":"hi","conversation_id":"c1","stream":false}`); rec.Code != 200 {
		t.Fatalf("first turn: %d %s", rec.Code, rec.Body)
	}
	cs.views.Store(0)
	if rec := e.post(t, "alice", `{"message":"again","conversation_id":"c1","stream":false}`); rec.Code != 200 {
		t.Fatalf("second turn: %d %s", rec.Code, rec.Body)
	}
	if viewsAtUpstream != 1 {
		t.Errorf("%d read transactions before the upstream call, want 1", viewsAtUpstream)
	}
}
