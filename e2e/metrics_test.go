package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
)

// TestMetrics drives a mixed load through gatewayd (JSON and a stream
// answered by the local backend, a fallback from local to cloudA, a 4xx of
// the upstream, a 4xx of the gateway, a 429 of the rate limit, an unknown
// route, a request without a bearer), scrapes GATEWAY_METRICS_ADDR's
// /metrics and checks the exact counts and label sets it expects (issue 15,
// item 5; DECISIONS 9.3: "GATEWAY_METRICS_ADDR ... serves Prometheus
// metrics at /metrics on its own listener, without a bearer").
func TestMetrics(t *testing.T) {
	metricsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	g := start(t, func(s *setup) {
		s.Env["GATEWAY_METRICS_ADDR"] = metricsAddr
		local := upstreamtest.Reply{PromptTokens: 10, CompletionTokens: 7}
		// The first call to local (the fallback's) answers 503.
		s.Local = upstreamtest.Config{Reply: local, Script: []upstreamtest.Reply{{Status: 503}}}
		s.CloudA = upstreamtest.Config{Reply: upstreamtest.Reply{PromptTokens: 30, CompletionTokens: 5}}
		s.CloudB = upstreamtest.Config{Reply: upstreamtest.Reply{Status: 400, ErrorMessage: "bad request"}}
	})
	chat := func(model string, stream bool) string {
		return fmt.Sprintf(`{"model":%q,"stream":%v,"stream_options":{"include_usage":%v},"messages":[{"role":"user","content":"hi"}]}`,
			model, stream, stream)
	}
	for _, step := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"POST", "/v1/chat/completions", tokAdmin, chat("lm-4-scout", false), 200},       // local 503, cloudA answers
		{"POST", "/v1/chat/completions", tokAdmin, chat("lm-4-scout-local", false), 200}, // JSON
		{"POST", "/v1/chat/completions", tokAdmin, chat("lm-4-scout-local", true), 200},  // stream
		{"POST", "/v1/chat/completions", tokAdmin, chat("lm-4-scout-cloudB", false), 400},
		{"POST", "/v1/chat/completions", tokAdmin, `{"model":`, 400},
		{"GET", "/v1/models", tokSlow, "", 200},
		{"GET", "/v1/models", tokSlow, "", 200},
		{"GET", "/v1/models", tokSlow, "", 429}, // burst 2
		{"GET", "/v1/models", "", "", 401},
		{"GET", "/no/such/route", tokAdmin, "", 404},
		{"DELETE", "/v1/models", tokAdmin, "", 405},
	} {
		var body any
		if step.body != "" {
			body = step.body
		}
		if r := g.do(t, step.method, step.path, step.token, "", body, nil); r.Status != step.want {
			t.Fatalf("%s: want %d", r, step.want)
		}
	}
	if r := g.get(t, "/metrics", "", ""); r.Status != 404 {
		t.Errorf("the API's listener serves /metrics: %s", r)
	}

	got := scrape(t, "http://"+metricsAddr+"/metrics")
	const route = `http_route="/v1/chat/completions"`
	want := map[string]string{
		// Requests by route template, method, status, error code and tenant
		// (those of /healthz, which the harness polls, are left out).
		`chatgw_requests_total{error_type="",http_request_method="POST",http_response_status_code="200",` + route + `,tenant="acme"}`:                             "3",
		`chatgw_requests_total{error_type="upstream_bad_request",http_request_method="POST",http_response_status_code="400",` + route + `,tenant="acme"}`:         "1",
		`chatgw_requests_total{error_type="invalid_json",http_request_method="POST",http_response_status_code="400",` + route + `,tenant="acme"}`:                 "1",
		`chatgw_requests_total{error_type="",http_request_method="GET",http_response_status_code="200",http_route="/v1/models",tenant="acme"}`:                    "2",
		`chatgw_requests_total{error_type="rate_limit_exceeded",http_request_method="GET",http_response_status_code="429",http_route="/v1/models",tenant="acme"}`: "1",
		`chatgw_requests_total{error_type="missing_authorization",http_request_method="GET",http_response_status_code="401",http_route="/v1/models",tenant=""}`:   "1",
		`chatgw_requests_total{error_type="route_not_found",http_request_method="GET",http_response_status_code="404",http_route="_OTHER",tenant=""}`:             "2",
		// A wrong method: no route matched, as for an unknown path.
		`chatgw_requests_total{error_type="method_not_allowed",http_request_method="DELETE",http_response_status_code="405",http_route="_OTHER",tenant=""}`: "1",
		// Each upstream attempt, with its position in the chain.
		`gen_ai_client_operation_duration_seconds_count{attempt="1",error_type="503",gen_ai_operation_name="chat",gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout"}`:         "1",
		`gen_ai_client_operation_duration_seconds_count{attempt="2",error_type="",gen_ai_operation_name="chat",gen_ai_provider_name="cloudA",gen_ai_request_model="lm-4-scout"}`:           "1",
		`gen_ai_client_operation_duration_seconds_count{attempt="1",error_type="",gen_ai_operation_name="chat",gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout-local"}`:      "2",
		`gen_ai_client_operation_duration_seconds_count{attempt="1",error_type="400",gen_ai_operation_name="chat",gen_ai_provider_name="cloudB",gen_ai_request_model="lm-4-scout-cloudB"}`: "1",
		`chatgw_fallbacks_total{from="local",reason="503",to="cloudA"}`: "1",
		// Tokens as the fakes reported them: local 10 + 7 per answer, cloudA 30 + 5.
		`gen_ai_client_token_usage_count{attempt="1",gen_ai_operation_name="chat",gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout-local",gen_ai_token_type="input"}`:  "2",
		`gen_ai_client_token_usage_sum{attempt="1",gen_ai_operation_name="chat",gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout-local",gen_ai_token_type="input"}`:    "20",
		`gen_ai_client_token_usage_count{attempt="1",gen_ai_operation_name="chat",gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout-local",gen_ai_token_type="output"}`: "2",
		`gen_ai_client_token_usage_sum{attempt="1",gen_ai_operation_name="chat",gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout-local",gen_ai_token_type="output"}`:   "14",
		`gen_ai_client_token_usage_count{attempt="2",gen_ai_operation_name="chat",gen_ai_provider_name="cloudA",gen_ai_request_model="lm-4-scout",gen_ai_token_type="input"}`:       "1",
		`gen_ai_client_token_usage_sum{attempt="2",gen_ai_operation_name="chat",gen_ai_provider_name="cloudA",gen_ai_request_model="lm-4-scout",gen_ai_token_type="input"}`:         "30",
		`gen_ai_client_token_usage_count{attempt="2",gen_ai_operation_name="chat",gen_ai_provider_name="cloudA",gen_ai_request_model="lm-4-scout",gen_ai_token_type="output"}`:      "1",
		`gen_ai_client_token_usage_sum{attempt="2",gen_ai_operation_name="chat",gen_ai_provider_name="cloudA",gen_ai_request_model="lm-4-scout",gen_ai_token_type="output"}`:        "5",
		`chatgw_tokens_total{gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout-local",gen_ai_token_type="input",tenant="acme"}`:                                         "20",
		`chatgw_tokens_total{gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout-local",gen_ai_token_type="output",tenant="acme"}`:                                        "14",
		`chatgw_tokens_total{gen_ai_provider_name="cloudA",gen_ai_request_model="lm-4-scout",gen_ai_token_type="input",tenant="acme"}`:                                              "30",
		`chatgw_tokens_total{gen_ai_provider_name="cloudA",gen_ai_request_model="lm-4-scout",gen_ai_token_type="output",tenant="acme"}`:                                             "5",
		// The server side, by the alias asked for and the backend that served.
		`gen_ai_server_request_duration_seconds_count{error_type="",gen_ai_operation_name="chat",gen_ai_provider_name="cloudA",gen_ai_request_model="lm-4-scout"}`:                      "1",
		`gen_ai_server_request_duration_seconds_count{error_type="",gen_ai_operation_name="chat",gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout-local"}`:                 "2",
		`gen_ai_server_request_duration_seconds_count{error_type="upstream_bad_request",gen_ai_operation_name="chat",gen_ai_provider_name="",gen_ai_request_model="lm-4-scout-cloudB"}`: "1",
		`gen_ai_server_request_duration_seconds_count{error_type="invalid_json",gen_ai_operation_name="chat",gen_ai_provider_name="",gen_ai_request_model=""}`:                          "1",
		`gen_ai_server_time_to_first_token_seconds_count{error_type="",gen_ai_operation_name="chat",gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout-local"}`:              "1",
		`gen_ai_server_time_per_output_token_seconds_count{error_type="",gen_ai_operation_name="chat",gen_ai_provider_name="local",gen_ai_request_model="lm-4-scout-local"}`:            "1",
		`chatgw_overhead_seconds_count{` + route + `,stream="false"}`: "3",
		`chatgw_overhead_seconds_count{` + route + `,stream="true"}`:  "1",
		// Streams, limits.
		`chatgw_stream_endings_total{` + route + `,outcome="done"}`:         "1",
		`chatgw_streams_in_flight{` + route + `}`:                           "0",
		`chatgw_rate_limit_rejections_total{kind="exceeded",tenant="acme"}`: "1",
	}
	families := []string{"chatgw_requests_total", "gen_ai_client_operation_duration_seconds_count", "chatgw_fallbacks_total",
		"gen_ai_client_token_usage_count", "gen_ai_client_token_usage_sum", "chatgw_tokens_total",
		"gen_ai_server_request_duration_seconds_count", "gen_ai_server_time_to_first_token_seconds_count",
		"gen_ai_server_time_per_output_token_seconds_count", "chatgw_overhead_seconds_count",
		"chatgw_stream_endings_total", "chatgw_streams_in_flight", "chatgw_rate_limit_rejections_total",
		"chatgw_quota_rejections_total", "chatgw_content_guard_decisions_total", "chatgw_rate_limit_bypassed_total"}
	sel := map[string]string{}
	for series, v := range got {
		name, _, _ := strings.Cut(series, "{")
		if slices.Contains(families, name) && !strings.Contains(series, `http_route="/healthz"`) {
			sel[series] = v
		}
	}
	if diff := cmp.Diff(want, sel); diff != "" {
		t.Errorf("/metrics mismatch (-want +got):\n%s", diff)
	}
	// The harness polled /healthz until gatewayd answered; build info and
	// the runtime's collectors are there.
	healthz := got[`chatgw_requests_total{error_type="",http_request_method="GET",http_response_status_code="200",http_route="/healthz",tenant=""}`]
	if n, _ := strconv.Atoi(healthz); n < 1 {
		t.Errorf("/healthz requests = %q, want at least 1", healthz)
	}
	for _, prefix := range []string{`chatgw_build_info{go_version="go`, "go_goroutines", "process_cpu_seconds_total",
		"chatgw_store_transaction_duration_seconds_count", "chatgw_store_group_commit_batch_size_count"} {
		if !slices.ContainsFunc(slices.Collect(mapsKeys(got)), func(s string) bool { return strings.HasPrefix(s, prefix) }) {
			t.Errorf("/metrics has no %s...", prefix)
		}
	}
}

// TestNoMetricsByDefault: without GATEWAY_METRICS_ADDR gatewayd serves no
// metrics (DECISIONS 9.3: "unset: no metrics listener").
func TestNoMetricsByDefault(t *testing.T) {
	g := start(t, nil)
	if strings.Contains(g.stderr.String(), "metrics") {
		t.Errorf("gatewayd without GATEWAY_METRICS_ADDR mentions metrics:\n%s", g.stderr)
	}
	if r := g.get(t, "/metrics", "", ""); r.Status != 404 {
		t.Errorf("%s, want 404", r)
	}
}

// scrape reads the metrics at url as a map from each series (name and
// labels, as exposed) to its value.
func scrape(t *testing.T, url string) map[string]string {
	t.Helper()
	res, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := map[string]string{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		out[line[:i]] = line[i+1:]
	}
	return out
}

// mapsKeys is maps.Keys of m.
func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
