package gateway

import (
	"context"
	"strings"
	"time"

	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/metrics"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// observe puts the one observation layer around the store and the upstream
// that every family uses: usage meters, metrics and traces all hear of a
// call there. It runs after the store's optional capabilities
// (ratelimit.Provider) were taken, since the wrapper hides them, and after
// the usage Service took the bare store (its writer is not a request's).
func (g *Gateway) observe() {
	c := &g.cfg
	if m := g.metrics; m != nil {
		if s, ok := c.store.(interface{ ObserveCommits(func(calls int)) }); ok {
			s.ObserveCommits(m.GroupCommit)
			// A store passed by the embedder outlives the gateway.
			g.closers = append(g.closers, func() error { s.ObserveCommits(nil); return nil })
		}
		if s, ok := c.store.(interface{ ObserveRetries(func(op, reason string)) }); ok {
			s.ObserveRetries(func(op, reason string) { m.StoreRetry(strings.ToLower(op), reason) })
			g.closers = append(g.closers, func() error { s.ObserveRetries(nil); return nil })
		}
	}
	if g.metrics != nil || g.tracer != nil {
		c.store = observedStore{Store: c.store, m: g.metrics, tracer: g.tracer}
	}
	ou := observedUpstream{up: c.upstream, traced: g.tracer != nil}
	if p, ok := c.upstream.(upstream.Prober); ok {
		c.upstream = observedProber{observedUpstream: ou, p: p}
	} else {
		c.upstream = ou
	}
}

// observedUpstream is the Upstream every family calls, so that no family
// observes its calls itself. Around each call it notes the call in a metered
// request's usage Meter (the alias, and the provider that answered: "" when
// the call failed), tells the request's metrics of it and times the wait for
// it, in Do and in the reads of its answer (what chatgw_overhead_seconds
// leaves out), and puts a /c1 conversation id on the server span (the
// attempt spans are the Router's, upstream.WithTracerProvider).
type observedUpstream struct {
	up     upstream.Upstream
	traced bool
}

func (u observedUpstream) Do(ctx context.Context, req *upstream.Request) (*upstream.Response, error) {
	if u.traced && req.ConversationID != "" {
		trace.SpanFromContext(ctx).SetAttributes(attrConversationID.String(req.ConversationID))
	}
	rec := httpx.InfoFrom(ctx).Metrics
	var start time.Time
	if rec.On() {
		start = time.Now()
	}
	resp, err := u.up.Do(ctx, req)
	meter := httpx.MeterOf(ctx)
	if err != nil {
		meter.Call(req.Alias, "")
		if rec.On() {
			rec.UpstreamCall(req.Alias, req.Path, "", 0, time.Since(start))
		}
		return nil, err
	}
	meter.Call(req.Alias, resp.Provider)
	if rec.On() {
		rec.UpstreamCall(req.Alias, req.Path, resp.Provider, resp.Attempt, time.Since(start))
		resp.Body = timedBody{ReadCloser: resp.Body, rec: rec}
	}
	return resp, nil
}

// observedProber is observedUpstream over an Upstream that probes, for
// /readyz.
type observedProber struct {
	observedUpstream
	p upstream.Prober
}

func (u observedProber) Probe(ctx context.Context) upstream.Readiness { return u.p.Probe(ctx) }

// observedStore times the store's transactions as their callers wait for
// them (chatgw_store_transaction_duration_seconds: retries and the wait for a
// group commit included) when m is set, and starts a span for each
// transaction made inside a traced request when tracer is set (background
// work, purgers and the usage writer, makes no root spans of its own).
type observedStore struct {
	store.Store
	m      *metrics.Metrics
	tracer trace.Tracer
}

func (s observedStore) View(ctx context.Context, fn func(store.Tx) error) error {
	return s.tx(ctx, metrics.StoreView, "store.view", s.Store.View, fn)
}

func (s observedStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	return s.tx(ctx, metrics.StoreUpdate, "store.update", s.Store.Update, fn)
}

func (s observedStore) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return s.tx(ctx, metrics.StoreBatch, "store.batch", s.Store.Batch, fn)
}

func (s observedStore) tx(ctx context.Context, kind, name string, tx func(context.Context, func(store.Tx) error) error, fn func(store.Tx) error) error {
	var span trace.Span
	if s.tracer != nil && trace.SpanFromContext(ctx).IsRecording() {
		ctx, span = s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal))
	}
	start := time.Now()
	err := tx(ctx, fn)
	if s.m != nil {
		s.m.StoreTx(kind, time.Since(start))
	}
	if span != nil {
		if err != nil {
			span.SetAttributes(semconv.ErrorTypeKey.String("store_error"))
			span.SetStatus(codes.Error, "store_error")
		}
		span.End()
	}
	return err
}
