package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/chatgw/gateway"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsRegistry is the registry of gatewayd's metrics, with the Go
// runtime's and the process's collectors beside the gateway's; nil when
// GATEWAY_METRICS_ADDR is unset ("unset: no metrics listener",
// docs/contract.md#93-observability).
func metricsRegistry(cfg *config) *prometheus.Registry {
	if cfg.MetricsAddr == "" {
		return nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// withMetrics is gateway.WithMetrics(reg), and no metrics for a nil reg (a
// nil *Registry in the interface would not be nil).
func withMetrics(reg *prometheus.Registry) gateway.Option {
	if reg == nil {
		return gateway.WithMetrics(nil)
	}
	return gateway.WithMetrics(reg)
}

// serveMetrics serves reg at /metrics on GATEWAY_METRICS_ADDR, its own
// listener, "without a bearer": the address is the operator's to keep
// private. It returns the stop that shuts the server down (the caller runs
// it after the main server drained), and fails when the address cannot be
// listened on, so that gatewayd does not start without the metrics asked
// for. A nil reg serves nothing.
func serveMetrics(cfg *config, reg *prometheus.Registry, log *slog.Logger, stderr io.Writer) (stop func(), err error) {
	if reg == nil {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("GATEWAY_METRICS_ADDR: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		Registry: reg, // promhttp_metric_handler_errors_total
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError),
	}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: cfg.HeaderTimeout, IdleTimeout: cfg.IdleTimeout}
	go srv.Serve(ln)
	url := "http://" + ln.Addr().String() + "/metrics"
	log.Info("gatewayd serving metrics", "metrics", url)
	fmt.Fprintf(stderr, "chatgw metrics on %s\n", url)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
	}, nil
}
