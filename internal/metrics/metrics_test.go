package metrics_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/metrics"
	"github.com/chatgw/gateway/upstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// newMetrics returns Metrics over a fresh registry with the built-in
// catalog's shape.
func newMetrics(t testing.TB, tenantLabel bool) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(metrics.Config{Registerer: reg, TenantLabel: tenantLabel, Version: "0.1.0",
		Aliases:   []string{"lm-4-scout", "lm-4-scout-local", "lm-embed"},
		Providers: []string{"local", "cloudA", "cloudB"}})
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// compare checks the families names of reg against want, in the text
// exposition format.
func compare(t *testing.T, reg *prometheus.Registry, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

func TestRequests(t *testing.T) {
	m, reg := newMetrics(t, true)
	models := m.Route("GET", "/v1/models", "")
	for _, tc := range []struct {
		route  *metrics.Route
		method string
		status int
		err    *errcat.Error
		tenant string
	}{
		{models, "GET", 200, nil, "acme"},
		{models, "GET", 200, nil, "acme"},
		{models, "GET", 401, errcat.New(errcat.MissingAuthorization, "", ""), ""},
		{models, "GET", 500, nil, "acme"},                            // an error answer without a code: the alarm
		{models, "GET", 500, &errcat.Error{Code: "made_up"}, "acme"}, // an uncatalogued code
		{nil, "BREW", 404, errcat.New(errcat.RouteNotFound, "", ""), ""},
		{nil, "DELETE", 404, errcat.New(errcat.RouteNotFound, "", ""), ""},
	} {
		r := m.Begin(time.Now())
		r.SetRoute(tc.route)
		r.End(tc.method, tc.status, tc.err, tc.tenant)
	}
	compare(t, reg, `
# HELP chatgw_requests_total Requests answered, by route template, method, status and error catalog code ("" for none; _OTHER for an error answer without a catalogued code, an alarm).
# TYPE chatgw_requests_total counter
chatgw_requests_total{error_type="",http_request_method="GET",http_response_status_code="200",http_route="/v1/models",tenant="acme"} 2
chatgw_requests_total{error_type="missing_authorization",http_request_method="GET",http_response_status_code="401",http_route="/v1/models",tenant=""} 1
chatgw_requests_total{error_type="_OTHER",http_request_method="GET",http_response_status_code="500",http_route="/v1/models",tenant="acme"} 2
chatgw_requests_total{error_type="route_not_found",http_request_method="_OTHER",http_response_status_code="404",http_route="_OTHER",tenant=""} 1
chatgw_requests_total{error_type="route_not_found",http_request_method="DELETE",http_response_status_code="404",http_route="_OTHER",tenant=""} 1
`, "chatgw_requests_total")
	if n, err := testutil.GatherAndCount(reg, "http_server_request_duration_seconds"); err != nil || n != 5 {
		t.Errorf("http_server_request_duration_seconds has %d series (%v), want 5", n, err)
	}
}

func TestTenantLabelOff(t *testing.T) {
	m, reg := newMetrics(t, false)
	r := m.Begin(time.Now())
	r.SetRoute(m.Route("GET", "/v1/models", ""))
	r.End("GET", 429, errcat.New(errcat.RateLimitExceeded, "", ""), "acme")
	m.RateLimited("acme", metrics.RateExceeded)
	m.QuotaRefused("acme", "lm-4-scout", errcat.ModelQuotaExhausted)
	compare(t, reg, `
# HELP chatgw_requests_total Requests answered, by route template, method, status and error catalog code ("" for none; _OTHER for an error answer without a catalogued code, an alarm).
# TYPE chatgw_requests_total counter
chatgw_requests_total{error_type="rate_limit_exceeded",http_request_method="GET",http_response_status_code="429",http_route="/v1/models"} 1
# HELP chatgw_rate_limit_rejections_total Requests refused by the per-token rate limit: exceeded (429) or limiter_unavailable (the limiter failed, 500 storage_error).
# TYPE chatgw_rate_limit_rejections_total counter
chatgw_rate_limit_rejections_total{kind="exceeded"} 1
# HELP chatgw_quota_rejections_total Requests refused by a daily quota, by alias and kind (the error code).
# TYPE chatgw_quota_rejections_total counter
chatgw_quota_rejections_total{gen_ai_request_model="lm-4-scout",kind="model_quota_exhausted"} 1
`, "chatgw_requests_total", "chatgw_rate_limit_rejections_total", "chatgw_quota_rejections_total")
}

// TestStream: a complete stream of a chat route records the server
// histograms, the usage, the ending and the overhead, and leaves no stream
// in flight.
func TestStream(t *testing.T) {
	m, reg := newMetrics(t, true)
	rt := m.Route("POST", "/v1/chat/completions", metrics.OpChat)
	r := m.Begin(time.Now().Add(-100 * time.Millisecond))
	r.SetRoute(rt)
	r.UpstreamCall("lm-4-scout", "/chat/completions", "cloudA", 2, 60*time.Millisecond)
	r.StreamStarts()
	if got := testutil.ToFloat64(gauge(t, reg)); got != 1 {
		t.Errorf("streams in flight = %v, want 1", got)
	}
	r.AddWait(20 * time.Millisecond) // the first chunk's read
	r.FirstChunk()
	r.AddWait(time.Second) // the rest of the stream: after the answer started
	r.Usage(json.RawMessage(`{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}`))
	r.StreamEnds(metrics.StreamDone)
	r.End("POST", 200, nil, "acme")

	compare(t, reg, `
# HELP chatgw_stream_endings_total Streamed answers relayed, by route and how they ended.
# TYPE chatgw_stream_endings_total counter
chatgw_stream_endings_total{http_route="/v1/chat/completions",outcome="done"} 1
# HELP chatgw_streams_in_flight Streamed answers being relayed now.
# TYPE chatgw_streams_in_flight gauge
chatgw_streams_in_flight{http_route="/v1/chat/completions"} 0
# HELP chatgw_tokens_total Tokens the upstream reported for the answers relayed, by tenant, alias, provider and token type.
# TYPE chatgw_tokens_total counter
chatgw_tokens_total{gen_ai_provider_name="cloudA",gen_ai_request_model="lm-4-scout",gen_ai_token_type="input",tenant="acme"} 12
chatgw_tokens_total{gen_ai_provider_name="cloudA",gen_ai_request_model="lm-4-scout",gen_ai_token_type="output",tenant="acme"} 5
`, "chatgw_stream_endings_total", "chatgw_streams_in_flight", "chatgw_tokens_total")

	for name, want := range map[string]int{
		"gen_ai_server_request_duration_seconds":      1,
		"gen_ai_server_time_to_first_token_seconds":   1,
		"gen_ai_server_time_per_output_token_seconds": 1,
		"gen_ai_client_token_usage":                   2,
		"chatgw_overhead_seconds":                     1,
	} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != want {
			t.Errorf("%s has %d series (%v), want %d", name, n, err, want)
		}
	}
	h := histogram(t, reg, "chatgw_overhead_seconds", map[string]string{"http_route": "/v1/chat/completions", "stream": "true"})
	// 100 ms to the first chunk, 80 ms of it waiting on the upstream: about
	// 20 ms of overhead, and nothing of the wait after the answer started.
	if h.GetSampleCount() != 1 || h.GetSampleSum() < 0.019 || h.GetSampleSum() > 0.05 {
		t.Errorf("overhead: %d samples, sum %v s, want 1 of about 0.02", h.GetSampleCount(), h.GetSampleSum())
	}
	ttft := histogram(t, reg, "gen_ai_server_time_to_first_token_seconds", map[string]string{
		"gen_ai_operation_name": "chat", "gen_ai_request_model": "lm-4-scout", "gen_ai_provider_name": "cloudA"})
	if s := ttft.GetSampleSum(); s < 0.1 || s > 0.2 {
		t.Errorf("time to first token %v s, want about 0.1", s)
	}
	usage := histogram(t, reg, "gen_ai_client_token_usage", map[string]string{"gen_ai_token_type": "input", "attempt": "2"})
	if usage.GetSampleSum() != 12 {
		t.Errorf("input token usage %v, want 12", usage.GetSampleSum())
	}
}

// TestFailedStream: a stream cut by the upstream records its ending and the
// request's error, but no time to first token (successful responses only).
func TestFailedStream(t *testing.T) {
	m, reg := newMetrics(t, true)
	r := m.Begin(time.Now())
	r.SetRoute(m.Route("POST", "/c1/chat", metrics.OpChat))
	r.UpstreamCall("lm-4-scout-local", "/chat/completions", "local", 1, time.Millisecond)
	r.StreamStarts()
	r.FirstChunk()
	r.StreamEnds(metrics.StreamUpstreamErr)
	r.End("POST", 200, errcat.New(errcat.UpstreamError, "", ""), "acme")
	compare(t, reg, `
# HELP chatgw_stream_endings_total Streamed answers relayed, by route and how they ended.
# TYPE chatgw_stream_endings_total counter
chatgw_stream_endings_total{http_route="/c1/chat",outcome="upstream_error"} 1
`, "chatgw_stream_endings_total")
	if n, _ := testutil.GatherAndCount(reg, "gen_ai_server_time_to_first_token_seconds"); n != 0 {
		t.Errorf("%d time-to-first-token series, want none: the stream failed", n)
	}
	d := histogram(t, reg, "gen_ai_server_request_duration_seconds", map[string]string{"error_type": "upstream_error",
		"gen_ai_provider_name": "local", "gen_ai_request_model": "lm-4-scout-local"})
	if d.GetSampleCount() != 1 {
		t.Errorf("request duration of the failed stream not recorded with its error")
	}
}

// TestAttempts: attempts of a fallback, their error types, the fallbacks
// they caused; an alias or provider outside the catalog is _OTHER.
func TestAttempts(t *testing.T) {
	m, reg := newMetrics(t, true)
	ctx := context.Background()
	for _, a := range []upstream.Attempt{
		{Alias: "lm-4-scout", Path: "/chat/completions", Position: 1, Provider: "local", Outcome: upstream.OutcomeConnectError, Duration: time.Millisecond, Next: "cloudA"},
		{Alias: "lm-4-scout", Path: "/chat/completions", Position: 2, Provider: "cloudA", Outcome: upstream.OutcomeStatus, Status: 503, Duration: time.Millisecond, Next: "cloudB"},
		{Alias: "lm-4-scout", Path: "/chat/completions", Position: 3, Provider: "cloudB", Outcome: upstream.OutcomeOK, Status: 200, Duration: time.Second},
		{Alias: "lm-4-scout", Path: "/chat/completions", Position: 1, Provider: "local", Outcome: upstream.OutcomeConnectError, Duration: time.Millisecond, Next: "cloudA"},
		{Alias: "x' OR 1=1", Path: "/weird", Position: 99, Provider: "elsewhere", Outcome: "odd", Duration: time.Millisecond, Next: "nowhere"},
	} {
		m.ObserveAttempt(ctx, a)
	}
	compare(t, reg, `
# HELP chatgw_fallbacks_total Upstream fallbacks: an attempt on the from provider failed for reason and the to provider was tried next.
# TYPE chatgw_fallbacks_total counter
chatgw_fallbacks_total{from="local",reason="connect_error",to="cloudA"} 2
chatgw_fallbacks_total{from="cloudA",reason="503",to="cloudB"} 1
chatgw_fallbacks_total{from="_OTHER",reason="_OTHER",to="_OTHER"} 1
`, "chatgw_fallbacks_total")
	for labels, want := range map[[5]string]uint64{
		{"chat", "lm-4-scout", "local", "connect_error", "1"}: 2,
		{"chat", "lm-4-scout", "cloudA", "503", "2"}:          1,
		{"chat", "lm-4-scout", "cloudB", "", "3"}:             1,
		{"_OTHER", "_OTHER", "_OTHER", "_OTHER", "_OTHER"}:    1,
	} {
		h := histogram(t, reg, "gen_ai_client_operation_duration_seconds", map[string]string{
			"gen_ai_operation_name": labels[0], "gen_ai_request_model": labels[1], "gen_ai_provider_name": labels[2],
			"error_type": labels[3], "attempt": labels[4]})
		if h.GetSampleCount() != want {
			t.Errorf("attempts %v: %d, want %d", labels, h.GetSampleCount(), want)
		}
	}
}

func TestStoreAndGuard(t *testing.T) {
	m, reg := newMetrics(t, true)
	m.StoreTx(metrics.StoreView, time.Millisecond)
	m.StoreTx(metrics.StoreBatch, 2*time.Millisecond)
	m.StoreTx(metrics.StoreBatch, 3*time.Millisecond)
	m.GroupCommit(3)
	m.StoreRetry(metrics.StoreView, metrics.RetryReadAhead)
	m.StoreRetry(metrics.StoreBatch, metrics.RetrySerialization)
	m.StoreRetry(metrics.StoreBatch, metrics.RetrySerialization)
	m.StoreRetry(metrics.StoreUpdate, metrics.RetryDeadlock)
	m.StoreRetry(metrics.StoreUpdate, metrics.RetryConnection)
	m.StoreRetry(metrics.StoreBatch, metrics.RetryAssumption)
	m.StoreRetry("<kind>", "<reason>")
	m.RateLimitBypassed("acme")
	r := m.Begin(time.Now())
	r.GuardDecision("acme", "block", metrics.GuardFlagged)
	r.GuardDecision("acme", "audit", metrics.GuardFailed)
	r.GuardDecision("acme", "audit", metrics.GuardAllowed)
	r.GuardDecision("acme", "<script>", "maybe")
	compare(t, reg, `
# HELP chatgw_content_guard_decisions_total Content guard classifications, by the tenant's mode and the decision.
# TYPE chatgw_content_guard_decisions_total counter
chatgw_content_guard_decisions_total{decision="flagged",mode="block",tenant="acme"} 1
chatgw_content_guard_decisions_total{decision="failed",mode="audit",tenant="acme"} 1
chatgw_content_guard_decisions_total{decision="allowed",mode="audit",tenant="acme"} 1
chatgw_content_guard_decisions_total{decision="_OTHER",mode="_OTHER",tenant="acme"} 1
# HELP chatgw_rate_limit_bypassed_total Requests let through without their rate limit because the limiter failed (fail-open).
# TYPE chatgw_rate_limit_bypassed_total counter
chatgw_rate_limit_bypassed_total{tenant="acme"} 1
# HELP chatgw_store_group_commit_batch_size Batch calls committed together by one group commit (bbolt).
# TYPE chatgw_store_group_commit_batch_size histogram
chatgw_store_group_commit_batch_size_bucket{le="1"} 0
chatgw_store_group_commit_batch_size_bucket{le="2"} 0
chatgw_store_group_commit_batch_size_bucket{le="4"} 1
chatgw_store_group_commit_batch_size_bucket{le="8"} 1
chatgw_store_group_commit_batch_size_bucket{le="16"} 1
chatgw_store_group_commit_batch_size_bucket{le="32"} 1
chatgw_store_group_commit_batch_size_bucket{le="64"} 1
chatgw_store_group_commit_batch_size_bucket{le="128"} 1
chatgw_store_group_commit_batch_size_bucket{le="256"} 1
chatgw_store_group_commit_batch_size_bucket{le="+Inf"} 1
chatgw_store_group_commit_batch_size_sum 3
chatgw_store_group_commit_batch_size_count 1
# HELP chatgw_store_retries_total Store transactions run again (PostgreSQL), by kind and reason: serialization, deadlock, connection, read_ahead (a View that read beyond its prefetch) or assumption (an Update whose assumed value had changed).
# TYPE chatgw_store_retries_total counter
chatgw_store_retries_total{kind="view",reason="read_ahead"} 1
chatgw_store_retries_total{kind="batch",reason="serialization"} 2
chatgw_store_retries_total{kind="update",reason="deadlock"} 1
chatgw_store_retries_total{kind="update",reason="connection"} 1
chatgw_store_retries_total{kind="batch",reason="assumption"} 1
chatgw_store_retries_total{kind="_OTHER",reason="_OTHER"} 1
`, "chatgw_content_guard_decisions_total", "chatgw_rate_limit_bypassed_total", "chatgw_store_group_commit_batch_size",
		"chatgw_store_retries_total")
	if h := histogram(t, reg, "chatgw_store_transaction_duration_seconds", map[string]string{"kind": "batch"}); h.GetSampleCount() != 2 {
		t.Errorf("%d batch transactions, want 2", h.GetSampleCount())
	}
}

// TestOff: a nil *Metrics, and the nil *Request it begins, record nothing
// and allocate nothing.
func TestOff(t *testing.T) {
	var m *metrics.Metrics
	usage := json.RawMessage(`{"prompt_tokens":1}`)
	allocs := testing.AllocsPerRun(100, func() {
		r := m.Begin(time.Now())
		r.SetRoute(m.Route("GET", "/", ""))
		r.UpstreamCall("a", "/chat/completions", "local", 1, time.Millisecond)
		r.StreamStarts()
		r.FirstChunk()
		r.AnswerStarts()
		r.AddWait(time.Millisecond)
		r.Usage(usage)
		r.StreamEnds(metrics.StreamDone)
		r.GuardDecision("t", "block", metrics.GuardFlagged)
		r.End("GET", 200, nil, "t")
		m.ObserveAttempt(context.Background(), upstream.Attempt{})
		m.RateLimited("t", metrics.RateExceeded)
		m.RateLimitBypassed("t")
		m.QuotaRefused("t", "a", errcat.ModelQuotaExhausted)
		m.StoreTx(metrics.StoreView, time.Millisecond)
		m.GroupCommit(1)
	})
	if allocs != 0 {
		t.Errorf("off: %v allocations", allocs)
	}
}

// TestEndAllocs: once its children are cached, a request allocates its
// Request alone.
func TestEndAllocs(t *testing.T) {
	m, _ := newMetrics(t, true)
	rt := m.Route("GET", "/v1/models", "")
	chat := m.Route("POST", "/v1/chat/completions", metrics.OpChat)
	run := func() {
		r := m.Begin(time.Now())
		r.SetRoute(rt)
		r.End("GET", 200, nil, "acme")
		c := m.Begin(time.Now())
		c.SetRoute(chat)
		c.UpstreamCall("lm-4-scout", "/chat/completions", "local", 1, time.Millisecond)
		c.AnswerStarts()
		c.End("POST", 200, nil, "acme")
	}
	run()
	if allocs := testing.AllocsPerRun(100, run); allocs > 2 {
		t.Errorf("%v allocations for two requests, want at most 2 (their Requests)", allocs)
	}
}

func TestNew(t *testing.T) {
	if _, err := metrics.New(metrics.Config{}); err == nil {
		t.Error("New without a Registerer succeeded")
	}
	if _, err := metrics.New(metrics.Config{Registerer: prometheus.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	a := prometheus.WrapRegistererWith(prometheus.Labels{"gateway": "a"}, reg)
	if _, err := metrics.New(metrics.Config{Registerer: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.New(metrics.Config{Registerer: a}); err == nil {
		t.Error("a second New on the same registry succeeded")
	}
	// Two gateways share a registry with a label apart.
	if _, err := metrics.New(metrics.Config{Registerer: prometheus.WrapRegistererWith(prometheus.Labels{"gateway": "b"}, reg)}); err != nil {
		t.Errorf("New on a wrapped registry: %v", err)
	}
	// A New that fails registers nothing: the registry can be used again.
	fresh := prometheus.NewRegistry()
	taken := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "chatgw_build_info",
		Help: "Always 1: the gateway's version, its module's version and VCS revision, and the Go version it was built with."},
		[]string{"version", "module_version", "revision", "go_version"})
	fresh.MustRegister(taken)
	if _, err := metrics.New(metrics.Config{Registerer: fresh}); err == nil {
		t.Fatal("New over a registry holding chatgw_build_info succeeded")
	}
	fresh.Unregister(taken)
	if _, err := metrics.New(metrics.Config{Registerer: fresh}); err != nil {
		t.Errorf("New after a failed New: %v", err)
	}
	n, err := testutil.GatherAndCount(reg, "chatgw_build_info")
	if err != nil || n != 2 {
		t.Errorf("chatgw_build_info: %d series (%v), want 2", n, err)
	}
}

// gauge is the streams-in-flight child of /v1/chat/completions.
func gauge(t *testing.T, reg *prometheus.Registry) prometheus.Collector {
	t.Helper()
	return gathered{reg: reg, name: "chatgw_streams_in_flight"}
}

// gathered is one family of a registry as a Collector, for testutil.ToFloat64.
type gathered struct {
	reg  *prometheus.Registry
	name string
}

func (g gathered) Describe(chan<- *prometheus.Desc) {}

func (g gathered) Collect(ch chan<- prometheus.Metric) {
	fams, _ := g.reg.Gather()
	for _, f := range fams {
		if f.GetName() != g.name {
			continue
		}
		for _, mt := range f.GetMetric() {
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(g.name, "", nil, nil), prometheus.GaugeValue, mt.GetGauge().GetValue())
		}
	}
}

// histogram returns the one series of family name whose labels include
// want, failing the test when there is not exactly one.
func histogram(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) *dto.Histogram {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found []*dto.Histogram
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, mt := range f.GetMetric() {
			have := map[string]string{}
			for _, lp := range mt.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue series
				}
			}
			found = append(found, mt.GetHistogram())
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, want, len(found))
	}
	return found[0]
}

// TestConcurrent: requests of many goroutines, some creating children, add
// up (run with -race).
func TestConcurrent(t *testing.T) {
	m, reg := newMetrics(t, true)
	rt := m.Route("POST", "/v1/chat/completions", metrics.OpChat)
	const goroutines, each = 8, 200
	done := make(chan struct{})
	for g := range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				r := m.Begin(time.Now())
				r.SetRoute(rt)
				r.UpstreamCall("lm-4-scout", "/chat/completions", "local", 1, time.Microsecond)
				r.End("POST", 200+i%3, nil, []string{"acme", "globex"}[g%2])
			}
		}()
	}
	for range goroutines {
		<-done
	}
	total := 0.0
	fams, _ := reg.Gather()
	for _, f := range fams {
		if f.GetName() == "chatgw_requests_total" {
			for _, mt := range f.GetMetric() {
				total += mt.GetCounter().GetValue()
			}
		}
	}
	if total != goroutines*each {
		t.Errorf("%v requests counted, want %d", total, goroutines*each)
	}
}
