package upstream_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

func TestProbe(t *testing.T) {
	t.Parallel()
	notConfigured := upstream.ProbeResult{Error: "not configured"}
	up := upstream.ProbeResult{Configured: true, Reachable: true}
	tests := []struct {
		name   string
		router backend // used as GATEWAY_ROUTER_URL unless skip
		useRtr bool
		local  *backend
		cloudA *backend
		cloudB *backend
		// probe is the WithProbeTimeout of a row where nothing answers, so
		// that it waits little; 0 keeps the default (1 s, internal_test.go).
		probe time.Duration
		want  upstream.Readiness
	}{
		{name: "local up, cloudA refused, cloudB unset", local: &backend{}, cloudA: &backend{refused: true},
			want: upstream.Readiness{Router: upstream.StatusAvailable, LocalBackend: upstream.StatusAvailable,
				Probes: map[string]upstream.ProbeResult{"router": up, "local_backend": up,
					"cloudA": {Configured: true, Error: "connection refused"}, "cloudB": notConfigured}}},
		{name: "any HTTP answer counts", local: &backend{reply: upstreamtest.Reply{Status: 500}},
			cloudB: &backend{reply: upstreamtest.Reply{Status: 401}},
			want: upstream.Readiness{Router: upstream.StatusAvailable, LocalBackend: upstream.StatusAvailable,
				Probes: map[string]upstream.ProbeResult{"router": up, "local_backend": up, "cloudA": notConfigured, "cloudB": up}}},
		{name: "local down, cloudA up", local: &backend{refused: true}, cloudA: &backend{},
			want: upstream.Readiness{Router: upstream.StatusAvailable, LocalBackend: upstream.StatusUnconfigured,
				Probes: map[string]upstream.ProbeResult{"router": up,
					"local_backend": {Configured: true, Error: "connection refused"}, "cloudA": up, "cloudB": notConfigured}}},
		{name: "nothing configured",
			want: upstream.Readiness{Router: upstream.StatusUnconfigured, LocalBackend: upstream.StatusUnconfigured,
				Probes: map[string]upstream.ProbeResult{"router": {Configured: true, Error: "no backend configured"},
					"local_backend": notConfigured, "cloudA": notConfigured, "cloudB": notConfigured}}},
		{name: "hanging local times out", local: &backend{reply: upstreamtest.Reply{Hang: true}}, probe: silentTimeout,
			want: upstream.Readiness{Router: upstream.StatusUnconfigured, LocalBackend: upstream.StatusUnconfigured,
				Probes: map[string]upstream.ProbeResult{"router": {Configured: true, Error: "no backend reachable"},
					"local_backend": {Configured: true, Error: "timeout"}, "cloudA": notConfigured, "cloudB": notConfigured}}},
		{name: "external router up", useRtr: true, router: backend{}, local: &backend{refused: true},
			want: upstream.Readiness{Router: upstream.StatusAvailable, LocalBackend: upstream.StatusUnconfigured,
				Probes: map[string]upstream.ProbeResult{"router": up,
					"local_backend": {Configured: true, Error: "connection refused"}, "cloudA": notConfigured, "cloudB": notConfigured}}},
		{name: "external router down, local up", useRtr: true, router: backend{refused: true}, local: &backend{},
			want: upstream.Readiness{Router: upstream.StatusUnconfigured, LocalBackend: upstream.StatusAvailable,
				Probes: map[string]upstream.ProbeResult{"router": {Configured: true, Error: "connection refused"},
					"local_backend": up, "cloudA": notConfigured, "cloudB": notConfigured}}},
		{name: "external router hangs", useRtr: true, router: backend{reply: upstreamtest.Reply{Hang: true}}, probe: silentTimeout,
			want: upstream.Readiness{Router: upstream.StatusUnconfigured, LocalBackend: upstream.StatusUnconfigured,
				Probes: map[string]upstream.ProbeResult{"router": {Configured: true, Error: "timeout"},
					"local_backend": notConfigured, "cloudA": notConfigured, "cloudB": notConfigured}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b upstream.Backends
			var fakes []*upstreamtest.Server
			url := func(be *backend) string {
				if be == nil {
					return ""
				}
				u, s := be.start(t)
				if s != nil {
					fakes = append(fakes, s)
				}
				return u
			}
			b.LocalURL, b.CloudAURL, b.CloudBURL = url(tt.local), url(tt.cloudA), url(tt.cloudB)
			if tt.useRtr {
				b.RouterURL = url(&tt.router)
			}
			var opts []upstream.Option
			if tt.probe > 0 {
				opts = append(opts, upstream.WithProbeTimeout(tt.probe))
			}
			r, _ := newRouter(t, b, opts...)
			var got upstream.Readiness
			within(t, 2*time.Second, func() { got = r.Probe(t.Context()) })
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(upstream.ProbeResult{}, "MS")); diff != "" {
				t.Errorf("Probe() mismatch (-want +got):\n%s", diff)
			}
			for _, f := range fakes {
				for _, c := range f.Calls() {
					if c.Method != "GET" || c.Path != "/v1/models" || c.Header.Get("Authorization") != "" {
						t.Errorf("probe sent %s %s (Authorization %q), want GET /v1/models without a key",
							c.Method, c.Path, c.Header.Get("Authorization"))
					}
				}
			}
		})
	}
}

func TestProbeTimeoutOption(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Latency: 5 * time.Second}))
	r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL}, upstream.WithProbeTimeout(100*time.Millisecond))
	var got upstream.Readiness
	within(t, 900*time.Millisecond, func() { got = r.Probe(t.Context()) })
	if p := got.Probes["local_backend"]; p.Reachable || p.Error != "timeout" || p.MS < 90 {
		t.Errorf("local probe = %+v, want a timeout after about 100 ms", p)
	}
}
