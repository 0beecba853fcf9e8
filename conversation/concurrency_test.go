package conversation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/conversation"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/boltstore"
	"github.com/chatgw/gateway/store/memstore"
)

// TestConcurrentAppends appends turns from many goroutines, to one conversation
// and to many, through group commit on boltstore and on memstore, and with
// what each turn's read saw on PostgreSQL: no turn is lost or split, and
// counts and the index agree with the messages.
func TestConcurrentAppends(t *testing.T) {
	stores := map[string]func(t *testing.T) store.Store{
		"mem": func(t *testing.T) store.Store { return memstore.New() },
		"bolt": func(t *testing.T) store.Store {
			db, err := boltstore.Open(filepath.Join(t.TempDir(), "t.db"))
			if err != nil {
				t.Fatal(err)
			}
			return db
		},
		// Where the turns' Appends assume what their reads saw, and often
		// see it changed by another worker's turn.
		"pg": openPG,
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			defer st.Close()
			repo := conversation.NewRepository(st, clock.Wall{})
			ctx := context.Background()
			const workers, turns = 16, 10
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := range turns {
						for _, id := range []string{"shared", fmt.Sprint("own", w)} {
							msgs := []json.RawMessage{
								json.RawMessage(fmt.Sprintf(`{"role":"user","content":"w%d t%d"}`, w, i)),
								json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":"w%d t%d"}`, w, i)),
							}
							seen, err := seenBy(ctx, st, repo, "t1", "alice", id)
							if err != nil {
								t.Error(err)
								return
							}
							if err := repo.Append(ctx, "t1", "alice", id, msgs, "sys", seen); err != nil {
								t.Error(err)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			msgs, err := repo.Load(ctx, "t1", "alice", "shared")
			if err != nil || len(msgs) != 1+2*workers*turns {
				t.Fatalf("shared holds %d messages, %v; want %d", len(msgs), err, 1+2*workers*turns)
			}
			// Every user message is directly followed by its own reply.
			for i := 1; i < len(msgs); i += 2 {
				var u, a struct{ Role, Content string }
				json.Unmarshal(msgs[i], &u)
				json.Unmarshal(msgs[i+1], &a)
				if u.Role != "user" || a.Role != "assistant" || u.Content != a.Content {
					t.Fatalf("turn split at %d: %s / %s", i, msgs[i], msgs[i+1])
				}
			}
			page, more, err := repo.List(ctx, "t1", "alice", 100, 0)
			if err != nil || more || len(page) != workers+1 {
				t.Fatalf("List = %d entries, more %v, %v; want %d", len(page), more, err, workers+1)
			}
			for _, s := range page {
				want := int64(1 + 2*turns)
				if s.ID == "shared" {
					want = 1 + 2*workers*turns
				}
				if s.MessageCount != want {
					t.Errorf("%s message_count = %d; want %d", s.ID, s.MessageCount, want)
				}
			}
		})
	}
}
