package quota_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store/memstore"
)

const pinned = "lm-4-scout-cloudB"

// ignoreCause drops the log-only Cause from comparisons of *errcat.Error.
var ignoreCause = cmpopts.IgnoreFields(errcat.Error{}, "Cause")

func cloudBMessage(alias string) string {
	return "The daily quota of model " + alias + " is used up; retry with one of available_fallbacks " +
		"as model, or after the reset at 00:00 UTC (see Retry-After)."
}

// exhaust admits requests of t for alias until one is refused, and returns that error.
func exhaust(t *testing.T, a *quota.Accountant, ten *auth.Tenant, alias string, reserve int64) error {
	t.Helper()
	m := lookup(t, testCatalog(t), alias)
	for range 1000 {
		if _, err := a.Admit(t.Context(), ten, m, reserve); err != nil {
			return err
		}
	}
	t.Fatalf("Admit(%s, %s) never refused", ten.ID, alias)
	return nil
}

func TestCloudBDailyQuotaExhausted(t *testing.T) {
	tests := []struct {
		name      string
		models    []string // allowlist; nil allows every alias
		quotas    map[string]auth.Quota
		use       map[string]int // requests to admit first, by alias
		noCatalog bool
		want      []string
	}{
		{name: "every alias allowed",
			want: []string{"lm-4-scout", "lm-4-scout-local", "lm-4-scout-cloudA",
				"lm-vision", "lm-text-8k", "lm-reasoner", "lm-old"}},
		{name: "allowlist filters",
			models: []string{pinned, "lm-free", "lm-vision", "lm-4-scout-local", "lm-embed"},
			want:   []string{"lm-4-scout-local", "lm-vision"}},
		{name: "exhausted fallbacks are left out",
			quotas: map[string]auth.Quota{
				"lm-4-scout-local": {RequestsPerDay: 1}, // used up below
				"lm-vision":        {TokensPerDay: 99},  // cannot take the same reserve of 100
				"lm-reasoner":      {TokensPerDay: 100, RequestsPerDay: 5},
			},
			use:  map[string]int{"lm-4-scout-local": 1},
			want: []string{"lm-4-scout", "lm-4-scout-cloudA", "lm-text-8k", "lm-reasoner", "lm-old"}},
		{name: "no fallback allowed", models: []string{pinned}, want: []string{}},
		{name: "no catalog", noCatalog: true, want: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cat := testCatalog(t)
			a := newOver(t, memstore.New(), clock.NewFake(noon), cat)
			if tc.noCatalog {
				a = newOver(t, memstore.New(), clock.NewFake(noon), nil)
			}
			quotas := map[string]auth.Quota{pinned: {RequestsPerDay: 2}}
			for k, v := range tc.quotas {
				quotas[k] = v
			}
			acme := &auth.Tenant{ID: "acme", Models: tc.models, Quotas: quotas}
			for alias, n := range tc.use {
				for range n {
					if _, err := a.Admit(t.Context(), acme, lookup(t, cat, alias), 100); err != nil {
						t.Fatal(err)
					}
				}
			}
			err := exhaust(t, a, acme, pinned, 100)
			want := &errcat.Error{
				Code: errcat.CloudBDailyQuotaExhausted, Param: "model", Message: cloudBMessage(pinned),
				RetryAfter: 12 * 3600,
				Extra:      map[string]any{"available_fallbacks": tc.want},
			}
			if diff := cmp.Diff(want, err, ignoreCause); diff != "" {
				t.Errorf("Admit error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrorBodies checks both errors as the client sees them, through errcat.Write.
func TestErrorBodies(t *testing.T) {
	modelBody := func() map[string]any {
		return map[string]any{
			"error": map[string]any{"type": "rate_limit_error", "code": "model_quota_exhausted",
				"message": "The tenant's daily budget for this model is used up; it resets at midnight UTC (see Retry-After).",
				"param":   nil, "doc_url": "/docs/errors#model_quota_exhausted"},
			"gw_code": "model_quota_exhausted",
		}
	}
	tests := []struct {
		name  string
		alias string
		quota auth.Quota
		at    time.Time
		want  map[string]any
		retry string
	}{
		{"fallback chain, request budget", "lm-4-scout", auth.Quota{RequestsPerDay: 1}, noon, modelBody(), "43200"},
		{"alias naming a provider, token budget", "lm-4-scout-cloudA", auth.Quota{TokensPerDay: 500},
			noon.Add(11*time.Hour + 59*time.Minute + 30*time.Second), modelBody(), "30"},
		{"chain ending on cloudB is not pinned", "lm-text-8k", auth.Quota{TokensPerDay: 500}, noon, modelBody(), "43200"},
		{"pinned to cloudB", pinned, auth.Quota{TokensPerDay: 500, RequestsPerDay: 7},
			noon.Add(11*time.Hour + 59*time.Minute + 30*time.Second),
			map[string]any{
				"error": map[string]any{"type": "rate_limit_error", "code": "cloudB_daily_quota_exhausted",
					"message": cloudBMessage(pinned), "param": "model", "doc_url": "/docs/errors#cloudB_daily_quota_exhausted"},
				"gw_code":             "cloudB_daily_quota_exhausted",
				"available_fallbacks": []any{"lm-4-scout-local"},
			}, "30"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newOver(t, memstore.New(), clock.NewFake(tc.at), testCatalog(t))
			acme := &auth.Tenant{ID: "acme", Models: []string{tc.alias, "lm-4-scout-local"},
				Quotas: map[string]auth.Quota{tc.alias: tc.quota}}
			err := exhaust(t, a, acme, tc.alias, 100)

			rec := httptest.NewRecorder()
			errcat.Write(rec, err)
			if rec.Code != 429 {
				t.Errorf("status = %d, want 429", rec.Code)
			}
			if got := rec.Header().Get("Retry-After"); got != tc.retry {
				t.Errorf("Retry-After = %q, want %q", got, tc.retry)
			}
			var got map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
			if errcat.CodeOf(err) == errcat.ModelQuotaExhausted {
				msg := got["error"].(map[string]any)["message"].(string)
				for _, leak := range []string{"local", "cloud", "lm-", "token"} {
					if strings.Contains(strings.ToLower(msg), leak) {
						t.Errorf("message %q names %q", msg, leak)
					}
				}
				if strings.ContainsAny(msg, "0123456789") {
					t.Errorf("message %q has a number", msg)
				}
			}
		})
	}
}

func TestRetryAfterUntilMidnightUTC(t *testing.T) {
	midnight := time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		at   time.Time
		want int
	}{
		{midnight.Add(-30 * time.Second), 30},
		{midnight.Add(-30*time.Second - 500*time.Millisecond), 31}, // rounded up
		{midnight.Add(-time.Millisecond), 1},
		{midnight, 86400},
		{midnight.Add(time.Nanosecond), 86400},
		{noon, 43200},
		// The clock's zone does not matter: 23:59:30 UTC is 01:59:30 in UTC+2.
		{midnight.Add(-30 * time.Second).In(time.FixedZone("UTC+2", 2*3600)), 30},
	}
	for _, tc := range tests {
		for _, alias := range []string{"lm-4-scout", pinned} {
			t.Run(tc.at.Format(time.RFC3339Nano)+"/"+alias, func(t *testing.T) {
				a := newOver(t, memstore.New(), clock.NewFake(tc.at), testCatalog(t))
				err := exhaust(t, a, tenant("acme", map[string]auth.Quota{alias: {RequestsPerDay: 1}}), alias, 0)
				if got := errcat.As(err).RetryAfter; got != tc.want {
					t.Errorf("RetryAfter = %d, want %d", got, tc.want)
				}
			})
		}
	}
}

func TestDayRollover(t *testing.T) {
	a, fc, cat := newAccountant(t, time.Date(2025, 6, 1, 23, 59, 30, 0, time.UTC))
	m := lookup(t, cat, "lm-4-scout")
	acme := tenant("acme", map[string]auth.Quota{m.Alias: {TokensPerDay: 100, RequestsPerDay: 2}})
	ctx := t.Context()

	first, err := a.Admit(ctx, acme, m, 40)
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.Admit(ctx, acme, m, 40)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Admit(ctx, acme, m, 0)
	if e := errcat.As(err); e.Code != errcat.ModelQuotaExhausted || e.RetryAfter != 30 {
		t.Fatalf("Admit at 23:59:30 = %v (Retry-After %d); want model_quota_exhausted, 30", err, e.RetryAfter)
	}

	fc.Advance(30 * time.Second) // 00:00:00 of the next day
	if diff := cmp.Diff(quota.Usage{}, usage(t, a, "acme", m.Alias)); diff != "" {
		t.Errorf("Usage after midnight mismatch (-want +got):\n%s", diff)
	}
	// Yesterday's tickets settle against yesterday's counter.
	first.Settle(ctx, 40)
	second.Cancel(ctx)
	if diff := cmp.Diff(quota.Usage{}, usage(t, a, "acme", m.Alias)); diff != "" {
		t.Errorf("Usage after settling yesterday's tickets mismatch (-want +got):\n%s", diff)
	}
	// Today's budget is whole.
	today, err := a.Admit(ctx, acme, m, 100)
	if err != nil {
		t.Fatalf("Admit after midnight = %v; want a ticket", err)
	}
	today.Settle(ctx, 60)
	if _, err := a.Admit(ctx, acme, m, 40); err != nil {
		t.Fatalf("second Admit after midnight = %v; want a ticket", err)
	}
	if diff := cmp.Diff(quota.Usage{Requests: 2, Tokens: 60, Reserved: 40}, usage(t, a, "acme", m.Alias)); diff != "" {
		t.Errorf("Usage of the new day mismatch (-want +got):\n%s", diff)
	}

	// A clock stepping back does not bring yesterday back.
	fc.Advance(-time.Minute)
	if diff := cmp.Diff(quota.Usage{Requests: 2, Tokens: 60, Reserved: 40}, usage(t, a, "acme", m.Alias)); diff != "" {
		t.Errorf("Usage after the clock stepped back mismatch (-want +got):\n%s", diff)
	}
	if _, err := a.Admit(ctx, acme, m, 0); errcat.CodeOf(err) != errcat.ModelQuotaExhausted {
		t.Errorf("Admit after the clock stepped back = %v; want today's model_quota_exhausted", err)
	}
}
