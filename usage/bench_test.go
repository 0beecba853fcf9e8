package usage_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/usage"
)

// discardStore takes every write and keeps nothing, so that a benchmark
// measures the Service and not a store.
type discardStore struct{}

func (discardStore) View(ctx context.Context, fn func(store.Tx) error) error { return fn(discardTx{}) }
func (discardStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	return fn(discardTx{})
}
func (discardStore) Batch(ctx context.Context, fn func(store.Tx) error) error { return fn(discardTx{}) }
func (discardStore) Close() error                                             { return nil }

type discardTx struct{}

func (discardTx) Get(bucket, key []byte) []byte       { return nil }
func (discardTx) Put(bucket, key, value []byte) error { return nil }
func (discardTx) Delete(bucket, key []byte) error     { return nil }
func (discardTx) Scan(bucket, prefix []byte, reverse bool, fn func(key, value []byte) (bool, error)) error {
	return nil
}

// BenchmarkRecord measures what a usage record costs: Record (an append
// under a short lock, what a metered request pays) and, amortized, its
// encoding and write in a batch (what the writer pays in the background),
// over a store that keeps nothing. Each goroutine flushes after every 1000
// records it made, so that the buffer neither fills nor drops; with 8 x
// GOMAXPROCS goroutines (parallel) the appends contend for the lock.
func BenchmarkRecord(b *testing.B) {
	rec := usage.Record{Time: time.Now(), Tenant: "acme", User: "alice", Kind: usage.KindChat, Alias: "lm-4-scout",
		Backend: "local", Status: 200, InputTokens: 12, OutputTokens: 5}
	for _, parallel := range []bool{false, true} {
		name := "serial"
		if parallel {
			name = "parallel"
		}
		b.Run(name, func(b *testing.B) {
			s := usage.New(usage.Config{Store: discardStore{}, Logger: discard, PurgeInterval: -1,
				FlushInterval: time.Hour, MaxBatch: 1000})
			defer s.Close()
			ctx := context.Background()
			work := func(n *int) {
				s.Record(rec)
				if *n++; *n%1000 == 0 {
					_ = s.Flush(ctx)
				}
			}
			b.ReportAllocs()
			if parallel {
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					n := 0
					for pb.Next() {
						work(&n)
					}
				})
			} else {
				n := 0
				for b.Loop() {
					work(&n)
				}
			}
			b.ReportMetric(float64(s.Dropped())/float64(b.N), "dropped/op")
		})
	}
}
