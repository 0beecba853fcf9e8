package upstream

import (
	"context"
	"sync"
	"time"

	"github.com/chatgw/gateway/clock"
)

// DefaultHealthMaxAge is how old the latest probe may be before Health.Catalog
// starts another one in the background.
const DefaultHealthMaxAge = 30 * time.Second

// Health keeps the latest probe of the backends, so that GET /v1/info shows
// the statuses GET /readyz found instead of what the configuration alone
// says: both read this one result. Probe (readyz) probes now and records
// what it found; Catalog (info) never probes in the request: it answers from
// the latest result and, when that is older than the maximum age, starts
// one probe in the background for the next caller. A Health is safe for
// concurrent use; Close waits for a background probe.
type Health struct {
	p        Prober
	cat      *Catalog // as the catalog file says, base_url_env included
	backends Backends
	clock    clock.Clock
	maxAge   time.Duration

	ctx    context.Context // ends background probes on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	view     *Catalog      // cat with the statuses of the latest probe
	at       time.Time     // when the latest probe ended; zero before the first
	inflight chan struct{} // closed when the background probe ends; nil when none runs
}

// NewHealth returns the Health of the backends b that p probes, for cat (the
// catalog as its file says, not a WithStatus copy). clk dates the probes (nil
// is the wall clock); maxAge <= 0 means DefaultHealthMaxAge.
func NewHealth(p Prober, cat *Catalog, b Backends, clk clock.Clock, maxAge time.Duration) *Health {
	if clk == nil {
		clk = clock.Wall{}
	}
	if maxAge <= 0 {
		maxAge = DefaultHealthMaxAge
	}
	h := &Health{p: p, cat: cat.Clone(), backends: b, clock: clk, maxAge: maxAge}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.view = h.cat.withStatus(b, nil)
	return h
}

// Probe probes the backends now (Prober.Probe), records the result for
// Catalog and returns it.
func (h *Health) Probe(ctx context.Context) Readiness {
	rd := h.p.Probe(ctx)
	h.record(rd)
	return rd
}

// Catalog returns the catalog as GET /v1/info shows it: the statuses of
// Catalog.WithStatus, and a backend that the latest probe found unreachable
// unconfigured, as GET /readyz reports it ("a backend that is not configured
// or did not answer within 1 s gives unconfigured"). When the latest probe is
// older than the maximum age, one probe starts in the background; only
// before the very first probe does Catalog wait for it (bounded by the probe
// time-out, ctx or Close). The result must not be modified.
func (h *Health) Catalog(ctx context.Context) *Catalog {
	h.mu.Lock()
	first := h.at.IsZero()
	var wait chan struct{}
	if first || h.clock.Now().Sub(h.at) >= h.maxAge {
		wait = h.refreshLocked()
	}
	h.mu.Unlock()
	if first && wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.view
}

// refreshLocked starts a background probe unless one runs (or Close was
// called) and returns the channel closed when it ends. Call with mu held.
func (h *Health) refreshLocked() chan struct{} {
	if h.inflight != nil || h.ctx.Err() != nil {
		return h.inflight
	}
	done := make(chan struct{})
	h.inflight = done
	h.wg.Go(func() {
		defer close(done)
		rd := h.p.Probe(h.ctx)
		h.mu.Lock()
		h.inflight = nil
		h.mu.Unlock()
		if h.ctx.Err() == nil {
			h.record(rd)
		}
	})
	return done
}

// record makes rd the latest probe.
func (h *Health) record(rd Readiness) {
	view := h.cat.withStatus(h.backends, &rd)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.view, h.at = view, h.clock.Now()
}

// Close stops a background probe and waits for it. Probe still works.
func (h *Health) Close() error {
	h.cancel()
	h.wg.Wait()
	return nil
}

// probeKey is the key of Readiness.Probes that speaks for a backend using
// provider's URL with b: the external router when there is one.
func probeKey(provider string, b Backends) string {
	if b.RouterURL != "" {
		return ProbeRouter
	}
	switch provider {
	case ProviderLocal:
		return ProbeLocalBackend
	case ProviderCloudA:
		return ProbeCloudA
	case ProviderCloudB:
		return ProbeCloudB
	}
	return ""
}
