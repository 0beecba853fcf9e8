package gateway

import (
	"fmt"
	"io"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/metrics"
	"github.com/chatgw/gateway/upstream"
	"github.com/prometheus/client_golang/prometheus"
)

// metricsConfig is what the metrics options set.
type metricsConfig struct {
	reg      prometheus.Registerer // nil: no metrics
	noTenant bool                  // leave the tenant label out
}

// WithMetrics registers the gateway's Prometheus metrics with reg: requests
// by route and error code, the OpenTelemetry GenAI server and client
// metrics, the gateway's overhead, fallbacks, streams, rate-limit and quota
// rejections, store transactions, content guard decisions and build info
// (the README's "Observing chatgw" lists them). The gateway serves no
// /metrics itself: serve reg's gatherer with promhttp where you like.
// Default nil: no metrics, and nothing measured. New fails when reg refuses
// a collector, as a second gateway on the same registry does: give each its
// own, or wrap reg with prometheus.WrapRegistererWith and a distinct label
// for each gateway.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(c *config) error { c.metrics.reg = reg; return nil }
}

// WithMetricsTenantLabel sets whether the metrics carry a tenant label where
// the token catalog bounds the tenants (requests, tokens, rate-limit, quota
// and content guard counters; never the histograms). Default true. Turn it
// off when the token catalog holds so many tenants that a series per tenant
// costs too much.
func WithMetricsTenantLabel(on bool) Option {
	return func(c *config) error { c.metrics.noTenant = !on; return nil }
}

// wireMetrics creates the collectors when WithMetrics gave a registry, with
// the catalog's aliases and providers as the vocabularies of their labels.
func (g *Gateway) wireMetrics() error {
	c := &g.cfg
	if c.metrics.reg == nil {
		return nil
	}
	var aliases, providers []string
	for _, m := range c.catalog.Models {
		aliases = append(aliases, m.Alias)
		for _, b := range m.Backends {
			providers = append(providers, b.Provider)
		}
	}
	m, err := metrics.New(metrics.Config{Registerer: c.metrics.reg, Aliases: aliases, Providers: providers,
		TenantLabel: !c.metrics.noTenant, Version: Version})
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	g.metrics = m
	return nil
}

// attemptObserver is what the default upstream router reports its attempts
// to: nil without metrics.
func (g *Gateway) attemptObserver() upstream.Observer {
	if g.metrics == nil {
		return nil
	}
	return g.metrics
}

// quotaRefused is the quota Accountant's Refused: nil without metrics.
func (g *Gateway) quotaRefused() func(tenantID, alias string, code errcat.Code) {
	if g.metrics == nil {
		return nil
	}
	return g.metrics.QuotaRefused
}

// operationOf is the gen_ai.operation.name of the requests of the route
// path, "" for a route that calls no model.
func operationOf(path string) string {
	switch path {
	case "/v1/chat/completions", "/v1/messages", "/c1/chat", "/a1/agents/:name/sessions/:sid/compact":
		return metrics.OpChat
	case "/a1/agents/:name/chat", "/a1/agents/:name/sessions/:sid/messages":
		return metrics.OpInvokeAgent
	case "/v1/embeddings":
		return metrics.OpEmbeddings
	case "/v1/images/generations", "/v1/audio/transcriptions", "/v1/audio/translations":
		return metrics.OpGenerateContent
	}
	return ""
}

// timedBody adds the time its Reads block to the request's wait on the
// upstream.
type timedBody struct {
	io.ReadCloser
	rec *metrics.Request
}

func (b timedBody) Read(p []byte) (int, error) {
	start := time.Now()
	n, err := b.ReadCloser.Read(p)
	b.rec.AddWait(time.Since(start))
	return n, err
}
