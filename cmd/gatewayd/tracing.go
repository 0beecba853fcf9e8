package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chatgw/gateway"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// tracerProvider is gatewayd's OpenTelemetry tracer provider, built when the
// standard variables ask for traces (docs/contract.md#93-observability:
// "Tracing follows the standard OTEL_* variables (OTLP over HTTP or gRPC);
// unset means off"): OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER=otlp. It is
// nil (no tracing) when none is set or OTEL_TRACES_EXPORTER is none. The
// protocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
// OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf (the specification's
// default); the official exporters read every other OTEL_EXPORTER_OTLP_*
// variable (headers, certificates, time-outs) from the environment
// themselves, and the resource honours OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES over service.name chatgw. Its Shutdown flushes
// the spans still batched.
func tracerProvider(ctx context.Context, lookup func(string) (string, bool)) (*sdktrace.TracerProvider, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	switch exp := strings.ToLower(get("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return nil, nil
	case "":
		if get("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return nil, nil
		}
	case "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: gatewayd exports traces with otlp only (or none)", exp)
	}
	protocol := get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = get("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp *otlptrace.Exporter
	var err error
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: gatewayd speaks http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// WithFromEnv comes last: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// win over the default service.name.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "chatgw"), attribute.String("service.version", gateway.Version)),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// withTracing is gateway.WithTracerProvider(tp), and no tracing for a nil
// tp (a nil *TracerProvider in the interface would not be nil).
func withTracing(tp *sdktrace.TracerProvider) gateway.Option {
	if tp == nil {
		return gateway.WithTracerProvider(nil)
	}
	return gateway.WithTracerProvider(tp)
}

// traceShutdownTimeout bounds the flush of the last spans at exit, so that
// an unreachable collector does not hold gatewayd up.
const traceShutdownTimeout = 5 * time.Second

// shutdownTracing flushes and stops tp (nil: nothing to do).
func shutdownTracing(tp *sdktrace.TracerProvider) error {
	if tp == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), traceShutdownTimeout)
	defer cancel()
	return tp.Shutdown(ctx)
}
