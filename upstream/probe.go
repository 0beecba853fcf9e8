package upstream

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// The keys of Readiness.Probes.
const (
	ProbeRouter       = "router"
	ProbeLocalBackend = "local_backend"
	ProbeCloudA       = "cloudA"
	ProbeCloudB       = "cloudB"
)

// Probe checks the external router (when Backends.RouterURL is set) and the local,
// cloudA and cloudB backends in parallel, each with a GET <base URL>/models bounded
// by the probe time-out (1 s), so Probe returns within about that time. Any HTTP
// answer, whatever its status, counts as reachable; no API key is sent.
//
// Router is available when the external router answered or, without one, when at
// least one configured backend answered; LocalBackend is available when the local
// backend answered; both are unconfigured otherwise. Probes has the keys router,
// local_backend, cloudA and cloudB; errors never name a host ("not configured",
// "connection refused", "timeout", "no backend reachable", ...). For the built-in
// router, the router entry's ms is the slowest backend probe.
func (r *Router) Probe(ctx context.Context) Readiness {
	targets := map[string]string{
		ProbeLocalBackend: r.backends.LocalURL,
		ProbeCloudA:       r.backends.CloudAURL,
		ProbeCloudB:       r.backends.CloudBURL,
		ProbeRouter:       r.backends.RouterURL,
	}
	probes := make(map[string]ProbeResult, len(targets))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for key, base := range targets {
		if base == "" && key != ProbeRouter {
			probes[key] = ProbeResult{Error: "not configured"}
		}
	}
	for key, base := range targets {
		if base == "" {
			continue
		}
		wg.Go(func() {
			res := r.probeOne(ctx, base)
			mu.Lock()
			probes[key] = res
			mu.Unlock()
		})
	}
	wg.Wait()

	if r.backends.RouterURL == "" {
		probes[ProbeRouter] = builtinRouterProbe(probes)
	}
	return Readiness{
		Router:       statusOf(probes[ProbeRouter]),
		LocalBackend: statusOf(probes[ProbeLocalBackend]),
		Probes:       probes,
	}
}

// probeOne sends GET base/models with the probe time-out.
func (r *Router) probeOne(ctx context.Context, base string) ProbeResult {
	ctx, cancel := context.WithTimeout(ctx, r.probeTimeout)
	defer cancel()
	start := time.Now()
	res := ProbeResult{Configured: true}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, joinURL(base, "/models"), nil)
	if err != nil {
		res.Error = "invalid URL"
		return res
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "chatgw-probe")
	resp, err := r.client.Do(req)
	res.MS = time.Since(start).Milliseconds()
	if err != nil {
		res.Error = connectReason(err)
		return res
	}
	resp.Body.Close()
	res.Reachable = true
	return res
}

// builtinRouterProbe is the router entry without an external router: reachable
// when at least one configured backend answered.
func builtinRouterProbe(probes map[string]ProbeResult) ProbeResult {
	res := ProbeResult{Configured: true}
	configured := false
	for _, key := range []string{ProbeLocalBackend, ProbeCloudA, ProbeCloudB} {
		p := probes[key]
		configured = configured || p.Configured
		res.Reachable = res.Reachable || p.Reachable
		res.MS = max(res.MS, p.MS)
	}
	switch {
	case !configured:
		res.Error = "no backend configured"
	case !res.Reachable:
		res.Error = "no backend reachable"
	}
	return res
}

func statusOf(p ProbeResult) Status {
	if p.Reachable {
		return StatusAvailable
	}
	return StatusUnconfigured
}
