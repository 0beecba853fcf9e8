package upstream_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	raw := func(status int, body, ct string) backend {
		return answers(upstreamtest.Reply{Status: status, Body: []byte(body), ContentType: ct})
	}
	tests := []struct {
		name                string
		alias               string
		local, cloudA, cldB backend
		want                *errcat.Error
	}{
		{"pinned 400 passes status and reason", "lm-4-scout-cloudA", ok(),
			answers(upstreamtest.Reply{Status: 400, ErrorMessage: "max_tokens is too large: 99999"}), ok(),
			&errcat.Error{Code: errcat.UpstreamBadRequest, Status: 400, Message: "max_tokens is too large: 99999"}},
		{"pinned 422", "lm-4-scout-local", status(422), ok(), ok(),
			&errcat.Error{Code: errcat.UpstreamBadRequest, Status: 422, Message: "Unprocessable Entity"}},
		{"429 passes Retry-After", "lm-4-scout-cloudB", ok(), ok(),
			answers(upstreamtest.Reply{Status: 429, RetryAfter: "7", ErrorMessage: "slow down"}),
			&errcat.Error{Code: errcat.UpstreamBadRequest, Status: 429, Message: "slow down", RetryAfter: 7}},
		{"429 fractional Retry-After rounds up", "lm-4-scout-cloudB", ok(), ok(),
			answers(upstreamtest.Reply{Status: 429, RetryAfter: "0.2"}),
			&errcat.Error{Code: errcat.UpstreamBadRequest, Status: 429, Message: "Too Many Requests", RetryAfter: 1}},
		{"429 on the last backend of the chain", "lm-4-scout", status(500), status(503),
			answers(upstreamtest.Reply{Status: 429, RetryAfter: "30", ErrorMessage: "daily quota"}),
			&errcat.Error{Code: errcat.UpstreamBadRequest, Status: 429, Message: "daily quota", RetryAfter: 30}},
		{"last answering backend wins over later refusals", "lm-4-scout",
			answers(upstreamtest.Reply{Status: 500, ErrorMessage: "model crashed"}),
			answers(upstreamtest.Reply{Status: 429, RetryAfter: "3", ErrorMessage: "busy"}), refused(),
			&errcat.Error{Code: errcat.UpstreamBadRequest, Status: 429, Message: "busy", RetryAfter: 3}},
		{"5xx everywhere gives the last one as 502", "lm-4-scout",
			answers(upstreamtest.Reply{Status: 500, ErrorMessage: "first"}), status(502),
			answers(upstreamtest.Reply{Status: 503, ErrorMessage: "out of GPUs"}),
			&errcat.Error{Code: errcat.UpstreamError, Message: "out of GPUs"}},
		{"5xx then refused", "lm-4-scout", answers(upstreamtest.Reply{Status: 500, ErrorMessage: "oom"}), refused(), refused(),
			&errcat.Error{Code: errcat.UpstreamError, Message: "oom"}},
		{"plain text body", "lm-4-scout-local", raw(500, "  backend\n exploded ", "text/plain"), ok(), ok(),
			&errcat.Error{Code: errcat.UpstreamError, Message: "backend exploded"}},
		{"string error field", "lm-4-scout-local", raw(404, `{"error":"model \"x\" not found, try pulling it first"}`, ""), ok(), ok(),
			&errcat.Error{Code: errcat.UpstreamBadRequest, Status: 404, Message: `model "x" not found, try pulling it first`}},
		{"HTML body is not passed on", "lm-4-scout-local", raw(502, "<html><body>nginx</body></html>", "text/html"), ok(), ok(),
			&errcat.Error{Code: errcat.UpstreamError, Message: "upstream answered 502 Bad Gateway"}},
		{"redirect is an upstream error", "lm-4-scout-local", status(307), ok(), ok(),
			&errcat.Error{Code: errcat.UpstreamError, Message: "Temporary Redirect"}},
		{"all refused", "lm-4-scout", refused(), refused(), refused(),
			&errcat.Error{Code: errcat.UpstreamUnavailable, Message: "no model backend could be reached"}},
		{"pinned refused", "lm-4-scout-cloudA", ok(), refused(), ok(),
			&errcat.Error{Code: errcat.UpstreamUnavailable, Message: "no model backend could be reached"}},
		{"silent backends then a refused one", "lm-4-scout",
			answers(upstreamtest.Reply{Hang: true}), answers(upstreamtest.Reply{Latency: 5 * time.Second}), refused(),
			&errcat.Error{Code: errcat.UpstreamTimeout, Message: "no model backend answered within the first-byte time-out"}},
		{"pinned backend silent", "lm-4-scout-local",
			answers(upstreamtest.Reply{Hang: true}), refused(), refused(),
			&errcat.Error{Code: errcat.UpstreamTimeout, Message: "no model backend answered within the first-byte time-out"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lu, _ := tt.local.start(t)
			au, _ := tt.cloudA.start(t)
			bu, _ := tt.cldB.start(t)
			// A row that wants upstream_timeout has no backend that answers:
			// the time-out decides only how long it waits.
			firstByte := time.Second
			if tt.want.Code == errcat.UpstreamTimeout {
				firstByte = silentTimeout
			}
			r, _ := newRouter(t, upstream.Backends{LocalURL: lu, CloudAURL: au, CloudBURL: bu,
				FirstByteTimeout: firstByte})
			_, err := r.Do(t.Context(), &upstream.Request{Alias: tt.alias, Path: "/chat/completions", Body: chatBody(tt.alias)})
			if diff := cmp.Diff(tt.want, asErr(t, err), ignoreCause); diff != "" {
				t.Errorf("Do() error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnknownAliasAndNoBackend(t *testing.T) {
	t.Parallel()
	r, _ := newRouter(t, upstream.Backends{})
	tests := []struct {
		alias string
		want  *errcat.Error
	}{
		{"no-such-model", &errcat.Error{Code: errcat.ModelNotInAllowlist, Param: "model", Message: `model "no-such-model" is not available`}},
		{"lm-4-scout", &errcat.Error{Code: errcat.ModelNotConfigured, Param: "model", Message: `Model "lm-4-scout" has no configured backend: ` +
			"set GATEWAY_LOCAL_URL or GATEWAY_CLOUDA_URL or GATEWAY_CLOUDB_URL (or GATEWAY_ROUTER_URL, an external router) and restart the gateway."}},
	}
	for _, tt := range tests {
		_, err := r.Do(t.Context(), &upstream.Request{Alias: tt.alias, Path: "/chat/completions", Body: chatBody(tt.alias)})
		if diff := cmp.Diff(tt.want, asErr(t, err), ignoreCause); diff != "" {
			t.Errorf("Do(%s) error mismatch (-want +got):\n%s", tt.alias, diff)
		}
	}
}

func TestTotalTimeout(t *testing.T) {
	t.Parallel()
	t.Run("before the headers", func(t *testing.T) {
		t.Parallel()
		local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Latency: 5 * time.Second}))
		cloudA := upstreamtest.New(t)
		r, logs := newRouter(t, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL,
			TotalTimeout: silentTimeout})
		var err error
		within(t, 3*time.Second, func() {
			_, err = r.Do(t.Context(), &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: chatBody("lm-4-scout")})
		})
		want := &errcat.Error{Code: errcat.UpstreamTimeout, Message: "upstream time-out reached"}
		if diff := cmp.Diff(want, asErr(t, err), ignoreCause); diff != "" {
			t.Errorf("Do() error mismatch (-want +got):\n%s", diff)
		}
		if n := cloudA.CallCount(); n != 0 {
			t.Errorf("cloudA got %d calls after the total time-out, want 0", n)
		}
		if !strings.Contains(logs.String(), `"outcome":"total_timeout"`) {
			t.Errorf("logs lack the total_timeout outcome:\n%s", logs)
		}
	})
	t.Run("across the attempts", func(t *testing.T) {
		t.Parallel()
		// The first backend fails after 300 ms; the second would answer
		// 450 ms after that, past the call's 600 ms but within 600 ms of
		// its own attempt: the time-out bounds the call, not each attempt.
		local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Status: 500, Latency: 300 * time.Millisecond}))
		cloudA := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Latency: 450 * time.Millisecond}))
		r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL, TotalTimeout: 600 * time.Millisecond})
		var err error
		within(t, 3*time.Second, func() {
			var resp *upstream.Response
			resp, err = r.Do(t.Context(), &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: chatBody("lm-4-scout")})
			if err == nil {
				resp.Body.Close()
			}
		})
		if got := asErr(t, err).Code; got != errcat.UpstreamTimeout {
			t.Errorf("Do() error code = %s, want %s", got, errcat.UpstreamTimeout)
		}
		if n := cloudA.CallCount(); n != 1 {
			t.Errorf("cloudA got %d calls, want 1 (the fallback)", n)
		}
	})
	t.Run("while reading the body", func(t *testing.T) {
		t.Parallel()
		// A stream of 1 s: its headers come at once, its end after the
		// total time-out.
		local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Chunks: 50, Interval: 20 * time.Millisecond}))
		r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL, TotalTimeout: quickTimeout})
		var err error
		within(t, 3*time.Second, func() {
			resp, doErr := r.Do(t.Context(), &upstream.Request{Alias: "lm-4-scout-local", Path: "/chat/completions",
				Body: []byte(`{"model":"lm-4-scout-local","stream":true}`), Stream: true})
			if doErr != nil {
				t.Fatalf("Do: %v (the headers come before the total time-out)", doErr)
			}
			defer resp.Body.Close()
			_, err = io.ReadAll(resp.Body)
		})
		if got := asErr(t, err).Code; got != errcat.UpstreamTimeout {
			t.Errorf("read error code = %s, want %s", got, errcat.UpstreamTimeout)
		}
		if err := local.AwaitCanceled(ctxWithTimeout(t, 2*time.Second), 1); err != nil {
			t.Errorf("the backend never saw the request end: %v", err)
		}
	})
}

func TestDroppedStream(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Chunks: 5, Drop: true, DropAfter: 2}))
	r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL})
	resp, err := r.Do(t.Context(), &upstream.Request{Alias: "lm-4-scout-local", Path: "/chat/completions",
		Body: []byte(`{"model":"lm-4-scout-local","stream":true}`), Stream: true})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	var readErr error
	for readErr == nil {
		_, readErr = resp.Body.Read(buf)
	}
	e := asErr(t, readErr)
	want := &errcat.Error{Code: errcat.UpstreamError, Message: "upstream connection lost"}
	if diff := cmp.Diff(want, e, ignoreCause); diff != "" {
		t.Errorf("read error mismatch (-want +got):\n%s", diff)
	}
	if _, err := resp.Body.Read(buf); err == nil {
		t.Error("Read after the drop succeeded")
	}
	if err := resp.Body.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := resp.Body.Read(buf); err == nil {
		t.Error("Read after Close succeeded")
	}
}

func TestCallerDeadlineIsATimeout(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Hang: true}))
	r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := r.Do(ctx, &upstream.Request{Alias: "lm-4-scout-local", Path: "/chat/completions", Body: chatBody("x")})
	if e := asErr(t, err); e.Code != errcat.UpstreamTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want upstream_timeout caused by context.DeadlineExceeded", err)
	}
	if got := errcat.Status(err); got != http.StatusGatewayTimeout {
		t.Errorf("status = %d, want 504", got)
	}
}

// TestAttemptLogsHoldNoUpstreamText: an error answer is logged as a summary
// and a transport error without the bytes the backend sent, in the attempt
// lines and in the error's cause (which the request log line shows).
func TestAttemptLogsHoldNoUpstreamText(t *testing.T) {
	t.Parallel()
	const secret = "SECRETupstream"
	body := `{"error":{"message":"bad key ` + secret + `","type":"invalid_request_error","code":"invalid_api_key"}}`
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Status: 500, Body: []byte(body)}))
	cloudA := upstreamtest.NotHTTPURL(t, "garbage "+secret)
	r, logs := newRouter(t, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA, CloudBURL: upstreamtest.RefusedURL(t)})
	_, err := r.Do(t.Context(), &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: chatBody("lm-4-scout"), RequestID: "r1"})
	if e := asErr(t, err); e.Code != errcat.UpstreamError || strings.Contains(e.Cause.Error(), secret) ||
		!strings.Contains(e.Cause.Error(), "answered 500: 102 bytes, error type=invalid_request_error code=invalid_api_key, sha256:") {
		t.Errorf("Do() = %v; want upstream_error whose cause summarises the local backend's body", err)
	}
	l := logs.String()
	lines := strings.Split(l, "\n")
	for _, want := range [][]string{
		{`"provider":"local","router_alias":"` + scoutLocal + `"`, `"outcome":"status","ms":`,
			`"status":500,"body":"102 bytes, error type=invalid_request_error code=invalid_api_key, sha256:`},
		{`"provider":"cloudA","router_alias":"` + scoutCloudA + `"`, `"outcome":"connect_error","ms":`,
			`"error":"net/http: HTTP/1.x transport connection broken: malformed HTTP status code \"…\""`},
		{`"provider":"cloudB","router_alias":"` + scoutCloudB + `"`, `"outcome":"connect_error","ms":`},
	} {
		if !slices.ContainsFunc(lines, func(line string) bool {
			return !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(line, w) })
		}) {
			t.Errorf("no log line holds all of %q", want)
		}
	}
	if strings.Contains(l, secret) {
		t.Errorf("logs hold the upstream's text:\n%s", l)
	}
}
