package upstream_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// switchProber reports the local backend reachable or not, as the test
// says, and counts its probes.
type switchProber struct {
	mu     sync.Mutex
	up     bool
	probes int
}

func (p *switchProber) set(up bool) {
	p.mu.Lock()
	p.up = up
	p.mu.Unlock()
}

func (p *switchProber) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.probes
}

func (p *switchProber) Probe(context.Context) upstream.Readiness {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probes++
	local := upstream.ProbeResult{Configured: true, Reachable: p.up}
	return upstream.Readiness{Probes: map[string]upstream.ProbeResult{
		upstream.ProbeLocalBackend: local, upstream.ProbeRouter: local,
		upstream.ProbeCloudA: {Configured: true, Reachable: true}, upstream.ProbeCloudB: {Error: "not configured"},
	}}
}

// statuses is the status of each backend of alias.
func statuses(c *upstream.Catalog, alias string) []upstream.Status {
	var out []upstream.Status
	for _, b := range c.Lookup(alias).Backends {
		out = append(out, b.Status)
	}
	return out
}

// TestHealth: /v1/info's statuses (Catalog) follow the latest probe, which
// /readyz's Probe refreshes at once and Catalog refreshes in the
// background once it is older than the maximum age; only the first Catalog
// waits for a probe.
func TestHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cat, _ := upstream.DefaultCatalog()
		clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		p := &switchProber{up: true}
		h := upstream.NewHealth(p, cat, upstream.Backends{LocalURL: "http://l/v1", CloudAURL: "http://a/v1"}, clk, time.Minute)
		defer h.Close()
		A, U := upstream.StatusAvailable, upstream.StatusUnconfigured
		steps := []struct {
			name string
			do   func()
			want []upstream.Status // lm-4-scout: local, cloudA, cloudB
		}{
			{"first info waits for a probe", func() {}, []upstream.Status{A, A, U}},
			{"backend down: info keeps the latest probe", func() { p.set(false) }, []upstream.Status{A, A, U}},
			{"readyz finds it down", func() { h.Probe(t.Context()) }, []upstream.Status{U, A, U}},
			{"back up: readyz finds it", func() { p.set(true); h.Probe(t.Context()) }, []upstream.Status{A, A, U}},
			{"down, past the maximum age: the info after next sees it", func() {
				p.set(false)
				clk.Advance(time.Minute)
				h.Catalog(t.Context()) // answers the old result, starts a probe
				synctest.Wait()
			}, []upstream.Status{U, A, U}},
		}
		for _, s := range steps {
			s.do()
			if diff := cmp.Diff(s.want, statuses(h.Catalog(t.Context()), "lm-4-scout")); diff != "" {
				t.Errorf("%s: statuses mismatch (-want +got):\n%s", s.name, diff)
			}
		}
		if got := p.count(); got != 4 {
			t.Errorf("%d probes, want 4: the first info's, two readyz, one in the background", got)
		}
	})
}
