package pipeline_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/pipeline"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
)

// upstreamFunc is an upstream.Upstream of a function.
type upstreamFunc func(*upstream.Request) (*upstream.Response, error)

func (f upstreamFunc) Do(_ context.Context, req *upstream.Request) (*upstream.Response, error) {
	return f(req)
}

func catalog() *upstream.Catalog {
	return &upstream.Catalog{Models: []upstream.ModelInfo{{Alias: "lm", Kind: upstream.KindChat, ContextWindow: 1000,
		Backends: []upstream.BackendInfo{{Provider: "local", RouterAlias: "lm-local", Status: upstream.StatusAvailable}}}}}
}

// TestForward: a request that passed Check is admitted, forwarded with the
// checked body and relayed with the Answer's Capture and Commit; a quota
// refusal answers before any upstream call; a failed upstream call
// releases its reservation and still counts as a request.
func TestForward(t *testing.T) {
	fc := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cat := catalog()
	acct := quota.New(quota.Config{Store: memstore.New(), Clock: fc, Catalog: cat})
	var sent []string
	fail := false
	c := &pipeline.Chat{Catalog: cat, Quota: acct, Clock: fc, Upstream: upstreamFunc(func(req *upstream.Request) (*upstream.Response, error) {
		sent = append(sent, string(req.Body))
		if fail {
			return nil, errcat.New(errcat.UpstreamUnavailable, "", "down")
		}
		return testkit.JSONAnswer(testkit.Completion(`{"role":"assistant","content":"hi"}`, "stop")), nil
	})}
	tenant := &auth.Tenant{ID: "acme", Quotas: map[string]auth.Quota{"lm": {RequestsPerDay: 2, TokensPerDay: 100000}}}
	p := testkit.Member(tenant)
	forward := func(a pipeline.Answer) (relay.Result, int) {
		t.Helper()
		r := testkit.NewRequest(t, testkit.Request{Method: "POST", Target: "/", Principal: p})
		pf, err := c.Check(r, p, []byte(`{"messages":[{"role":"user","content":"hello"}],"model":"lm","max_tokens":10}`))
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		return c.Forward(w, r, p, pf, a), w.Code
	}

	var capture relay.Capture
	committed := false
	res, status := forward(pipeline.Answer{Capture: &capture, Commit: func(context.Context) error { committed = true; return nil }})
	if !res.Complete || status != 200 || !committed || capture.Content != "hi" || !res.Committed {
		t.Errorf("Forward() = %+v, status %d, committed %v, captured %q; want a complete, committed answer", res, status, committed, capture.Content)
	}
	if len(sent) != 1 || sent[0] != `{"model":"lm","messages":[{"role":"user","content":"hello"}],"max_tokens":10}` {
		t.Errorf("upstream got %q, want the checked body, model first", sent)
	}

	fail = true
	if res, status := forward(pipeline.Answer{}); res.Started || status != 503 || errcat.CodeOf(res.Err) != errcat.UpstreamUnavailable {
		t.Errorf("failed upstream: Forward() = %+v, status %d; want 503 upstream_unavailable", res, status)
	}
	fail = false
	if res, status := forward(pipeline.Answer{}); status != 429 || errcat.CodeOf(res.Err) != errcat.ModelQuotaExhausted || len(sent) != 2 {
		t.Errorf("over the quota: Forward() = %+v, status %d, %d upstream calls; want 429 model_quota_exhausted and no call", res, status, len(sent))
	}
	// The failed call counts as a request, its reservation released; the
	// answer's usage (2 tokens) was charged.
	if u := testkit.QuotaUsage(t, acct, "acme", "lm"); u != (quota.Usage{Requests: 2, Tokens: 2}) {
		t.Errorf("quota usage %+v, want 2 requests, 2 tokens, nothing reserved", u)
	}
}

// TestClientError: a pre-flight error's param is renamed for the client's
// API when the names have it, and the error is kept as it is otherwise.
func TestClientError(t *testing.T) {
	names := map[string]string{"max_tokens": "max_output_tokens"}
	err := pipeline.ClientError(errcat.New(errcat.MaxTokensBelowMinimum, "max_tokens", "too low"), names)
	if e := errcat.As(err); e.Code != errcat.MaxTokensBelowMinimum || e.Param != "max_output_tokens" || e.Message != "too low" {
		t.Errorf("renamed: %s %q %q", e.Code, e.Param, e.Message)
	}
	orig := errcat.New(errcat.InvalidField, "temperature", "x")
	if got := pipeline.ClientError(orig, names); got != error(orig) {
		t.Errorf("unrenamed: %v, want the error itself", got)
	}
}

// TestNew: a Config's nil Clock is the wall clock, and the consent grants
// are kept in the store only when there is one.
func TestNew(t *testing.T) {
	if c := pipeline.New(pipeline.Chat{Catalog: catalog()}, nil); c.Clock == nil || c.Consents != nil {
		t.Errorf("New without clock and store: Clock %v, Consents %v; want the wall clock and no grants kept", c.Clock, c.Consents)
	}
	fc := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	c := pipeline.New(pipeline.Chat{Catalog: catalog(), Clock: fc}, memstore.New())
	if _, ok := c.Consents.(*preflight.StoreConsents); !ok || c.Clock != fc {
		t.Errorf("New with clock and store: Clock %v, Consents %T; want the fake clock and the store's grants", c.Clock, c.Consents)
	}
}

// TestCheckRequest: without a principal, with a read that fails and with a
// body the checks refuse, CheckRequest writes the error (a check's param
// renamed for the client's API) and returns no result; otherwise it
// returns the caller and the checked request, having written nothing.
func TestCheckRequest(t *testing.T) {
	c := pipeline.New(pipeline.Chat{Catalog: catalog()}, nil)
	p := testkit.Member(&auth.Tenant{ID: "acme"})
	names := map[string]string{"max_tokens": "max_output_tokens"}
	body := func(b string) func(*auth.Principal) ([]byte, error) {
		return func(got *auth.Principal) ([]byte, error) {
			if got != p {
				t.Errorf("read got principal %v, want the request's", got)
			}
			return []byte(b), nil
		}
	}
	tests := []struct {
		name      string
		principal *auth.Principal
		read      func(*auth.Principal) ([]byte, error)
		want      testkit.Error // zero: checked
	}{
		{"no principal", nil, body(`{}`), testkit.WantError(errcat.InternalError, "")},
		{"read fails", p, func(*auth.Principal) ([]byte, error) { return nil, errcat.New(errcat.InvalidField, "input", "bad") },
			testkit.WantError(errcat.InvalidField, "input")},
		{"check renamed", p, body(`{"model":"lm","messages":[{"role":"user","content":"hi"}],"max_tokens":0}`),
			testkit.WantError(errcat.MaxTokensBelowMinimum, "max_output_tokens")},
		{"checked", p, body(`{"model":"lm","messages":[{"role":"user","content":"hi"}],"max_tokens":10}`), testkit.Error{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testkit.NewRequest(t, testkit.Request{Method: "POST", Target: "/", Principal: tt.principal})
			w := httptest.NewRecorder()
			gotP, pf := c.CheckRequest(w, r, names, tt.read)
			if tt.want == (testkit.Error{}) {
				if gotP != p || pf == nil || pf.Model.Alias != "lm" || w.Body.Len() != 0 {
					t.Errorf("CheckRequest() = %v, %+v, wrote %q; want the caller and the checked request", gotP, pf, w.Body)
				}
				return
			}
			if pf != nil {
				t.Errorf("CheckRequest() result %+v, want nil after an error", pf)
			}
			testkit.CheckError(t, w, tt.want)
		})
	}
}
