package quota_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/boltstore"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/store/pgstore"
)

// BenchmarkAdmitSettle measures one admission and its Settle (two
// transactions) on memstore, on a bbolt file and on PostgreSQL (skipped
// without it, see internal/pgtest), by one goroutine and by
// 8 x GOMAXPROCS goroutines (requests in flight at once) of one tenant (one
// counter: the worst contention).
func BenchmarkAdmitSettle(b *testing.B) {
	var cluster *pgtest.Cluster // started by the first pgstore benchmark
	stores := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"memstore", func(*testing.B) store.Store { return memstore.New() }},
		{"boltstore", func(b *testing.B) store.Store {
			db, err := boltstore.Open(filepath.Join(b.TempDir(), "gateway.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			return db
		}},
		{"pgstore", func(sub *testing.B) store.Store {
			if cluster == nil {
				cluster = pgtest.New(b)
			}
			db, err := pgstore.Open(context.Background(), cluster.NewDatabase(sub))
			if err != nil {
				sub.Fatal(err)
			}
			sub.Cleanup(func() { db.Close() })
			return db
		}},
	}
	for _, st := range stores {
		for _, parallel := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/parallel=%t", st.name, parallel), func(b *testing.B) {
				cat := testCatalog(b)
				a := quota.New(quota.Config{Store: st.open(b), Clock: clock.Wall{}, Catalog: cat})
				m := cat.Lookup("lm-4-scout")
				acme := tenant("acme", map[string]auth.Quota{m.Alias: {TokensPerDay: 1 << 60}})
				ctx := b.Context()
				once := func() {
					tk, err := a.Admit(ctx, acme, m, 4096)
					if err != nil {
						b.Error(err)
						return
					}
					tk.Settle(ctx, 100)
				}
				b.ReportAllocs()
				if !parallel {
					for b.Loop() {
						once()
					}
					return
				}
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						once()
					}
				})
			})
		}
	}
}
