package conversation_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/conversation"
	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/pgstore"
)

// openPG opens a store on a throw-away PostgreSQL cluster (skipping the test
// without one): a store.Assumer, on which Append uses what LoadTx saw.
func openPG(t *testing.T) store.Store { return openDB(t, pgtest.New(t)) }

// openDB opens a store on a new database of cluster c.
func openDB(t *testing.T, c *pgtest.Cluster) store.Store {
	db, err := pgstore.Open(context.Background(), c.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// seenBy reads conversation id as a /c1 turn does, and returns what LoadTx
// saw of it, for Append.
func seenBy(ctx context.Context, st store.Store, repo *conversation.Repository, tenant, user, id string) ([]byte, error) {
	var seen []byte
	err := st.View(ctx, func(tx store.Tx) (err error) {
		_, seen, err = repo.LoadTx(tx, tenant, user, id)
		return err
	})
	return seen, err
}

// TestAppendSeen checks Append's promise that what the turn's read saw
// changes no outcome: each story, in which the conversation changes between
// a turn's read and its Append or does not, ends on PostgreSQL with the same
// conversation and list whether Append was given the read's seen or nil.
func TestAppendSeen(t *testing.T) {
	ctx := context.Background()
	msg := func(text string) []json.RawMessage { return []json.RawMessage{wire.TextMessage("user", text)} }
	// A story returns the error of the Append under test.
	stories := map[string]func(r *conversation.Repository, seen func(id string) []byte) error{
		"unchanged": func(r *conversation.Repository, seen func(string) []byte) error {
			r.Append(ctx, "t1", "alice", "c1", msg("one"), "sys", nil)
			s := seen("c1")
			return r.Append(ctx, "t1", "alice", "c1", msg("two"), "sys", s)
		},
		"a new one": func(r *conversation.Repository, seen func(string) []byte) error {
			return r.Append(ctx, "t1", "alice", "c1", msg("one"), "sys", seen("c1"))
		},
		"a turn came in between": func(r *conversation.Repository, seen func(string) []byte) error {
			r.Append(ctx, "t1", "alice", "c1", msg("one"), "sys", nil)
			s := seen("c1")
			r.Append(ctx, "t1", "alice", "c1", msg("between"), "sys", nil)
			return r.Append(ctx, "t1", "alice", "c1", msg("two"), "sys", s)
		},
		"created in between": func(r *conversation.Repository, seen func(string) []byte) error {
			s := seen("c1")
			r.Append(ctx, "t1", "alice", "c1", msg("first"), "sys A", nil)
			return r.Append(ctx, "t1", "alice", "c1", msg("second"), "sys B", s)
		},
		"created by another user in between": func(r *conversation.Repository, seen func(string) []byte) error {
			s := seen("c1")
			r.Append(ctx, "t1", "bob", "c1", msg("bob's"), "", nil)
			return r.Append(ctx, "t1", "alice", "c1", msg("alice's"), "", s)
		},
		"deleted in between": func(r *conversation.Repository, seen func(string) []byte) error {
			r.Append(ctx, "t1", "alice", "c1", msg("one"), "sys", nil)
			s := seen("c1")
			r.Delete(ctx, "t1", "alice", "c1")
			return r.Append(ctx, "t1", "alice", "c1", msg("two"), "sys 2", s)
		},
	}
	type outcome struct {
		Err      string
		Messages map[string][]string // by user
		Lists    map[string][]conversation.Summary
	}
	c := pgtest.New(t)
	run := func(t *testing.T, story func(*conversation.Repository, func(string) []byte) error, useSeen bool) outcome {
		st := openDB(t, c)
		defer st.Close()
		fake := clock.NewFake(time.Unix(1700000000, 0))
		repo := conversation.NewRepository(st, fake)
		seen := func(id string) []byte {
			fake.Advance(time.Second)
			s, err := seenBy(ctx, st, repo, "t1", "alice", id)
			if err != nil || !useSeen {
				return nil
			}
			if s == nil {
				t.Fatal("LoadTx saw nothing on a store.Assumer")
			}
			return s
		}
		var o outcome
		if err := story(repo, seen); err != nil {
			o.Err = err.Error()
		}
		o.Messages, o.Lists = map[string][]string{}, map[string][]conversation.Summary{}
		for _, user := range []string{"alice", "bob"} {
			msgs, err := repo.Load(ctx, "t1", user, "c1")
			if err != nil {
				o.Messages[user] = []string{err.Error()}
			}
			for _, m := range msgs {
				o.Messages[user] = append(o.Messages[user], string(m))
			}
			o.Lists[user], _, _ = repo.List(ctx, "t1", user, 10, 0)
		}
		return o
	}
	for name, story := range stories {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, got := run(t, story, false), run(t, story, true)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("outcome with seen differs from without (-without +with):\n%s", diff)
			}
		})
	}
}
