package chat_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// The env's clock is 2025-03-01 12:00 UTC: 43200 s before the reset.
const untilMidnight = "43200"

// quotaEnvelope is the exact body of model_quota_exhausted.
const quotaEnvelope = `{"error":{"type":"rate_limit_error","code":"model_quota_exhausted",` +
	`"message":"The tenant's daily budget for this model is used up; it resets at midnight UTC (see Retry-After).",` +
	`"param":null,"doc_url":"/docs/errors#model_quota_exhausted"},"gw_code":"model_quota_exhausted"}`

// promptHi is the pre-flight prompt estimate of a first turn "hi": one message
// (4) plus ⌈2 bytes / 3⌉.
const promptHi = 5

func jsonBody(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return v
}

func TestQuotaRequestsPerDay(t *testing.T) {
	acme := &auth.Tenant{ID: "t1", Quotas: map[string]auth.Quota{"lm-4-scout-local": {RequestsPerDay: 2}}}
	e := newEnv(t, withQuota(acme))
	for i, body := range []string{
		`{"conversation_id":"c1","message":"one","model":"lm-4-scout-local"}`,
		`{"conversation_id":"c1","message":"two","model":"lm-4-scout-local","stream":false}`,
	} {
		if rec := e.post(t, "alice", body); rec.Code != 200 {
			t.Fatalf("request %d = %d %s", i+1, rec.Code, rec.Body)
		}
	}
	// Another alias has no budget.
	if rec := e.post(t, "alice", `{"message":"x","model":"lm-4-scout"}`); rec.Code != 200 {
		t.Fatalf("alias without budget = %d %s", rec.Code, rec.Body)
	}
	calls := len(e.up.Calls())

	rec := e.post(t, "alice", `{"conversation_id":"c1","message":"three","model":"lm-4-scout-local"}`)
	if rec.Code != 429 {
		t.Fatalf("third request = %d %s; want 429", rec.Code, rec.Body)
	}
	if diff := cmp.Diff(jsonBody(t, []byte(quotaEnvelope)), jsonBody(t, rec.Body.Bytes())); diff != "" {
		t.Errorf("429 body mismatch (-want +got):\n%s", diff)
	}
	for h, want := range map[string]string{"Retry-After": untilMidnight, "Content-Type": "application/json", "Gw-Conversation-Id": "c1"} {
		if got := rec.Header().Get(h); got != want {
			t.Errorf("%s = %q; want %q", h, got, want)
		}
	}
	if n := len(e.up.Calls()); n != calls {
		t.Errorf("upstream called on a refused request")
	}
	if got := len(e.history(t, "t1", "alice", "c1")); got != 4 {
		t.Errorf("stored %d messages; want the 2 admitted turns (4)", got)
	}
	// Another tenant has its own counters; the next UTC day resets them.
	if rec := e.post(t, "alice", `{"message":"x","model":"lm-4-scout-local"}`, "X-Test-Tenant", "t2"); rec.Code != 200 {
		t.Errorf("other tenant = %d %s", rec.Code, rec.Body)
	}
	e.clock.Advance(12 * time.Hour)
	if rec := e.post(t, "alice", `{"conversation_id":"c1","message":"three","model":"lm-4-scout-local"}`); rec.Code != 200 {
		t.Errorf("after the reset = %d %s", rec.Code, rec.Body)
	}
}

// usageReply answers a stream that ends with a usage chunk.
func usageReply(total int) func(int, *upstream.Request) (*upstream.Response, error) {
	return func(n int, req *upstream.Request) (*upstream.Response, error) {
		return testkit.SSEAnswer(
			testkit.Chunk(`{"role":"assistant","content":"ok"}`, "stop"),
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"lm","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":`+
				strconv.Itoa(total)+`}}`,
		), nil
	}
}

func TestQuotaTokensSettle(t *testing.T) {
	const alias = "lm-4-scout-local"
	cutStream := func(int, *upstream.Request) (*upstream.Response, error) {
		return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(strings.NewReader("data: " + testkit.Chunk(`{"content":"half"}`, "") + "\n\n"))}, nil
	}
	failing := func(int, *upstream.Request) (*upstream.Response, error) {
		return nil, errcat.New(errcat.UpstreamUnavailable, "", "No backend could be reached.")
	}
	tests := []struct {
		name   string
		reply  func(int, *upstream.Request) (*upstream.Response, error)
		body   string
		status int
		want   quota.Usage // the counter after the request
	}{
		{"json usage", nil, `{"message":"hi","stream":false,"max_tokens":100}`, 200, quota.Usage{Requests: 1, Tokens: 2}},
		{"ephemeral json usage", nil, `{"message":"hi","stream":false,"ephemeral":true}`, 200, quota.Usage{Requests: 1, Tokens: 2}},
		{"stream usage chunk", usageReply(7), `{"message":"hi","max_tokens":100}`, 200, quota.Usage{Requests: 1, Tokens: 7}},
		{"stream without usage charges the reservation", nil, `{"message":"hi","max_tokens":100}`, 200,
			quota.Usage{Requests: 1, Tokens: 100 + promptHi}},
		{"without max_tokens the reservation is 4096", nil, `{"message":"hi"}`, 200,
			quota.Usage{Requests: 1, Tokens: 4096 + promptHi}},
		{"cut stream charges the reservation", cutStream, `{"message":"hi","max_tokens":100}`, 200,
			quota.Usage{Requests: 1, Tokens: 100 + promptHi}},
		{"upstream failure is cancelled", failing, `{"message":"hi","max_tokens":100}`, 503, quota.Usage{Requests: 1}},
		{"over the token budget", nil, `{"message":"hi","max_tokens":20000}`, 429, quota.Usage{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			acme := &auth.Tenant{ID: "t1", Quotas: map[string]auth.Quota{alias: {TokensPerDay: 10000}}}
			e := newEnv(t, withQuota(acme))
			e.up.reply = tc.reply
			rec := e.post(t, "alice", strings.Replace(tc.body, "{", `{"model":"`+alias+`",`, 1))
			if rec.Code != tc.status {
				t.Fatalf("status = %d %s; want %d", rec.Code, rec.Body, tc.status)
			}
			if diff := cmp.Diff(tc.want, testkit.QuotaUsage(t, e.quota, "t1", alias)); diff != "" {
				t.Errorf("Usage mismatch (-want +got):\n%s", diff)
			}
			if tc.status == 429 {
				if diff := cmp.Diff(jsonBody(t, []byte(quotaEnvelope)), jsonBody(t, rec.Body.Bytes())); diff != "" {
					t.Errorf("429 body mismatch (-want +got):\n%s", diff)
				}
				if len(e.up.Calls()) != 0 {
					t.Errorf("upstream called on a refused request")
				}
			}
		})
	}
}

func TestQuotaCloudB(t *testing.T) {
	acme := &auth.Tenant{ID: "t1",
		Models: []string{"lm-4-scout", "lm-4-scout-local", "lm-4-scout-cloudB"},
		Quotas: map[string]auth.Quota{"lm-4-scout-cloudB": {RequestsPerDay: 1}}}
	e := newEnv(t, withQuota(acme))
	if rec := e.post(t, "alice", `{"message":"one","provider":"cloudB"}`); rec.Code != 200 {
		t.Fatalf("first = %d %s", rec.Code, rec.Body)
	}
	for _, fields := range []string{`"provider":"cloudB"`, `"model":"lm-4-scout-cloudB","stream":false`} {
		rec := e.post(t, "alice", `{"message":"two",`+fields+`}`)
		want := `{"error":{"type":"rate_limit_error","code":"cloudB_daily_quota_exhausted",` +
			`"message":"The daily quota of model lm-4-scout-cloudB is used up; retry with one of available_fallbacks as model, or after the reset at 00:00 UTC (see Retry-After).",` +
			`"param":"model","doc_url":"/docs/errors#cloudB_daily_quota_exhausted"},"gw_code":"cloudB_daily_quota_exhausted","available_fallbacks":["lm-4-scout","lm-4-scout-local"]}`
		if rec.Code != 429 {
			t.Fatalf("%s = %d %s; want 429", fields, rec.Code, rec.Body)
		}
		if diff := cmp.Diff(jsonBody(t, []byte(want)), jsonBody(t, rec.Body.Bytes())); diff != "" {
			t.Errorf("%s: 429 body mismatch (-want +got):\n%s", fields, diff)
		}
		if got := rec.Header().Get("Retry-After"); got != untilMidnight {
			t.Errorf("Retry-After = %q; want %s", got, untilMidnight)
		}
	}
	// A fallback it offered is admitted.
	if rec := e.post(t, "alice", `{"message":"two","model":"lm-4-scout-local"}`); rec.Code != 200 {
		t.Errorf("fallback = %d %s", rec.Code, rec.Body)
	}
	if n := len(e.up.Calls()); n != 2 {
		t.Errorf("%d upstream calls; want 2", n)
	}
}
