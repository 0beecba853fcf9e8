package conversation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/conversation"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/boltstore"
)

// The benchmarks run on boltstore, the production store: memstore copies a
// bucket on every write and sorts it on every scan, so it would measure itself.

func openBolt(b *testing.B) store.Store {
	b.Helper()
	db, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// turnMsgs is one turn of ordinary size: a user question and a reply.
var turnMsgs = []json.RawMessage{
	json.RawMessage(`{"role":"user","content":"What is the capital of France, and why is it the capital?"}`),
	json.RawMessage(`{"role":"assistant","content":"Paris. It has been the seat of the French state for most of the last thousand years, and it is the country's largest city and its economic and cultural centre."}`),
}

// parallel calls fn(i) for i in [0,n) from 64 goroutines, so that the setup's
// appends share group commits.
func parallel(n int, fn func(i int) error) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		err0 error
	)
	for range 64 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					err0 = err
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return err0
}

// BenchmarkAppendTurn appends one turn (user message + reply) to a conversation
// that already holds 100 messages: serially, where each Append pays the group
// commit's delay alone, and from 64 goroutines, each on its own conversation,
// where appends share commits.
func BenchmarkAppendTurn(b *testing.B) {
	ctx := context.Background()
	setup := func(b *testing.B, convs int) *conversation.Repository {
		repo := conversation.NewRepository(openBolt(b), clock.Wall{})
		err := parallel(convs, func(i int) error {
			for range 50 {
				if err := repo.Append(ctx, "t1", "alice", fmt.Sprint("c", i), turnMsgs, "", nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return repo
	}
	b.Run("serial", func(b *testing.B) {
		repo := setup(b, 1)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := repo.Append(ctx, "t1", "alice", "c0", turnMsgs, "", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel64", func(b *testing.B) {
		repo := setup(b, 64)
		var id atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(64 / max(1, testingProcs()))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			conv := fmt.Sprint("c", (id.Add(1)-1)%64)
			for pb.Next() {
				if err := repo.Append(ctx, "t1", "alice", conv, turnMsgs, "", nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkList50 lists the first and a deep page of 50 conversations of a user
// who has 10,000 conversations, in a tenant where 10 other users have 1,000
// each.
func BenchmarkList50(b *testing.B) {
	ctx := context.Background()
	fake := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	repo := conversation.NewRepository(openBolt(b), &tickClock{fake})
	const mine, others, perOther = 10000, 10, 1000
	err := parallel(mine+others*perOther, func(i int) error {
		user, id := "alice", fmt.Sprint("a", i)
		if i >= mine {
			user, id = fmt.Sprint("user", i%others), fmt.Sprint("o", i)
		}
		return repo.Append(ctx, "t1", user, id, turnMsgs, "", nil)
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, offset := range []int{0, 5000} {
		b.Run(fmt.Sprint("offset", offset), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				page, more, err := repo.List(ctx, "t1", "alice", 50, offset)
				if err != nil || len(page) != 50 || !more {
					b.Fatalf("List = %d, %v, %v", len(page), more, err)
				}
			}
		})
	}
}

// tickClock moves a fake clock by a microsecond on every reading, so that every
// conversation has its own last_updated.
type tickClock struct{ f *clock.Fake }

func (c *tickClock) Now() time.Time {
	c.f.Advance(time.Microsecond)
	return c.f.Now()
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }
