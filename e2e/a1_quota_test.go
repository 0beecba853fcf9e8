package e2e_test

// Quotas on /a1 agent chat: every upstream call of an agent counts against
// the tenant's daily budget for the agent's alias, the same budget as /v1 and
// /c1 (docs/decisions.md, /a1 agents and sessions: quotas).

import (
	"strconv"
	"testing"
)

func TestA1AgentQuota(t *testing.T) {
	t.Parallel()
	g := a1Start(t, nil)
	const ref = "docs/decisions.md /a1 quotas; spec Codes model_quota_exhausted"
	// quota's lm-4-scout-local allows 2 requests a day; plain uses that alias.
	wantStatus(t, g.post(t, "/a1/agents/plain/chat", tokQuota, "", userChat("hi")), 200, "agent chat within requests_per_day 2")
	wantStatus(t, g.post(t, "/v1/chat/completions", tokQuota, "", chatBody("lm-4-scout-local", "hi")), 200,
		"/v1 within requests_per_day 2: the budget is shared with agents")
	for _, stream := range []bool{false, true} {
		body := userChat("hi")
		body["stream"] = stream
		r := g.post(t, "/a1/agents/plain/chat", tokQuota, "", body)
		if wantErr(t, r, 429, "rate_limit_error", "model_quota_exhausted", noParam, ref+" (a JSON error, also when streaming)") {
			if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
				t.Errorf("agent chat 429 Retry-After %q, want whole seconds until 00:00 UTC", r.Header.Get("Retry-After"))
			}
		}
	}
	// The same tenant's /c1 is held to it too; another tenant is not affected.
	wantErr(t, g.post(t, "/c1/chat", tokQuota, "u", map[string]any{"message": "hi", "stream": false, "model": "lm-4-scout-local"}),
		429, "rate_limit_error", "model_quota_exhausted", noParam, ref)
	wantStatus(t, g.post(t, "/a1/agents/plain/chat", tokMember, "", userChat("hi")), 200, "quota is per tenant")
	if n := chatCalls(g.Local); n != 3 {
		t.Errorf("local received %d chat calls, want 3: a refused agent chat is not forwarded", n)
	}
}
