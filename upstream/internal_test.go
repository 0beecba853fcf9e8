package upstream

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRewriteJSONModel(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"model":"a","x":1}`, `{"model":"NEW","x":1}`},
		{`{"model":"a"}`, `{"model":"NEW"}`},
		{`{"model":""}`, `{"model":"NEW"}`},
		// Not the fast path: escapes, no comma, other shapes.
		{`{"model":"a\"b","x":1}`, `{"model":"NEW","x":1}`},
		{`{"model":"a" ,"x":1}`, `{"model":"NEW","x":1}`},
		{`{"model":1,"x":1}`, `{"model":"NEW","x":1}`},
		{`{"x":{"model":"keep"}}`, `{"model":"NEW","x":{"model":"keep"}}`},
	}
	for _, tt := range tests {
		got, err := rewriteJSONModel([]byte(tt.in), []byte(`"NEW"`))
		if err != nil {
			t.Errorf("rewriteJSONModel(%s): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, string(got)); diff != "" {
			t.Errorf("rewriteJSONModel(%s) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
	for _, bad := range []string{`{"model":"a"`, `[]`, `null`, `"s"`} {
		if _, err := rewriteJSONModel([]byte(bad), []byte(`"NEW"`)); err == nil {
			t.Errorf("rewriteJSONModel(%s) succeeded", bad)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want int
	}{
		{"", 0}, {"soon", 0}, {"0", 1}, {"1", 1}, {"2.1", 3}, {" 30 ", 30},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90},
		{now.Add(-time.Minute).Format(http.TimeFormat), 1},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestUpstreamReason(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"error":{"message":"too long","type":"invalid_request_error"}}`, "too long"},
		{`{"error":"model not found"}`, "model not found"},
		{`{"message":"bad\n\n  input"}`, "bad input"},
		{`{"detail":"Not Found"}`, "Not Found"},
		{`{"detail":[{"loc":["body"]}]}`, ""},
		{`{"error":{"code":500}}`, ""},
		{"plain\ttext", "plain text"},
		{"<!DOCTYPE html><html>", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := upstreamReason([]byte(tt.in)); got != tt.want {
			t.Errorf("upstreamReason(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	s := newSanitizer(Backends{
		LocalURL: "http://10.0.0.5:11434/v1", CloudAURL: "https://api.acme-inference.com/v1", CloudAAPIKey: "k-AAAA",
		CloudBURL: "https://openhost.example/api/v1", CloudBAPIKey: "zzzz-secret",
	})
	tests := []struct{ in, want string }{
		{"key k-AAAA is invalid", "key [redacted] is invalid"},
		{"Incorrect API key provided: sk-proj-abcdefgh1234.", "Incorrect API key provided: [redacted]."},
		{"see https://platform.acme-inference.com/docs?x=1 for help", "see [url] for help"},
		{"connect to 10.0.0.5:11434 failed", "connect to [host] failed"},
		{"connect to localhost:8080 failed", "connect to [host] failed"},
		{"Acme-Inference rejected the request via openhost.example", "upstream rejected the request via [host]"},
		{"quota for cloudB exceeded (cloudA too)", "quota for upstream exceeded (upstream too)"},
		{"Authorization: Bearer abc.def-ghi", "Authorization: Bearer [redacted]"},
		{"zzzz-secret leaked", "[redacted] leaked"},
		{"messages[0].content must be a string", "messages[0].content must be a string"},
		{"max_tokens must be at least 1, got 0.5", "max_tokens must be at least 1, got 0.5"},
	}
	for _, tt := range tests {
		if got := s.sanitize(tt.in); got != tt.want {
			t.Errorf("sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := s.sanitizeKeys("dial tcp 10.0.0.5:11434 with k-AAAA"); got != "dial tcp 10.0.0.5:11434 with [redacted]" {
		t.Errorf("sanitizeKeys = %q", got)
	}
}

// TestProbeTimeoutDefault pins the default probe time-out (the spec's 1 s),
// which the tests of a hanging backend do not wait for.
func TestProbeTimeoutDefault(t *testing.T) {
	t.Parallel()
	cat, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(cat, Backends{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.probeTimeout != time.Second {
		t.Errorf("default probe time-out = %v, want 1s", r.probeTimeout)
	}
}

// TestSetHeadersShareNoCapacity checks that the headers setHeaders writes
// into one array stay apart: adding a value to one leaves the next alone.
func TestSetHeadersShareNoCapacity(t *testing.T) {
	h := http.Header{}
	(&Router{}).setHeaders(h, &Request{RequestID: "req-1", Stream: true}, &target{authorization: "Bearer k"})
	for _, k := range []string{"Content-Type", "Accept", "X-Request-Id", "Authorization"} {
		h.Add(k, "added")
	}
	want := http.Header{
		"Content-Type":  {"application/json", "added"},
		"Accept":        {"text/event-stream", "added"},
		"X-Request-Id":  {"req-1", "added"},
		"Authorization": {"Bearer k", "added"},
		"User-Agent":    {"chatgw"},
	}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}
