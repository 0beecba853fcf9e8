package agents_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/agents"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// quotaEnvelope is the exact body of model_quota_exhausted, as /c1 answers it.
const quotaEnvelope = `{"error":{"type":"rate_limit_error","code":"model_quota_exhausted",` +
	`"message":"The tenant's daily budget for this model is used up; it resets at midnight UTC (see Retry-After).",` +
	`"param":null,"doc_url":"/docs/errors#model_quota_exhausted"},"gw_code":"model_quota_exhausted"}`

// promptHello is the pre-flight prompt estimate of plain's first round with
// the user message "hello": "You talk." (4 + ⌈9/3⌉) and "hello" (4 + ⌈5/3⌉).
const promptHello = 13

// reserveHello is the reservation of that round: quota's default output
// reservation (no max_tokens; the context window is larger) plus the prompt.
const reserveHello = quota.DefaultReserveCap + promptHello

// withQuota gives the service a quota Accountant over the env's clock and
// catalog, stored in *acct, and registers the tenants.
func withQuota(acct **quota.Accountant, tenants ...*auth.Tenant) envOption {
	return func(e *env, c *agents.Config) {
		*acct = quota.New(quota.Config{Store: e.st, Clock: e.clock, Catalog: c.Catalog})
		c.Quota = *acct
		for _, t := range tenants {
			e.tenants[t.ID] = t
		}
	}
}

// withCloudB adds the alias lm-4-scout-cloudB, served by cloudB only, and the
// agent clouded using it. Apply it before withQuota.
func withCloudB() envOption {
	return func(_ *env, c *agents.Config) {
		cat := testCatalog()
		cat.Models = append(cat.Models, upstream.ModelInfo{
			Alias: "lm-4-scout-cloudB", Kind: upstream.KindChat, ContextWindow: 32000,
			Modalities: upstream.Modalities{TextIn: true, TextOut: true},
			Backends:   []upstream.BackendInfo{{Provider: upstream.ProviderCloudB, RouterAlias: "x@cloudB", Status: upstream.StatusAvailable}},
		})
		c.Catalog = cat
		c.Agents = append(c.Agents, agents.Agent{Name: "clouded", Model: "lm-4-scout-cloudB", SystemPrompt: "x"})
	}
}

// withUsage answers r with its usage replaced: total_tokens total in a JSON
// answer, or a usage chunk (empty choices) before a stream's [DONE]. A
// negative total removes a JSON answer's usage (a stream has none unless
// added).
func withUsage(r reply, total int) reply {
	return func(req *upstream.Request) (*upstream.Response, error) {
		resp, err := r(req)
		if err != nil {
			return nil, err
		}
		b, _ := io.ReadAll(resp.Body)
		s, u := string(b), ""
		if total >= 0 {
			u = fmt.Sprintf(`{"prompt_tokens":1,"completion_tokens":%d,"total_tokens":%d}`, total-1, total)
		}
		const jsonUsage = `,"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}`
		switch {
		case req.Stream && u != "":
			s = strings.Replace(s, "data: [DONE]", `data: {"id":"chatcmpl-1","object":"chat.completion.chunk",`+
				`"created":1700000000,"model":"lm","choices":[],"usage":`+u+"}\n\ndata: [DONE]", 1)
		case !req.Stream && u != "":
			s = strings.Replace(s, jsonUsage, `,"usage":`+u, 1)
		case !req.Stream:
			s = strings.Replace(s, jsonUsage, "", 1)
		}
		resp.Body = nopCloser(s)
		return resp, nil
	}
}

// cutStream answers a stream of content that ends without usage or [DONE].
func cutStream(*upstream.Request) (*upstream.Response, error) {
	r := testkit.SSEAnswer(testkit.Chunk(`{"role":"assistant","content":"half"}`, ""))
	b, _ := io.ReadAll(r.Body)
	r.Body = nopCloser(strings.TrimSuffix(string(b), "data: [DONE]\n\n"))
	return r, nil
}

// wantRefusal checks that rec is the JSON 429 want (a JSON text) with
// Retry-After the seconds from the env's clock to the next 00:00 UTC.
func wantRefusal(t *testing.T, e *env, rec *httptest.ResponseRecorder, want string) {
	t.Helper()
	if rec.Code != 429 {
		t.Fatalf("status = %d %s; want 429", rec.Code, rec.Body)
	}
	var w, got any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("429 body %s: %v", rec.Body, err)
	}
	if diff := cmp.Diff(w, got); diff != "" {
		t.Errorf("429 body mismatch (-want +got):\n%s", diff)
	}
	now := e.clock.Now().UTC()
	untilMidnight := now.Truncate(24 * time.Hour).Add(24 * time.Hour).Sub(now)
	for h, v := range map[string]string{"Retry-After": fmt.Sprint(int(untilMidnight.Seconds())), "Content-Type": "application/json"} {
		if got := rec.Header().Get(h); got != v {
			t.Errorf("%s = %q; want %q", h, got, v)
		}
	}
}

func TestQuotaSettle(t *testing.T) {
	lookupX := call{"c1", "lookup", `{"q":"x"}`}
	unavailable := fail(&errcat.Error{Code: errcat.UpstreamUnavailable})
	tests := []struct {
		name   string
		agent  string
		stream bool
		script []reply
		status int
		alias  string
		want   quota.Usage // the alias's counter after the request
	}{
		{"json usage", "plain", false, []reply{text("hi")}, 200, "lm-small", quota.Usage{Requests: 1, Tokens: 2}},
		{"json without usage charges the reservation", "plain", false, []reply{withUsage(text("hi"), -1)}, 200,
			"lm-small", quota.Usage{Requests: 1, Tokens: reserveHello}},
		{"each tool round settles to its usage", "helper", false,
			[]reply{withUsage(toolCalls(lookupX), 30), withUsage(text("done"), 40)}, 200,
			"lm-4-scout", quota.Usage{Requests: 2, Tokens: 70}},
		{"stream usage chunk", "plain", true, []reply{withUsage(text("hi"), 7)}, 200, "lm-small", quota.Usage{Requests: 1, Tokens: 7}},
		{"stream without usage charges the reservation", "plain", true, []reply{text("hi")}, 200,
			"lm-small", quota.Usage{Requests: 1, Tokens: reserveHello}},
		{"cut stream charges the reservation", "plain", true, []reply{cutStream}, 200,
			"lm-small", quota.Usage{Requests: 1, Tokens: reserveHello}},
		{"stream tool rounds", "helper", true,
			[]reply{withUsage(toolCalls(lookupX), 30), withUsage(text("done"), 40)}, 200,
			"lm-4-scout", quota.Usage{Requests: 2, Tokens: 70}},
		{"stream text in a round with tools", "helper", true, []reply{withUsage(text("direct"), 9)}, 200,
			"lm-4-scout", quota.Usage{Requests: 1, Tokens: 9}},
		{"upstream failure is cancelled", "plain", false, []reply{unavailable}, 503, "lm-small", quota.Usage{Requests: 1}},
		{"stream upstream failure is cancelled", "plain", true, []reply{unavailable}, 503, "lm-small", quota.Usage{Requests: 1}},
		{"failure after a tool round", "helper", false,
			[]reply{withUsage(toolCalls(lookupX), 30), fail(&errcat.Error{Code: errcat.UpstreamTimeout})}, 504,
			"lm-4-scout", quota.Usage{Requests: 2, Tokens: 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var acct *quota.Accountant
			e := newEnv(t, tt.script, withQuota(&acct, &auth.Tenant{ID: "t1", Quotas: map[string]auth.Quota{
				"lm-4-scout": {TokensPerDay: 100000}, "lm-small": {TokensPerDay: 100000}}}))
			body := fmt.Sprintf(`{"messages":[{"role":"user","content":"hello"}],"stream":%v}`, tt.stream)
			rec := e.do(t, "POST", "/a1/agents/"+tt.agent+"/chat", "", body)
			if rec.Code != tt.status {
				t.Fatalf("status = %d %s; want %d", rec.Code, rec.Body, tt.status)
			}
			if diff := cmp.Diff(tt.want, testkit.QuotaUsage(t, acct, "t1", tt.alias)); diff != "" {
				t.Errorf("Usage mismatch (-want +got):\n%s", diff)
			}
			// Streamed rounds ask for their usage; JSON rounds carry it anyway.
			var want any
			if tt.stream {
				want = map[string]any{"include_usage": true}
			}
			for i := range e.up.Calls() {
				if diff := cmp.Diff(want, e.up.body(t, i)["stream_options"]); diff != "" {
					t.Errorf("call %d stream_options mismatch (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestQuotaRequestsPerDay(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			var acct *quota.Accountant
			lookupX := call{"c1", "lookup", `{"q":"x"}`}
			e := newEnv(t, []reply{toolCalls(lookupX), text("one"), toolCalls(lookupX)},
				withQuota(&acct, &auth.Tenant{ID: "t1", Quotas: map[string]auth.Quota{"lm-4-scout": {RequestsPerDay: 3}}}))
			body := fmt.Sprintf(`{"messages":[{"role":"user","content":"hello"}],"stream":%v}`, stream)
			// Every upstream call counts: a tool round and the final round.
			if rec := e.do(t, "POST", "/a1/agents/helper/chat", "", body); rec.Code != 200 {
				t.Fatalf("first chat = %d %s", rec.Code, rec.Body)
			}
			if got := testkit.QuotaUsage(t, acct, "t1", "lm-4-scout").Requests; got != 2 {
				t.Errorf("after one chat with a tool round: %d requests; want 2", got)
			}
			// The second chat's tool round is the third request; its next round
			// is refused with a JSON error even when streaming: nothing was sent.
			wantRefusal(t, e, e.do(t, "POST", "/a1/agents/helper/chat", "", body), quotaEnvelope)
			if n := len(e.up.Calls()); n != 3 {
				t.Errorf("%d upstream calls; want 3 (the refused round is not made)", n)
			}
			if n := len(e.lookups); n != 2 {
				t.Errorf("%d tool runs; want 2", n)
			}
			// Refused at once now; another alias and another tenant are not
			// affected; the next UTC day resets the budget.
			wantRefusal(t, e, e.do(t, "POST", "/a1/agents/helper/chat", "", body), quotaEnvelope)
			if rec := e.do(t, "POST", "/a1/agents/plain/chat", "", body); rec.Code != 200 {
				t.Errorf("alias without budget = %d %s", rec.Code, rec.Body)
			}
			if rec := e.do(t, "POST", "/a1/agents/helper/chat", "", body, "X-Test-Tenant", "t2"); rec.Code != 200 {
				t.Errorf("other tenant = %d %s", rec.Code, rec.Body)
			}
			e.clock.Advance(12 * time.Hour)
			if rec := e.do(t, "POST", "/a1/agents/helper/chat", "", body); rec.Code != 200 {
				t.Errorf("after the reset = %d %s", rec.Code, rec.Body)
			}
		})
	}
}

func TestQuotaTokensPerDayAcrossRounds(t *testing.T) {
	// The tool round spends 3000 of 5000 tokens; the next round's reservation
	// (4096 plus its prompt) no longer fits.
	var acct *quota.Accountant
	e := newEnv(t, []reply{withUsage(toolCalls(call{"c1", "lookup", `{"q":"x"}`}), 3000)},
		withQuota(&acct, &auth.Tenant{ID: "t1", Quotas: map[string]auth.Quota{"lm-4-scout": {TokensPerDay: 5000}}}))
	wantRefusal(t, e, e.do(t, "POST", "/a1/agents/helper/chat", "", hello), quotaEnvelope)
	if diff := cmp.Diff(quota.Usage{Requests: 1, Tokens: 3000}, testkit.QuotaUsage(t, acct, "t1", "lm-4-scout")); diff != "" {
		t.Errorf("Usage mismatch (-want +got):\n%s", diff)
	}
	if n := len(e.up.Calls()); n != 1 {
		t.Errorf("%d upstream calls; want 1", n)
	}
}

func TestQuotaCloudB(t *testing.T) {
	var acct *quota.Accountant
	e := newEnv(t, nil, withCloudB(),
		withQuota(&acct, &auth.Tenant{ID: "t1", Quotas: map[string]auth.Quota{"lm-4-scout-cloudB": {RequestsPerDay: 1}}}))
	if rec := e.do(t, "POST", "/a1/agents/clouded/chat", "", hello); rec.Code != 200 {
		t.Fatalf("first = %d %s", rec.Code, rec.Body)
	}
	want := `{"error":{"type":"rate_limit_error","code":"cloudB_daily_quota_exhausted",` +
		`"message":"The daily quota of model lm-4-scout-cloudB is used up; retry with one of available_fallbacks as model, or after the reset at 00:00 UTC (see Retry-After).",` +
		`"param":"model","doc_url":"/docs/errors#cloudB_daily_quota_exhausted"},"gw_code":"cloudB_daily_quota_exhausted","available_fallbacks":["lm-4-scout","lm-small"]}`
	for _, stream := range []string{"false", "true"} {
		wantRefusal(t, e, e.do(t, "POST", "/a1/agents/clouded/chat", "", `{"messages":[{"role":"user","content":"hi"}],"stream":`+stream+`}`), want)
	}
	if n := len(e.up.Calls()); n != 1 {
		t.Errorf("%d upstream calls; want 1", n)
	}
}

func TestQuotaSessions(t *testing.T) {
	tests := []struct {
		name      string
		perDay    int64
		status    int
		want      quota.Usage
		wantState string // the session's status after the compaction
	}{
		// Three session messages, then the summary call.
		{"summary call counted", 4, 200, quota.Usage{Requests: 4, Tokens: 8}, "archived"},
		{"summary call refused", 3, 429, quota.Usage{Requests: 3, Tokens: 6}, "live"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var acct *quota.Accountant
			e := newEnv(t, []reply{text("r1"), text("r2"), text("r3"), text("summary")},
				withQuota(&acct, &auth.Tenant{ID: "t1", Quotas: map[string]auth.Quota{"lm-small": {RequestsPerDay: tt.perDay}}}))
			s := e.create(t, "plain", "u1", `{"compact_keep_last_n":2}`)
			for _, m := range []string{"one", "two", "three"} {
				e.say(t, "plain", "u1", s.ID, m)
			}
			rec := e.do(t, "POST", "/a1/agents/plain/sessions/"+s.ID+"/compact", "u1", "")
			if tt.status == 429 {
				wantRefusal(t, e, rec, quotaEnvelope)
			} else if rec.Code != tt.status {
				t.Fatalf("compact = %d %s", rec.Code, rec.Body)
			}
			if diff := cmp.Diff(tt.want, testkit.QuotaUsage(t, acct, "t1", "lm-small")); diff != "" {
				t.Errorf("Usage mismatch (-want +got):\n%s", diff)
			}
			if got := e.get(t, "plain", "u1", s.ID); got.Status != tt.wantState || len(got.Messages) != 6 {
				t.Errorf("session %s with %d messages; want %s with 6", got.Status, len(got.Messages), tt.wantState)
			}
		})
	}
}

func TestQuotaSessionMessageRefused(t *testing.T) {
	var acct *quota.Accountant
	e := newEnv(t, nil, withQuota(&acct, &auth.Tenant{ID: "t1", Quotas: map[string]auth.Quota{"lm-small": {RequestsPerDay: 1}}}))
	s := e.create(t, "plain", "u1", "")
	e.say(t, "plain", "u1", s.ID, "one")
	wantRefusal(t, e, e.do(t, "POST", "/a1/agents/plain/sessions/"+s.ID+"/messages", "u1", `{"message":"two","stream":true}`), quotaEnvelope)
	if got := e.get(t, "plain", "u1", s.ID); len(got.Messages) != 2 {
		t.Errorf("session holds %d messages; want the admitted turn's 2", len(got.Messages))
	}
}

func TestQuotaAgentCallRefused(t *testing.T) {
	// plain's alias lm-small has a token budget smaller than any reservation:
	// agent_call's nested chat is refused, and the caller's model gets the
	// refusal as the tool's error result.
	var acct *quota.Accountant
	e := newEnv(t, []reply{toolCalls(call{"c1", "agent_call", `{"agent":"plain","message":"x"}`}), text("ok")},
		withQuota(&acct, &auth.Tenant{ID: "t1", Quotas: map[string]auth.Quota{"lm-small": {TokensPerDay: 1}}}))
	rec := e.do(t, "POST", "/a1/agents/caller/chat", "", hello)
	if rec.Code != 200 || replyText(t, rec.Body.Bytes()) != "ok" {
		t.Fatalf("= %d %s", rec.Code, rec.Body)
	}
	msgs := e.up.messages(t, 1)
	want := `tool: {"error":{"code":"model_quota_exhausted","message":"The tenant's daily budget for this model is used up; it resets at midnight UTC (see Retry-After).","param":""}}`
	if got := msgs[len(msgs)-1]; got != want {
		t.Errorf("tool result %q; want %q", got, want)
	}
	if n := len(e.up.Calls()); n != 2 {
		t.Errorf("%d upstream calls; want 2 (the nested chat is not made)", n)
	}
	if diff := cmp.Diff(quota.Usage{}, testkit.QuotaUsage(t, acct, "t1", "lm-small")); diff != "" {
		t.Errorf("Usage mismatch (-want +got):\n%s", diff)
	}
}
