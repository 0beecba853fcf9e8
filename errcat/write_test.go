package errcat_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/errcat"
)

// envelope builds the expected body map; param "" means null.
func envelope(typ, code, message, param string) map[string]any {
	var p any
	if param != "" {
		p = param
	}
	return map[string]any{
		"error":   map[string]any{"type": typ, "code": code, "message": message, "param": p, "doc_url": "/docs/errors#" + code},
		"gw_code": code,
	}
}

// with returns m plus top-level extra fields.
func with(m map[string]any, extra map[string]any) map[string]any {
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantRetry  string // Retry-After header, "" for none
		wantBody   map[string]any
		wantCode   errcat.Code // code of the returned *Error
	}{
		{
			name:       "param and message",
			err:        errcat.New(errcat.MissingField, "headers.gw-user-id", "The GW-User-Id header is required."),
			wantStatus: 400,
			wantBody:   envelope("invalid_request_error", "missing_field", "The GW-User-Id header is required.", "headers.gw-user-id"),
			wantCode:   errcat.MissingField,
		},
		{
			name:       "no message uses the title, no param is null",
			err:        &errcat.Error{Code: errcat.RouteNotFound},
			wantStatus: 404,
			wantBody:   envelope("not_found_error", "route_not_found", "Route not found", ""),
			wantCode:   errcat.RouteNotFound,
		},
		{
			name:       "rate limit: fixed message and Retry-After",
			err:        &errcat.Error{Code: errcat.RateLimitExceeded, Message: "slow down", RetryAfter: 3},
			wantStatus: 429,
			wantRetry:  "3",
			wantBody:   envelope("rate_limit_error", "rate_limit_exceeded", "Rate limit exceeded", ""),
			wantCode:   errcat.RateLimitExceeded,
		},
		{
			name: "cloudB quota: available_fallbacks top-level",
			err: &errcat.Error{Code: errcat.CloudBDailyQuotaExhausted, Param: "model", Message: "Daily quota reached.",
				RetryAfter: 3600, Extra: map[string]any{"available_fallbacks": []string{"lm-4-scout-local", "lm-4-scout-cloudA"}}},
			wantStatus: 429,
			wantRetry:  "3600",
			wantBody: with(envelope("rate_limit_error", "cloudB_daily_quota_exhausted", "Daily quota reached.", "model"),
				map[string]any{"available_fallbacks": []any{"lm-4-scout-local", "lm-4-scout-cloudA"}}),
			wantCode: errcat.CloudBDailyQuotaExhausted,
		},
		{
			name: "consent: required_consents top-level",
			err: &errcat.Error{Code: errcat.CloudConsentRequired, Extra: map[string]any{
				"required_consents": []map[string]string{{"content_hash": "sha256:ab", "doc_name": "plan.txt"}}}},
			wantStatus: 409,
			wantBody: with(envelope("conflict_error", "cloud_consent_required", "Cloud consent required", ""),
				map[string]any{"required_consents": []any{map[string]any{"content_hash": "sha256:ab", "doc_name": "plan.txt"}}}),
			wantCode: errcat.CloudConsentRequired,
		},
		{
			name:       "Extra cannot replace error or gw_code",
			err:        &errcat.Error{Code: errcat.AgentBusy, Extra: map[string]any{"error": "x", "gw_code": "y", "run_id": "r1"}},
			wantStatus: 409,
			wantBody:   with(envelope("conflict_error", "agent_busy", "Agent busy", ""), map[string]any{"run_id": "r1"}),
			wantCode:   errcat.AgentBusy,
		},
		{
			name:       "upstream_bad_request passes the upstream 4xx on",
			err:        &errcat.Error{Code: errcat.UpstreamBadRequest, Status: 422, Message: "response_format not supported"},
			wantStatus: 422,
			wantBody:   envelope("invalid_request_error", "upstream_bad_request", "response_format not supported", ""),
			wantCode:   errcat.UpstreamBadRequest,
		},
		{
			name:       "upstream 429 passes Retry-After on",
			err:        &errcat.Error{Code: errcat.UpstreamBadRequest, Status: 429, RetryAfter: 7, Message: "too many requests"},
			wantStatus: 429,
			wantRetry:  "7",
			wantBody:   envelope("invalid_request_error", "upstream_bad_request", "too many requests", ""),
			wantCode:   errcat.UpstreamBadRequest,
		},
		{
			name:       "upstream_bad_request ignores a non-4xx override",
			err:        &errcat.Error{Code: errcat.UpstreamBadRequest, Status: 502, Message: "bad"},
			wantStatus: 400,
			wantBody:   envelope("invalid_request_error", "upstream_bad_request", "bad", ""),
			wantCode:   errcat.UpstreamBadRequest,
		},
		{
			name:       "other codes ignore Status",
			err:        &errcat.Error{Code: errcat.Forbidden, Status: 418},
			wantStatus: 403,
			wantBody:   envelope("permission_error", "forbidden", "Forbidden", ""),
			wantCode:   errcat.Forbidden,
		},
		{
			name:       "internal hides message and cause",
			err:        &errcat.Error{Code: errcat.InternalError, Message: "secret-message", Cause: errors.New("secret-cause")},
			wantStatus: 500,
			wantBody:   envelope("api_error", "internal_error", "Internal server error", ""),
			wantCode:   errcat.InternalError,
		},
		{
			name:       "storage hides message and cause",
			err:        &errcat.Error{Code: errcat.StorageError, Message: "secret-message", Cause: errors.New("bolt: secret-cause")},
			wantStatus: 500,
			wantBody:   envelope("api_error", "storage_error", "Storage error", ""),
			wantCode:   errcat.StorageError,
		},
		{
			name:       "Storage constructor",
			err:        fmt.Errorf("store.AppendTurn: %w", errcat.Storage(errors.New("secret-cause"))),
			wantStatus: 500,
			wantBody:   envelope("api_error", "storage_error", "Storage error", ""),
			wantCode:   errcat.StorageError,
		},
		{
			name:       "wrapped *Error",
			err:        fmt.Errorf("conversation.Get: %w", errcat.New(errcat.ConversationNotFound, "conversation_id", "No such conversation.")),
			wantStatus: 404,
			wantBody:   envelope("not_found_error", "conversation_not_found", "No such conversation.", "conversation_id"),
			wantCode:   errcat.ConversationNotFound,
		},
		{
			name: "unknown code answers internal_error",
			err: &errcat.Error{Code: "no_such_code", Param: "x", Message: "secret-message", RetryAfter: 5,
				Extra: map[string]any{"leak": "secret-extra"}},
			wantStatus: 500,
			wantBody:   envelope("api_error", "internal_error", "Internal server error", ""),
			wantCode:   errcat.InternalError,
		},
		{
			name:       "plain error answers internal_error",
			err:        errors.New("secret-cause"),
			wantStatus: 500,
			wantBody:   envelope("api_error", "internal_error", "Internal server error", ""),
			wantCode:   errcat.InternalError,
		},
		{
			name:       "nil error answers internal_error",
			err:        nil,
			wantStatus: 500,
			wantBody:   envelope("api_error", "internal_error", "Internal server error", ""),
			wantCode:   errcat.InternalError,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			got := errcat.Write(rec, tc.err)

			if rec.Code != tc.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tc.wantStatus)
			}
			if s := errcat.Status(tc.err); s != tc.wantStatus {
				t.Errorf("Status() = %d, want %d", s, tc.wantStatus)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			if ra := rec.Header().Get("Retry-After"); ra != tc.wantRetry {
				t.Errorf("Retry-After = %q, want %q", ra, tc.wantRetry)
			}
			raw := rec.Body.String()
			if strings.Contains(raw, "secret") {
				t.Errorf("body leaks internal text: %s", raw)
			}
			var body map[string]any
			if err := json.Unmarshal([]byte(raw), &body); err != nil {
				t.Fatalf("body is not JSON: %v: %s", err, raw)
			}
			if diff := cmp.Diff(tc.wantBody, body); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
			if got == nil || got.Code != tc.wantCode {
				t.Errorf("Write returned %v, want code %q", got, tc.wantCode)
			}
			if tc.err != nil && !errors.Is(got, tc.err) && !errors.Is(tc.err, got) {
				t.Errorf("returned error %v does not keep %v for the log", got, tc.err)
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int
	}{
		{-5 * time.Second, 1},
		{0, 1},
		{time.Nanosecond, 1},
		{time.Second, 1},
		{1500 * time.Millisecond, 2},
		{2 * time.Second, 2},
		{59*time.Minute + 59*time.Second + time.Millisecond, 3600},
	}
	for _, tc := range tests {
		if got := errcat.RetryAfterSeconds(tc.d); got != tc.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestErrorAndCodeOf(t *testing.T) {
	cause := errors.New("disk full")
	tests := []struct {
		name     string
		err      error
		wantCode errcat.Code
		wantText string
	}{
		{"New", errcat.New(errcat.InvalidField, "body.x", "Bad x."), errcat.InvalidField, "invalid_field: Bad x."},
		{"Newf", errcat.Newf(errcat.InvalidField, "query.limit", "limit %d over %d", 600, 500), errcat.InvalidField, "invalid_field: limit 600 over 500"},
		{"title when no message", &errcat.Error{Code: errcat.Forbidden}, errcat.Forbidden, "forbidden: Forbidden"},
		{"Storage keeps the cause for logs", errcat.Storage(cause), errcat.StorageError, "storage_error: Storage error: disk full"},
		{"Internal", errcat.Internal(cause), errcat.InternalError, "internal_error: Internal server error: disk full"},
		{"plain error", cause, errcat.InternalError, "disk full"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errcat.CodeOf(tc.err); got != tc.wantCode {
				t.Errorf("CodeOf = %q, want %q", got, tc.wantCode)
			}
			if got := tc.err.Error(); got != tc.wantText {
				t.Errorf("Error() = %q, want %q", got, tc.wantText)
			}
		})
	}
	if !errors.Is(errcat.Storage(cause), cause) {
		t.Error("Storage(cause) does not unwrap to cause")
	}
}

// TestWriteFormat: a route's Format decides the body alone; the status,
// Content-Type and Retry-After, and what the client may see of the error,
// are the catalog's whatever the Format.
func TestWriteFormat(t *testing.T) {
	var seen []errcat.Public
	format := func(p errcat.Public) []byte {
		seen = append(seen, p)
		return []byte(`{"shape":"other"}`)
	}
	tests := []struct {
		err        error
		wantStatus int
		wantRetry  string
		want       errcat.Public
	}{
		{errcat.New(errcat.MissingField, "max_tokens", "max_tokens is required."), 400, "",
			errcat.Public{Status: 400, Type: errcat.TypeInvalidRequest, Code: errcat.MissingField, Message: "max_tokens is required.", Param: "max_tokens", DocURL: "/docs/errors#missing_field"}},
		{&errcat.Error{Code: errcat.RateLimitExceeded, Message: "slow down", RetryAfter: 3}, 429, "3",
			errcat.Public{Status: 429, Type: errcat.TypeRateLimit, Code: errcat.RateLimitExceeded, Message: "Rate limit exceeded", DocURL: "/docs/errors#rate_limit_exceeded"}},
		{&errcat.Error{Code: errcat.UpstreamBadRequest, Status: 422, Message: "bad"}, 422, "",
			errcat.Public{Status: 422, Type: errcat.TypeInvalidRequest, Code: errcat.UpstreamBadRequest, Message: "bad", DocURL: "/docs/errors#upstream_bad_request"}},
		{&errcat.Error{Code: errcat.InternalError, Message: "secret", Cause: errors.New("secret")}, 500, "",
			errcat.Public{Status: 500, Type: errcat.TypeAPI, Code: errcat.InternalError, Message: "Internal server error", DocURL: "/docs/errors#internal_error"}},
		{&errcat.Error{Code: errcat.CloudConsentRequired, Extra: map[string]any{"required_consents": []string{"x"}}}, 409, "",
			errcat.Public{Status: 409, Type: errcat.TypeConflict, Code: errcat.CloudConsentRequired, Message: "Cloud consent required",
				DocURL: "/docs/errors#cloud_consent_required", Extra: map[string]any{"required_consents": []string{"x"}}}},
	}
	for _, tc := range tests {
		seen = nil
		rec := httptest.NewRecorder()
		errcat.WriteFormat(rec, tc.err, format)
		got := []any{rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("Retry-After"), rec.Body.String()}
		want := []any{tc.wantStatus, "application/json", tc.wantRetry, "{\"shape\":\"other\"}\n"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("WriteFormat(%v) answer mismatch (-want +got):\n%s", tc.err, diff)
		}
		if diff := cmp.Diff([]errcat.Public{tc.want}, seen); diff != "" {
			t.Errorf("WriteFormat(%v) Public mismatch (-want +got):\n%s", tc.err, diff)
		}
	}
	// nil is the gateway's envelope.
	rec := httptest.NewRecorder()
	errcat.WriteFormat(rec, errcat.New(errcat.Forbidden, "", "no"), nil)
	if want := `{"error":{"type":"permission_error","code":"forbidden","message":"no","param":null,"doc_url":"/docs/errors#forbidden"},"gw_code":"forbidden"}` + "\n"; rec.Body.String() != want {
		t.Errorf("WriteFormat(nil format) = %s, want %s", rec.Body, want)
	}
}
