package conversation

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/boltstore"
)

// scale enables BenchmarkScale, which writes a million messages to disk first
// (a few seconds, and a few hundred MB in the temporary directory):
//
//	go test -run '^$' -bench Scale -benchmem ./conversation/ -scale
var scale = flag.Bool("scale", false, "run BenchmarkScale (builds a store of 1M messages)")

// BenchmarkScale checks that listing and appending cost the same whatever the
// size of the tenant: with 1k and with 1M stored messages in the tenant,
//
//   - list50: the first page of 50 conversations of a user who has 100;
//   - append: one turn (two messages, one group-committed transaction, fsync
//     included) to one of that user's conversations, serially.
//
// The user's own conversations are the same in both stores (100 of 10
// messages, 1k messages); in the 1M store 9,990 conversations of 100 messages
// of 100 other users fill the tenant up to 1M messages.
func BenchmarkScale(b *testing.B) {
	if !*scale {
		b.Skip("builds a store of 1M messages: run with -scale")
	}
	for _, size := range []struct {
		name        string
		otherConvs  int
		msgsPerConv int
	}{
		{"1k", 0, 0},
		{"1M", 9990, 100},
	} {
		b.Run(size.name, func(b *testing.B) {
			db, err := boltstore.Open(filepath.Join(b.TempDir(), "scale.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			start := time.Now()
			total, err := bulkLoad(db, "t1", size.otherConvs, size.msgsPerConv)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("%s: %d messages written in %v", size.name, total, time.Since(start).Round(time.Millisecond))
			repo := NewRepository(db, clock.Wall{})
			ctx := context.Background()
			b.Run("list50", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					page, more, err := repo.List(ctx, "t1", "alice", 50, 0)
					if err != nil || len(page) != 50 || !more {
						b.Fatalf("List = %d, %v, %v", len(page), more, err)
					}
				}
			})
			b.Run("append", func(b *testing.B) {
				turn := []json.RawMessage{
					json.RawMessage(`{"role":"user","content":"And the next question?"}`),
					json.RawMessage(`{"role":"assistant","content":"Here is the next answer, about as long as a short reply."}`),
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if err := repo.Append(ctx, "t1", "alice", fmt.Sprintf("alice-%03d", i%100), turn, "", nil); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		})
	}
}

// bulkLoad writes, in the layout Append writes, 100 conversations of 10
// messages of user alice, and others conversations of perConv messages of 100
// other users (one message repeated), in large Update transactions (keys in order, so that bbolt
// appends); it returns the number of messages.
func bulkLoad(st store.Store, tenant string, others, perConv int) (int, error) {
	type conv struct {
		id, user string
		n        int
	}
	var convs []conv
	for i := range 100 {
		convs = append(convs, conv{fmt.Sprintf("alice-%03d", i), "alice", 10})
	}
	for i := range others {
		convs = append(convs, conv{fmt.Sprintf("other-%06d", i), fmt.Sprintf("user%03d", i%100), perConv})
	}
	msg := []byte(`{"role":"user","content":"A stored message of ordinary length, about the size of one question or a short reply."}`)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	total := 0
	const perTx = 200_000 // messages per transaction
	for len(convs) > 0 {
		err := st.Update(context.Background(), func(tx store.Tx) error {
			n := 0
			for len(convs) > 0 && n < perTx {
				c := convs[0]
				convs = convs[1:]
				p := convPrefix(tenant, c.id)
				for seq := range c.n {
					if err := tx.Put(bucketMsg, msgKey(p, uint64(seq)), msg); err != nil {
						return err
					}
				}
				now += int64(time.Millisecond)
				m := meta{UserID: c.user, MessageCount: int64(c.n), NextSeq: uint64(c.n), Created: now, LastUpdated: now}
				mv, err := json.Marshal(m)
				if err != nil {
					return err
				}
				sv := summaryValue(m.MessageCount, now, c.user)
				for _, put := range []struct{ bucket, key, value []byte }{
					{bucketMeta, p, mv},
					{bucketByUser, indexKey(userPrefix(tenant, c.user), now, c.id), sv},
					{bucketByTenant, indexKey(tenantPrefix(tenant), now, c.id), sv},
				} {
					if err := tx.Put(put.bucket, put.key, put.value); err != nil {
						return err
					}
				}
				n += c.n
			}
			total += n
			return nil
		})
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
