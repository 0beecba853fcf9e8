package usage_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/usage"
)

var discard = slog.New(slog.DiscardHandler)

// t0 is the fake clock's start: noon of 2025-03-10 UTC.
var t0 = time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)

// env is a usage Service over a memstore behind the route the root wires.
// Its writer only writes when a batch is full or a test calls Flush (its
// interval is an hour), and its purger runs only when a test asks.
type env struct {
	testkit.Client
	st  *counting
	clk *clock.Fake
	svc *usage.Service
}

func newEnv(t *testing.T, cfg usage.Config) *env {
	t.Helper()
	e := &env{Client: testkit.Client{T: t}, st: &counting{Store: memstore.New()}, clk: clock.NewFake(t0)}
	t.Cleanup(func() { e.st.Close() })
	e.svc = e.start(t, cfg)
	e.H = testkit.Router(t, map[string]http.HandlerFunc{"GET /v1/usage": e.svc.List})
	return e
}

// start returns a Service over e's store and clock with cfg's settings,
// closed (before the store) when t ends.
func (e *env) start(t *testing.T, cfg usage.Config) *usage.Service {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = e.st
	}
	cfg.Clock = e.clk
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = time.Hour
	}
	if cfg.PurgeInterval == 0 {
		cfg.PurgeInterval = -1
	}
	if cfg.Logger == nil {
		cfg.Logger = discard
	}
	s := usage.New(cfg)
	t.Cleanup(func() { s.Close() })
	return s
}

// record buffers recs and writes them at once.
func (e *env) record(recs ...usage.Record) {
	e.T.Helper()
	for _, r := range recs {
		e.svc.Record(r)
	}
	if err := e.svc.Flush(context.Background()); err != nil {
		e.T.Fatalf("Flush: %v", err)
	}
}

// counting is a store that counts its write transactions (not the runs of
// their callbacks, which memstore makes twice).
type counting struct {
	*memstore.Store
	updates atomic.Int64
}

func (c *counting) Update(ctx context.Context, fn func(store.Tx) error) error {
	c.updates.Add(1)
	return c.Store.Update(ctx, fn)
}

// Principals of tenant acme (and of globex, another tenant).
var (
	acmeTenant   = &auth.Tenant{ID: "acme"}
	globexTenant = &auth.Tenant{ID: "globex"}
	acmeAdmin    = &auth.Principal{TokenID: "tok-admin", Tenant: acmeTenant, Role: auth.RoleTenantAdmin}
	acmeMember   = &auth.Principal{TokenID: "tok-member", Tenant: acmeTenant, Role: auth.RoleMember}
	globexAdmin  = &auth.Principal{TokenID: "tok-globex", Tenant: globexTenant, Role: auth.RoleTenantAdmin}
)

// get is GET /v1/usage?query by p with GW-User-Id user ("" for none).
func get(p *auth.Principal, user, query string) testkit.Request {
	target := "/v1/usage"
	if query != "" {
		target += "?" + query
	}
	return testkit.Request{Method: "GET", Target: target, User: user, Principal: p}
}
