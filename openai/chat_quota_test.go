package openai_test

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/openai"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// quotaEnv is a Service with a quota Accountant over the test catalog plus a
// cloudB-only alias, at 2025-03-01 12:00 UTC (43200 s before the reset).
type quotaEnv struct {
	s     *openai.Service
	up    *testkit.Fake
	clock *clock.Fake
	quota *quota.Accountant
	st    *memstore.Store // the quota's store
}

// newQuotaEnv answers every upstream call with answers (backend).
func newQuotaEnv(answers ...testkit.Answer) *quotaEnv {
	cat := testCatalog()
	cloudB := cat.Models[1] // lm-4-scout-local's shape
	cloudB.Alias, cloudB.Description = "lm-4-scout-cloudB", "Scout, cloudB only"
	cloudB.Backends = []upstream.BackendInfo{{Provider: upstream.ProviderCloudB, RouterAlias: "scout-cloudb", Status: upstream.StatusAvailable}}
	cat.Models = append(cat.Models, cloudB)
	e := &quotaEnv{up: backend(answers...), clock: clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))}
	e.st = memstore.New()
	e.quota = quota.New(quota.Config{Store: e.st, Clock: e.clock, Catalog: cat})
	e.s = newService(e.up, func(c *openai.Config) { c.Catalog, c.Clock, c.Quota = cat, e.clock, e.quota })
	return e
}

const untilMidnight = "43200"

// promptHi is the pre-flight prompt estimate of [{"role":"user","content":"hi"}]:
// one message (4) plus ⌈2 bytes / 3⌉.
const promptHi = 5

func chatBody(model, extra string) string {
	return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]` + extra + `}`
}

func asJSON(t *testing.T, b string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(b), &v); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return v
}

// checkQuota429 fails t unless w, the answer of request, is a 429 of body
// want (JSON) with Retry-After until midnight UTC.
func checkQuota429(t *testing.T, request string, w *httptest.ResponseRecorder, want string) {
	t.Helper()
	if w.Code != 429 {
		t.Fatalf("%s = %d %s; want 429", request, w.Code, w.Body)
	}
	if diff := cmp.Diff(asJSON(t, want), asJSON(t, w.Body.String())); diff != "" {
		t.Errorf("429 body mismatch (-want +got):\n%s", diff)
	}
	if got := w.Header().Get("Retry-After"); got != untilMidnight {
		t.Errorf("Retry-After = %q; want %s", got, untilMidnight)
	}
}

func TestChatCompletionsQuotaRequestsPerDay(t *testing.T) {
	e := newQuotaEnv()
	acme := &auth.Tenant{ID: "acme", Quotas: map[string]auth.Quota{"lm-4-scout-local": {RequestsPerDay: 2}}}
	for i := range 2 {
		if w := testkit.Record(e.s.ChatCompletions, request("POST", "/v1/chat/completions", chatBody("lm-4-scout-local", ""), acme, nil)); w.Code != 200 {
			t.Fatalf("request %d = %d %s", i+1, w.Code, w.Body)
		}
	}
	w := testkit.Record(e.s.ChatCompletions, request("POST", "/v1/chat/completions", chatBody("lm-4-scout-local", `,"stream":true`), acme, nil))
	checkQuota429(t, "third request", w, `{"error":{"type":"rate_limit_error","code":"model_quota_exhausted",`+
		`"message":"The tenant's daily budget for this model is used up; it resets at midnight UTC (see Retry-After).",`+
		`"param":null,"doc_url":"/docs/errors#model_quota_exhausted"},"gw_code":"model_quota_exhausted"}`)
	if n := e.up.Calls(); n != 2 {
		t.Errorf("%d upstream calls; want 2", n)
	}
	// Aliases without a budget, and the next UTC day, are admitted.
	if w := testkit.Record(e.s.ChatCompletions, request("POST", "/v1/chat/completions", chatBody("lm-4-scout", ""), acme, nil)); w.Code != 200 {
		t.Errorf("alias without budget = %d %s", w.Code, w.Body)
	}
	e.clock.Advance(12 * time.Hour)
	if w := testkit.Record(e.s.ChatCompletions, request("POST", "/v1/chat/completions", chatBody("lm-4-scout-local", ""), acme, nil)); w.Code != 200 {
		t.Errorf("after the reset = %d %s", w.Code, w.Body)
	}
}

func TestChatCompletionsQuotaTokensSettle(t *testing.T) {
	const alias = "lm-4-scout-local"
	usageStream := "data: " + chunkOf(`{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}`) + "\n\n" +
		`data: {"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1700000100,"model":"scout-cloud","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":5,"total_tokens":9}}` + "\n\n" +
		"data: [DONE]\n\n"
	tests := []struct {
		name    string
		respond func() *testkit.Fake
		extra   string
		status  int
		want    quota.Usage
	}{
		{"json usage", func() *testkit.Fake { return backend() }, `,"max_tokens":100`, 200, quota.Usage{Requests: 1, Tokens: 5}},
		{"stream usage chunk", func() *testkit.Fake { return backend(testkit.Stream(usageStream)) },
			`,"stream":true,"stream_options":{"include_usage":true},"max_tokens":100`, 200, quota.Usage{Requests: 1, Tokens: 9}},
		{"stream without usage charges the reservation", func() *testkit.Fake { return backend(testkit.Stream(streamTranscript)) },
			`,"stream":true,"max_tokens":100`, 200, quota.Usage{Requests: 1, Tokens: 100 + promptHi}},
		{"max_completion_tokens, the larger, counts", func() *testkit.Fake { return backend(testkit.Stream(streamTranscript)) },
			`,"stream":true,"max_tokens":10,"max_completion_tokens":300`, 200, quota.Usage{Requests: 1, Tokens: 300 + promptHi}},
		{"without max_tokens the reservation is 4096", func() *testkit.Fake { return backend(testkit.Stream(streamTranscript)) },
			`,"stream":true`, 200, quota.Usage{Requests: 1, Tokens: 4096 + promptHi}},
		{"cut stream charges the reservation", func() *testkit.Fake {
			return backend(testkit.Stream("data: " + chunkOf(`{"index":0,"delta":{"content":"a"}}`) + "\n\n"))
		}, `,"stream":true,"max_tokens":100`, 200, quota.Usage{Requests: 1, Tokens: 100 + promptHi}},
		{"upstream failure is cancelled", func() *testkit.Fake {
			return backend(testkit.Fail(errcat.New(errcat.UpstreamUnavailable, "", "down")))
		}, `,"max_tokens":100`, 503, quota.Usage{Requests: 1}},
		{"over the token budget", func() *testkit.Fake { return backend() }, `,"max_tokens":20000`, 429, quota.Usage{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newQuotaEnv()
			up := tc.respond()
			s := newService(up, func(c *openai.Config) { c.Quota = e.quota })
			acme := &auth.Tenant{ID: "acme", Quotas: map[string]auth.Quota{alias: {TokensPerDay: 10000}}}
			w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", chatBody(alias, tc.extra), acme, nil))
			if w.Code != tc.status {
				t.Fatalf("status = %d %s; want %d", w.Code, w.Body, tc.status)
			}
			if diff := cmp.Diff(tc.want, testkit.QuotaUsage(t, e.quota, "acme", alias)); diff != "" {
				t.Errorf("Usage mismatch (-want +got):\n%s", diff)
			}
			if tc.status == 429 && up.Calls() != 0 {
				t.Errorf("upstream called on a refused request")
			}
		})
	}
}

// TestChatCompletionsQuotaStoreDown: a budget that cannot be read admits
// nothing ("everything else fails closed (500 storage_error)",
// docs/contract.md#92-several-replicas) and the upstream is not called.
func TestChatCompletionsQuotaStoreDown(t *testing.T) {
	e := newQuotaEnv()
	e.st.FailWith(func(string) error { return errors.New("database unreachable") })
	acme := &auth.Tenant{ID: "acme", Quotas: map[string]auth.Quota{"lm-4-scout-local": {RequestsPerDay: 2}}}
	w := testkit.Record(e.s.ChatCompletions, request("POST", "/v1/chat/completions", chatBody("lm-4-scout-local", ""), acme, nil))
	if w.Code != 500 || errcat.Code(asJSON(t, w.Body.String()).(map[string]any)["gw_code"].(string)) != errcat.StorageError {
		t.Errorf("= %d %s; want 500 storage_error", w.Code, w.Body)
	}
	if n := e.up.Calls(); n != 0 {
		t.Errorf("%d upstream calls; want 0", n)
	}
}

func TestChatCompletionsQuotaFloored(t *testing.T) {
	e := newQuotaEnv(testkit.Stream(streamTranscript))
	acme := &auth.Tenant{ID: "acme", Quotas: map[string]auth.Quota{"lm-reason": {TokensPerDay: 10000}}}
	w := testkit.Record(e.s.ChatCompletions, request("POST", "/v1/chat/completions", chatBody("lm-reason", `,"stream":true,"max_tokens":50`), acme, nil))
	if w.Code != 200 || w.Header().Get("Gw-Applied") != "max_tokens_floored=200" {
		t.Fatalf("= %d %v %s", w.Code, w.Header(), w.Body)
	}
	if got := testkit.QuotaUsage(t, e.quota, "acme", "lm-reason").Tokens; got != 200+promptHi {
		t.Errorf("charged %d tokens; want the floored max_tokens 200 + %d", got, promptHi)
	}
}

func TestChatCompletionsQuotaCloudB(t *testing.T) {
	e := newQuotaEnv()
	acme := &auth.Tenant{ID: "acme",
		Models: []string{"lm-4-scout", "lm-4-scout-local", "lm-reason", "lm-4-scout-cloudB"},
		Quotas: map[string]auth.Quota{"lm-4-scout-cloudB": {RequestsPerDay: 1}, "lm-reason": {RequestsPerDay: 1}}}
	if w := testkit.Record(e.s.ChatCompletions, request("POST", "/v1/chat/completions", chatBody("lm-4-scout-cloudB", ""), acme, nil)); w.Code != 200 {
		t.Fatalf("first = %d %s", w.Code, w.Body)
	}
	// lm-reason's own budget is used up: it is not offered.
	if w := testkit.Record(e.s.ChatCompletions, request("POST", "/v1/chat/completions", chatBody("lm-reason", ""), acme, nil)); w.Code != 200 {
		t.Fatalf("lm-reason = %d %s", w.Code, w.Body)
	}
	w := testkit.Record(e.s.ChatCompletions, request("POST", "/v1/chat/completions", chatBody("lm-4-scout-cloudB", `,"stream":true`), acme, nil))
	checkQuota429(t, "second", w, `{"error":{"type":"rate_limit_error","code":"cloudB_daily_quota_exhausted",`+
		`"message":"The daily quota of model lm-4-scout-cloudB is used up; retry with one of available_fallbacks as model, or after the reset at 00:00 UTC (see Retry-After).",`+
		`"param":"model","doc_url":"/docs/errors#cloudB_daily_quota_exhausted"},"gw_code":"cloudB_daily_quota_exhausted","available_fallbacks":["lm-4-scout","lm-4-scout-local"]}`)
	if strings.Contains(w.Body.String(), "scout-cloudb") {
		t.Errorf("429 names the router alias: %s", w.Body)
	}
	if n := e.up.Calls(); n != 2 {
		t.Errorf("%d upstream calls; want 2", n)
	}
}

// TestChatCompletionsWithoutQuota: a nil Accountant admits everything.
func TestChatCompletionsWithoutQuota(t *testing.T) {
	up := backend()
	s := newService(up)
	acme := &auth.Tenant{ID: "acme", Quotas: map[string]auth.Quota{"lm-4-scout-local": {RequestsPerDay: 1}}}
	for range 3 {
		if w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", chatBody("lm-4-scout-local", ""), acme, nil)); w.Code != 200 {
			t.Fatalf("= %d %s", w.Code, w.Body)
		}
	}
}
