package quota_test

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
)

// noon is a mid-day instant: 43200 s before the next 00:00 UTC.
var noon = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func backend(provider string, status upstream.Status) upstream.BackendInfo {
	return upstream.BackendInfo{Provider: provider, RouterAlias: "r-" + provider, Status: status}
}

func model(alias, family, kind string, backends ...upstream.BackendInfo) upstream.ModelInfo {
	return upstream.ModelInfo{Alias: alias, Family: family, Kind: kind, ContextWindow: 8192, Backends: backends}
}

// testCatalog is the built-in catalog's shape plus edge cases for
// available_fallbacks: a second cloudB-only alias, unusable and deprecated
// backends, a non-chat alias.
func testCatalog(t testing.TB) *upstream.Catalog {
	t.Helper()
	const (
		local, cloudA, cloudB = upstream.ProviderLocal, upstream.ProviderCloudA, upstream.ProviderCloudB
		ok                    = upstream.StatusAvailable
		chat                  = upstream.KindChat
	)
	cat, err := upstream.NewCatalog([]upstream.ModelInfo{
		model("lm-4-scout", "lm-4", chat, backend(local, ok), backend(cloudA, ok), backend(cloudB, ok)),
		model("lm-4-scout-local", "lm-4", chat, backend(local, ok)),
		model("lm-4-scout-cloudA", "lm-4", chat, backend(cloudA, ok)),
		model("lm-4-scout-cloudB", "lm-4", chat, backend(cloudB, ok)),
		model("lm-vision", "lm-3.2-vision", chat, backend(local, ok), backend(cloudA, ok)),
		model("lm-text-8k", "lm-3.1", chat, backend(local, ok), backend(cloudB, ok)),
		model("lm-reasoner", "lm-r1", chat, backend(cloudA, ok), backend(cloudB, ok)),
		model("lm-free", "lm-free", chat, backend(cloudB, ok)),
		model("lm-4-planned", "lm-4", chat, backend(local, upstream.StatusPlanned), backend(cloudB, ok)),
		model("lm-unconf", "lm-3.1", chat, backend(local, upstream.StatusUnconfigured), backend(cloudB, ok)),
		model("lm-old", "lm-3.1", chat, backend(cloudA, upstream.StatusDeprecated)),
		model("lm-embed", "lm-embed", upstream.KindEmbeddings, backend(local, ok)),
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// lookup returns the catalog entry of alias, failing the test when there is none.
func lookup(t *testing.T, cat *upstream.Catalog, alias string) *upstream.ModelInfo {
	t.Helper()
	m := cat.Lookup(alias)
	if m == nil {
		t.Fatalf("alias %q not in the test catalog", alias)
	}
	return m
}

// newAccountant returns an Accountant over testCatalog and a new memstore,
// with a fake clock at start.
func newAccountant(t *testing.T, start time.Time) (*quota.Accountant, *clock.Fake, *upstream.Catalog) {
	t.Helper()
	cat := testCatalog(t)
	fc := clock.NewFake(start)
	return newOver(t, memstore.New(), fc, cat), fc, cat
}

// newOver returns an Accountant over st, c and cat, logging to the test.
func newOver(t testing.TB, st store.Store, c clock.Clock, cat *upstream.Catalog) *quota.Accountant {
	t.Helper()
	return quota.New(quota.Config{Store: st, Clock: c, Catalog: cat, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
}

// usage is testkit.QuotaUsage, short.
func usage(t testing.TB, a *quota.Accountant, tenant, alias string) quota.Usage {
	t.Helper()
	return testkit.QuotaUsage(t, a, tenant, alias)
}

func tenant(id string, quotas map[string]auth.Quota) *auth.Tenant {
	return &auth.Tenant{ID: id, Quotas: quotas}
}

// countingClock counts its reads, to prove a path never looks at the time.
type countingClock struct {
	reads atomic.Int64
}

func (c *countingClock) Now() time.Time {
	c.reads.Add(1)
	return noon
}
