package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/internal/metrics"
	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/store/pgstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// metricsTokens are the tenants and tokens of the metrics tests: acme (the
// content guard blocks "forbidden words"), quota (one request a day of
// lm-4-scout-local) and a token of acme limited to one request.
func metricsTokens() *auth.StaticCatalog {
	return auth.MustStatic(
		[]*auth.Tenant{
			{ID: "acme", Settings: auth.Settings{ContentGuard: "block"}},
			{ID: "quota", Quotas: map[string]auth.Quota{"lm-4-scout-local": {RequestsPerDay: 1}}},
		},
		map[string]auth.StaticToken{
			"admin": {Tenant: "acme", Role: auth.RoleTenantAdmin},
			"once":  {Tenant: "acme", Role: auth.RoleMember, Rate: &auth.Rate{PerSecond: 0.001, Burst: 1}},
			"quota": {Tenant: "quota", Role: auth.RoleMember},
		})
}

// metricsEnv is a gateway with metrics in reg over three fakes, the local
// one configured by local.
func metricsEnv(t *testing.T, reg prometheus.Registerer, local upstreamtest.Config, opts ...gateway.Option) (*env, *gateway.Gateway) {
	t.Helper()
	rules, err := guard.ParseRules([]byte(`{"categories":{"illicit":{"terms":["forbidden words"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	fakeLocal := upstreamtest.New(t, upstreamtest.WithConfig(local))
	cloudA, cloudB := upstreamtest.New(t), upstreamtest.New(t)
	base := []gateway.Option{
		gateway.WithStore(memstore.New()),
		gateway.WithTokenCatalog(metricsTokens()),
		gateway.WithBackends(upstream.Backends{LocalURL: fakeLocal.URL, CloudAURL: cloudA.URL, CloudBURL: cloudB.URL}),
		gateway.WithLogger(slog.New(slog.DiscardHandler)),
		gateway.WithRateLimit(1000, 1000),
		gateway.WithClassifier(rules),
		gateway.WithMetrics(reg),
	}
	g, err := gateway.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(func() { srv.Close(); g.Close() })
	return &env{srv: srv, fake: fakeLocal, g: g}, g
}

// localFails makes the local fake answer 503, so that lm-4-scout falls back
// to cloudA and lm-4-scout-local fails.
func localFails() upstreamtest.Config {
	return upstreamtest.Config{Reply: upstreamtest.Reply{Status: 503}}
}

// TestMetricsCardinality sends hostile input to every route and to none
// (odd methods and paths, unknown aliases, user ids, request ids, tenant
// headers) along with requests that reach every kind of event, then walks
// every metric family: a label value outside its label's closed vocabulary,
// or a label without one, fails the test. No label value may come from
// request input unchecked.
func TestMetricsCardinality(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	e, g := metricsEnv(t, reg, localFails())
	patterns := gateway.RoutePatterns(g)
	rnd := rand.New(rand.NewPCG(1, 2))
	hostile := func() string {
		return fmt.Sprintf("u-%x-%s", rnd.Uint64(), []string{"ünï", "a b", "%2e%2e", "<script>", "x'--", strings.Repeat("z", 300)}[rnd.IntN(6)])
	}
	var sent []string // hostile values that must appear in no label
	sendTo := func(tenant, user, method, path, token, body string) {
		reqID := hostile()
		sent = append(sent, user, reqID)
		hdr := http.Header{"X-Request-Id": {reqID}, "Gw-Tenant-Id": {tenant}}
		e.do(t, call{method: method, path: path, token: token, user: user, body: body, header: hdr})
	}
	// send sends with a GW-Tenant-Id that may not be the token's.
	send := func(method, path, token, body string) {
		sendTo([]string{"", "acme", "evil"}[rnd.IntN(3)], hostile(), method, path, token, body)
	}
	// Every route, its parameters hostile.
	param := regexp.MustCompile(`[:*][a-z_]+`)
	for _, p := range patterns {
		method, path, _ := strings.Cut(p, " ")
		seg := "seg-" + strings.ReplaceAll(hostile(), "/", "")
		sent = append(sent, seg)
		filled := param.ReplaceAllString(path, seg)
		for _, token := range []string{"admin", "", "not-a-token"} {
			send(method, filled, token, `{"model":"gpt-`+seg+`","messages":[{"role":"user","content":"hi"}],"provider":"`+seg+`"}`)
		}
		// A method the path does not serve: 405, labelled as no route.
		send([]string{"PATCH", "BREW"}[rnd.IntN(2)], filled, "admin", "")
	}
	// Odd methods and paths.
	for _, m := range []string{"BREW", "PROPFIND", "get", "OPTIONS", "TRACE"} {
		for range 3 {
			seg := strings.ReplaceAll(hostile(), " ", "_")
			sent = append(sent, seg)
			send(m, "/v1/"+seg, "admin", "")
		}
	}
	for _, path := range []string{"/v1/chat/completions/../x", "/%00", "/v1/chat/completionsX", "/" + strings.Repeat("a/", 200)} {
		send("POST", path, "admin", "{}")
	}
	// Requests that reach the events: JSON and stream with a fallback,
	// unknown and valid aliases, a 4xx of the upstream, embeddings, the
	// rate limit, the quota, the content guard.
	chat := func(model string, stream bool, content string) string {
		return fmt.Sprintf(`{"model":%q,"stream":%v,"stream_options":{"include_usage":%v},"messages":[{"role":"user","content":%q}]}`, model, stream, stream, content)
	}
	// These must reach their events: without a GW-Tenant-Id, which the
	// token's tenant would have to match, and with a valid GW-User-Id
	// (the hostile ones may be too long).
	for _, body := range []string{
		chat("lm-4-scout", false, "hi"), chat("lm-4-scout", true, "hi"), chat("lm-4-scout-local", true, "hi"),
		chat("lm-4-scout-cloudB", false, "hi"), chat("no-such-"+hostile(), false, "hi"), chat("lm-4-scout", false, "say forbidden words"),
	} {
		sendTo("", "u1", "POST", "/v1/chat/completions", "admin", body)
	}
	sendTo("", "u1", "POST", "/v1/embeddings", "admin", `{"model":"lm-embed","input":"hi"}`)
	sendTo("", "u1", "POST", "/c1/chat", "admin", `{"message":"hi","stream":false,"model":"lm-4-scout"}`)
	sendTo("", "u1", "POST", "/v1/chat/completions", "once", chat("lm-4-scout", false, "hi"))
	sendTo("", "u1", "POST", "/v1/chat/completions", "once", chat("lm-4-scout", false, "hi"))
	sendTo("", "u1", "POST", "/v1/chat/completions", "quota", chat("lm-4-scout-local", false, "hi"))
	sendTo("", "u1", "POST", "/v1/chat/completions", "quota", chat("lm-4-scout-local", false, "hi"))

	vocab := metricsVocabulary(patterns)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	// The 405s are counted as requests no route matched, by their method's
	// vocabulary value.
	if n := countRequests(fams, map[string]string{"http_route": "_OTHER", "http_response_status_code": "405", "error_type": "method_not_allowed"}); n != float64(len(patterns)) {
		t.Errorf("405s counted %v times, want %d", n, len(patterns))
	}
	seen := map[string]bool{}
	for _, f := range fams {
		if f.GetName() == "chatgw_build_info" {
			continue // labelled by the build, not by requests
		}
		if len(f.GetMetric()) > 0 {
			seen[f.GetName()] = true
		}
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				ok, known := vocab[lp.GetName()]
				switch {
				case !known:
					t.Errorf("%s: label %s has no vocabulary in this test: add it", f.GetName(), lp.GetName())
				case !ok(lp.GetValue()):
					t.Errorf("%s: label %s=%q is outside its vocabulary", f.GetName(), lp.GetName(), lp.GetValue())
				}
				for _, s := range sent {
					if lp.GetValue() != "" && strings.Contains(s, lp.GetValue()) && len(lp.GetValue()) > 12 {
						t.Errorf("%s: label %s=%q comes from the request", f.GetName(), lp.GetName(), lp.GetValue())
					}
				}
			}
		}
	}
	// The load reached every family a request can (the store's group commit
	// needs bbolt, the bypass a failing limiter).
	for _, name := range []string{"chatgw_requests_total", "http_server_request_duration_seconds",
		"gen_ai_server_request_duration_seconds", "gen_ai_server_time_to_first_token_seconds",
		"gen_ai_server_time_per_output_token_seconds", "gen_ai_client_operation_duration_seconds",
		"gen_ai_client_token_usage", "chatgw_tokens_total", "chatgw_overhead_seconds", "chatgw_fallbacks_total",
		"chatgw_stream_endings_total", "chatgw_streams_in_flight", "chatgw_rate_limit_rejections_total",
		"chatgw_quota_rejections_total", "chatgw_store_transaction_duration_seconds",
		"chatgw_content_guard_decisions_total"} {
		if !seen[name] {
			t.Errorf("the load recorded nothing in %s", name)
		}
	}
}

// countRequests sums the chatgw_requests_total series of fams that have
// every label of want.
func countRequests(fams []*dto.MetricFamily, want map[string]string) float64 {
	n := 0.0
	for _, f := range fams {
		if f.GetName() != "chatgw_requests_total" {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue series
				}
			}
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// metricsVocabulary is, for each label name, whether a value is in its
// vocabulary.
func metricsVocabulary(patterns []string) map[string]func(string) bool {
	in := func(values ...string) func(string) bool {
		set := map[string]bool{}
		for _, v := range values {
			set[v] = true
		}
		return func(v string) bool { return set[v] }
	}
	or := func(fs ...func(string) bool) func(string) bool {
		return func(v string) bool {
			for _, f := range fs {
				if f(v) {
					return true
				}
			}
			return false
		}
	}
	var routes, codes []string
	for _, p := range patterns {
		_, path, _ := strings.Cut(p, " ")
		routes = append(routes, path)
	}
	for _, e := range errcat.Entries() {
		codes = append(codes, string(e.Code))
	}
	cat, _ := upstream.DefaultCatalog()
	var aliases []string
	for _, m := range cat.Models {
		aliases = append(aliases, m.Alias)
	}
	providers := in("local", "cloudA", "cloudB", "", "_OTHER")
	attemptErrors := or(in("connect_error", "first_byte_timeout", "total_timeout", "cancelled", "invalid_body", "read_error", "_OTHER"),
		regexp.MustCompile(`^[1-5][0-9][0-9]$`).MatchString)
	return map[string]func(string) bool{
		"http_route":                in(append(routes, "_OTHER")...),
		"http_request_method":       in("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "_OTHER"),
		"http_response_status_code": regexp.MustCompile(`^(0|[1-5][0-9][0-9])$`).MatchString,
		"error_type":                or(in(append(codes, "", "_OTHER")...), attemptErrors),
		"tenant":                    in("acme", "quota", ""),
		"gen_ai_request_model":      in(append(aliases, "", "_OTHER")...),
		"gen_ai_provider_name":      providers,
		"gen_ai_operation_name":     in("chat", "invoke_agent", "embeddings", "generate_content", "_OTHER"),
		"gen_ai_token_type":         in("input", "output"),
		"attempt":                   or(regexp.MustCompile(`^([1-9]|1[0-6])$`).MatchString, in("_OTHER")),
		"stream":                    in("true", "false"),
		"from":                      providers,
		"to":                        providers,
		"reason":                    attemptErrors,
		"outcome":                   in("done", "client_cancel", "upstream_error", "truncated", "shutdown", "commit_failed", "_OTHER"),
		"kind":                      in("exceeded", "limiter_unavailable", "model_quota_exhausted", "cloudB_daily_quota_exhausted", "view", "update", "batch", "_OTHER"),
		"mode":                      in("audit", "block", "_OTHER"),
		"decision":                  in("allowed", "flagged", "failed", "_OTHER"),
	}
}

// TestMetricsTenantLabelOff: WithMetricsTenantLabel(false) leaves the tenant
// label out of every family.
func TestMetricsTenantLabelOff(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	e, _ := metricsEnv(t, reg, upstreamtest.Config{}, gateway.WithMetricsTenantLabel(false))
	e.do(t, call{method: "POST", path: "/v1/chat/completions", token: "admin",
		body: `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}]}`})
	e.do(t, call{method: "GET", path: "/v1/models", token: "once"})
	e.do(t, call{method: "GET", path: "/v1/models", token: "once"})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "tenant" {
					t.Errorf("%s has a tenant label", f.GetName())
				}
			}
		}
	}
	want := `
# HELP chatgw_rate_limit_rejections_total Requests refused by the per-token rate limit: exceeded (429) or limiter_unavailable (the limiter failed, 500 storage_error).
# TYPE chatgw_rate_limit_rejections_total counter
chatgw_rate_limit_rejections_total{kind="exceeded"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "chatgw_rate_limit_rejections_total"); err != nil {
		t.Error(err)
	}
}

// TestMetricsOverhead: the overhead leaves out the wait for the upstream,
// before a JSON answer and before a stream's first chunk, while the request
// durations hold it.
func TestMetricsOverhead(t *testing.T) {
	const latency = 300 * time.Millisecond
	reg := prometheus.NewPedanticRegistry()
	e, _ := metricsEnv(t, reg, upstreamtest.Config{Reply: upstreamtest.Reply{Latency: latency, Chunks: 3, Interval: 100 * time.Millisecond}})
	for _, stream := range []bool{false, true} {
		e.do(t, call{method: "POST", path: "/v1/chat/completions", token: "admin",
			body: fmt.Sprintf(`{"model":"lm-4-scout-local","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)})
	}
	for _, stream := range []string{"false", "true"} {
		ov := metricsHistogram(t, reg, "chatgw_overhead_seconds", map[string]string{"http_route": "/v1/chat/completions", "stream": stream})
		if ov.GetSampleCount() != 1 || ov.GetSampleSum() > (latency/3).Seconds() {
			t.Errorf("stream=%s: overhead %d samples, %v s; want 1 well under the upstream's %v", stream, ov.GetSampleCount(), ov.GetSampleSum(), latency)
		}
	}
	d := metricsHistogram(t, reg, "gen_ai_server_request_duration_seconds", map[string]string{"error_type": ""})
	if d.GetSampleCount() != 2 || d.GetSampleSum() < 2*latency.Seconds() {
		t.Errorf("request durations: %d, %v s in all; want 2 of at least %v each", d.GetSampleCount(), d.GetSampleSum(), latency)
	}
	ttft := metricsHistogram(t, reg, "gen_ai_server_time_to_first_token_seconds", nil)
	if ttft.GetSampleCount() != 1 || ttft.GetSampleSum() < latency.Seconds() {
		t.Errorf("time to first token: %d, %v s; want 1 of at least %v", ttft.GetSampleCount(), ttft.GetSampleSum(), latency)
	}
}

// TestMetricsGroupCommit: with the default bbolt store, group commits are
// observed, and Close stops it.
func TestMetricsGroupCommit(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	e, _ := metricsEnv(t, reg, upstreamtest.Config{}, gateway.WithStore(nil), gateway.WithDataDir(filepath.Join(t.TempDir(), "data")))
	// Quota admissions and settlements are Batch calls.
	e.do(t, call{method: "POST", path: "/v1/chat/completions", token: "quota",
		body: `{"model":"lm-4-scout-local","messages":[{"role":"user","content":"hi"}]}`})
	h := metricsHistogram(t, reg, "chatgw_store_group_commit_batch_size", nil)
	b := metricsHistogram(t, reg, "chatgw_store_transaction_duration_seconds", map[string]string{"kind": "batch"})
	if h.GetSampleCount() == 0 || h.GetSampleCount() > b.GetSampleCount() {
		t.Errorf("%d group commits for %d Batch calls: want at least one, at most one a call", h.GetSampleCount(), b.GetSampleCount())
	}
}

// TestMetricsStoreRetriesOnPostgres: the retries of a PostgreSQL store are
// counted by kind and reason (here a View that read beyond its Prefetch,
// which pgstore runs again), until Close.
func TestMetricsStoreRetriesOnPostgres(t *testing.T) {
	t.Parallel()
	db, err := pgstore.Open(context.Background(), pgtest.New(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reg := prometheus.NewPedanticRegistry()
	_, g := metricsEnv(t, reg, upstreamtest.Config{}, gateway.WithStore(db))
	rerun := func() {
		t.Helper()
		err := db.View(context.Background(), func(tx store.Tx) error {
			b := []byte("b")
			tx.(store.Prefetcher).Prefetch(store.Read{Bucket: b, Key: []byte("k")})
			tx.Get(b, []byte("other"))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Only this series: the gateway's own background work (its usage
	// writer, leases) may meet a serialization failure on the same
	// database, which is counted too.
	readAhead := func() float64 {
		t.Helper()
		return metricsSeries(t, reg, "chatgw_store_retries_total",
			map[string]string{"kind": "view", "reason": "read_ahead"}).GetCounter().GetValue()
	}
	rerun()
	if n := readAhead(); n != 1 {
		t.Errorf("read_ahead retries %v, want 1", n)
	}
	g.Close() // the store outlives the gateway, which stops observing it
	rerun()
	if n := readAhead(); n != 1 {
		t.Errorf("after Close: read_ahead retries %v, want 1", n)
	}
}

// TestMetricsTwoGateways: two gateways share a registry with a label apart.
func TestMetricsTwoGateways(t *testing.T) {
	reg := prometheus.NewRegistry()
	metricsEnv(t, prometheus.WrapRegistererWith(prometheus.Labels{"gateway": "a"}, reg), upstreamtest.Config{})
	metricsEnv(t, prometheus.WrapRegistererWith(prometheus.Labels{"gateway": "b"}, reg), upstreamtest.Config{})
	if _, err := gateway.New(gateway.WithTokenCatalog(metricsTokens()), gateway.WithStore(memstore.New()),
		gateway.WithMetrics(prometheus.WrapRegistererWith(prometheus.Labels{"gateway": "a"}, reg))); err == nil {
		t.Error("a third gateway on gateway a's registry started")
	}
}

// metricsHistogram returns the one series of the histogram family name whose
// labels include want.
func metricsHistogram(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) *dto.Histogram {
	t.Helper()
	return metricsSeries(t, reg, name, want).GetHistogram()
}

// metricsSeries returns the one series of family name whose labels include
// want.
func metricsSeries(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found []*dto.Metric
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range want {
				has := false
				for _, lp := range m.GetLabel() {
					has = has || (lp.GetName() == k && lp.GetValue() == v)
				}
				if !has {
					continue series
				}
			}
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, want, len(found))
	}
	return found[0]
}

// TestMetricsDocumented: every family the gateway registers is listed in
// the README's "Observing chatgw", and every metric the Grafana dashboard
// queries is one the gateway registers.
func TestMetricsDocumented(t *testing.T) {
	rec := &recordingRegisterer{Registerer: prometheus.NewRegistry()}
	metricsEnv(t, rec, upstreamtest.Config{})
	if len(rec.names) < 10 {
		t.Fatalf("only %d families registered: %v", len(rec.names), rec.names)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "## Observing chatgw")
	section, _, _ = strings.Cut(section, "\n## ")
	for name := range rec.names {
		if !strings.Contains(section, "| `"+name+"` |") {
			t.Errorf("README's Observing chatgw has no row for %s", name)
		}
	}
	dashboard, err := os.ReadFile(filepath.Join("docs", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dashboard, &d); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	metric := regexp.MustCompile(`\b((?:chatgw|gen_ai|http_server)_[a-z_]+)\{`) // a selector's metric, not a label
	queried := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, sm := range metric.FindAllStringSubmatch(tg.Expr, -1) {
				m := sm[1]
				queried++
				base := m
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					base = strings.TrimSuffix(base, suffix)
				}
				if !rec.names[base] && !rec.names[m] {
					t.Errorf("the dashboard queries %s, which the gateway does not export", m)
				}
			}
		}
	}
	if queried == 0 {
		t.Error("the dashboard queries no chatgw metric")
	}
}

// recordingRegisterer notes the names of the families registered with it.
type recordingRegisterer struct {
	prometheus.Registerer
	names map[string]bool
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	if r.names == nil {
		r.names = map[string]bool{}
	}
	descs := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(descs); close(descs) }()
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		if m := name.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return r.Registerer.Register(c)
}

// failingLimiter is a rate limiter whose store cannot be reached.
type failingLimiter struct{}

func (failingLimiter) Allow(context.Context, auth.Digest, auth.Rate) (bool, time.Duration, error) {
	return false, 0, errors.New("database unreachable")
}

// TestMetricsLimiterFailure: a failing limiter's refusals (fail-closed) and
// passes (fail-open) are counted apart.
func TestMetricsLimiterFailure(t *testing.T) {
	for _, open := range []bool{false, true} {
		reg := prometheus.NewPedanticRegistry()
		e, _ := metricsEnv(t, reg, upstreamtest.Config{}, gateway.WithRateLimiter(failingLimiter{}), gateway.WithRateLimitFailOpen(open))
		e.do(t, call{method: "GET", path: "/v1/models", token: "admin"})
		want := `
# HELP chatgw_rate_limit_rejections_total Requests refused by the per-token rate limit: exceeded (429) or limiter_unavailable (the limiter failed, 500 storage_error).
# TYPE chatgw_rate_limit_rejections_total counter
chatgw_rate_limit_rejections_total{kind="limiter_unavailable",tenant="acme"} 1
`
		if open {
			want = `
# HELP chatgw_rate_limit_bypassed_total Requests let through without their rate limit because the limiter failed (fail-open).
# TYPE chatgw_rate_limit_bypassed_total counter
chatgw_rate_limit_bypassed_total{tenant="acme"} 1
`
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "chatgw_rate_limit_rejections_total", "chatgw_rate_limit_bypassed_total"); err != nil {
			t.Errorf("fail-open %v: %v", open, err)
		}
	}
}

// TestStoreRetryReasonsAgree: every reason pgstore reports is a value of the
// reason label, not _OTHER (internal/metrics cannot import pgstore, so the
// two lists are kept in step here).
func TestStoreRetryReasonsAgree(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(metrics.Config{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	reasons := []string{pgstore.RetrySerialization, pgstore.RetryDeadlock, pgstore.RetryConnection,
		pgstore.RetryReadAhead, pgstore.RetryAssumption}
	for _, r := range reasons {
		m.StoreRetry(metrics.StoreView, r)
	}
	var got []string
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "chatgw_store_retries_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "reason" {
					got = append(got, l.GetValue())
				}
			}
		}
	}
	slices.Sort(got)
	slices.Sort(reasons)
	if diff := cmp.Diff(reasons, got); diff != "" {
		t.Errorf("reason label values (-pgstore +metric):\n%s", diff)
	}
}
