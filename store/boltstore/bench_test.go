package boltstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/chatgw/gateway/store"
)

// benchParallelism is the number of writers per CPU in the parallel
// benchmarks: request handlers wait on disk, not on CPU, so there are many
// more of them than CPUs.
const benchParallelism = 16

// benchWrite is the typical small write of a request: one record of a few
// hundred bytes under a new key.
func benchWrite(key uint64) func(store.Tx) error {
	value := make([]byte, 256)
	return func(tx store.Tx) error {
		return tx.Put([]byte("bench"), store.AppendUint64(nil, key), value)
	}
}

// BenchmarkBatchParallel measures small Batch writes from many goroutines:
// group commit shares one fsync among the writes of a group, so ns/op falls
// far below BenchmarkUpdateParallel's.
func BenchmarkBatchParallel(b *testing.B) {
	db := mustOpen(b)
	ctx := context.Background()
	var n atomic.Uint64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := db.Batch(ctx, benchWrite(n.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkUpdateParallel is BenchmarkBatchParallel with Update: one commit
// (one fsync) per write, one writer at a time.
func BenchmarkUpdateParallel(b *testing.B) {
	db := mustOpen(b)
	ctx := context.Background()
	var n atomic.Uint64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := db.Update(ctx, benchWrite(n.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkUpdate measures one small write after another: the latency of a
// commit, fsync included.
func BenchmarkUpdate(b *testing.B) {
	db := mustOpen(b)
	ctx := context.Background()
	var n uint64
	for b.Loop() {
		n++
		if err := db.Update(ctx, benchWrite(n)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatch measures one Batch after another, each alone in its group:
// an isolated write pays one commit and no timer.
func BenchmarkBatch(b *testing.B) {
	db := mustOpen(b)
	ctx := context.Background()
	var n uint64
	for b.Loop() {
		n++
		if err := db.Batch(ctx, benchWrite(n)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkView measures a point read.
func BenchmarkView(b *testing.B) {
	db := mustOpen(b)
	ctx := context.Background()
	if err := db.Update(ctx, benchWrite(1)); err != nil {
		b.Fatal(err)
	}
	key := store.AppendUint64(nil, 1)
	for b.Loop() {
		err := db.View(ctx, func(tx store.Tx) error {
			if tx.Get([]byte("bench"), key) == nil {
				return fmt.Errorf("key not found")
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
