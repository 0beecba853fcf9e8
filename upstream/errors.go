package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/redact"
)

const (
	maxErrorBody   = 64 << 10 // bytes of an error answer read for its reason
	maxReasonRunes = 300      // length of the reason passed to clients
)

// unavailable is the error when no backend of the chain could be reached.
func unavailable(msg string, cause error) *errcat.Error {
	return &errcat.Error{Code: errcat.UpstreamUnavailable, Message: msg, Cause: cause}
}

// errTotalTimeout is the cause of an attempt's context when the call's total
// time-out passed; it is a context.DeadlineExceeded, which the transport
// returns it as.
var errTotalTimeout = fmt.Errorf("upstream: total time-out passed: %w", context.DeadlineExceeded)

// errFirstByteTimeout is the cause of an attempt's context when no response
// headers came within the first-byte time-out (or an error answer's body did
// not come within it).
var errFirstByteTimeout = fmt.Errorf("upstream: first-byte time-out passed: %w", context.DeadlineExceeded)

// totalPassed reports whether actx, an attempt's context, ended because the
// call's total time-out passed: a context keeps the cause of its first
// cancellation, so a later cancel (the first-byte timer, Close) does not
// hide it.
func totalPassed(actx context.Context) bool {
	return actx.Err() != nil && context.Cause(actx) == errTotalTimeout
}

// timeoutError is the error when the total upstream time-out passed.
func timeoutError(cause error) *errcat.Error {
	return &errcat.Error{Code: errcat.UpstreamTimeout, Message: "upstream time-out reached", Cause: cause}
}

// firstByteTimeout is the error when a backend sent nothing before the
// first-byte time-out: a time-out, not a failure to connect.
func firstByteTimeout(cause error) *errcat.Error {
	return &errcat.Error{Code: errcat.UpstreamTimeout, Message: "no model backend answered within the first-byte time-out", Cause: cause}
}

// callerDone is the error when the caller's context ended: upstream_timeout for a
// deadline, else upstream_unavailable whose cause is context.Canceled (or the
// context's cause), so errors.Is(err, context.Canceled) holds.
func callerDone(ctx context.Context) *errcat.Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return timeoutError(context.Cause(ctx))
	}
	return unavailable("request cancelled", context.Cause(ctx))
}

// answerError turns a non-2xx answer into the client-visible error: 4xx ->
// upstream_bad_request with the same status (and Retry-After on 429), anything
// else -> 502 upstream_error; the message is the sanitised upstream reason.
// It reads (a bounded part of) and closes the body. The message is for the
// client only: the cause, and summary for the attempt's log line, describe
// the body with redact.Body, because an upstream's reason may quote the key
// or the prompt it was sent.
func (r *Router) answerError(resp *http.Response, t *target) (e *errcat.Error, summary string) {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	msg := truncateRunes(r.sanitize(upstreamReason(data)), maxReasonRunes)
	if msg == "" {
		msg = fmt.Sprintf("upstream answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	summary = redact.Body(data)
	cause := fmt.Errorf("backend %s (%s) answered %d: %s", t.provider, t.routerAlias, resp.StatusCode, summary)
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		e := &errcat.Error{Code: errcat.UpstreamBadRequest, Status: resp.StatusCode, Message: msg, Cause: cause}
		if resp.StatusCode == http.StatusTooManyRequests {
			e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		return e, summary
	}
	return &errcat.Error{Code: errcat.UpstreamError, Message: msg, Cause: cause}, summary
}

// transportText is what a log line says of a failed attempt's transport
// error: its text without the request URL (the line names the backend),
// without what the backend sent (net/http quotes the bytes of an answer that
// is not HTTP into its errors; redact.Quotes drops them) and without the
// configured API keys.
func (r *Router) transportText(err error) string {
	if err == nil { // no headers within the first-byte time-out
		return "no answer"
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return r.san.sanitizeKeys(redact.Quotes(err.Error()))
}

// transportCause is err as the cause of an attempt's error: it reads as
// transportText prefixed with the backend, and unwraps to err, so that
// errors.Is still finds context.Canceled and the like.
func (r *Router) transportCause(t *target, err error) error {
	if err == nil {
		return nil
	}
	return redact.Opaque(err, fmt.Sprintf("backend %s (%s): %s", t.provider, t.routerAlias, r.transportText(err)))
}

// upstreamReason extracts the reason of an error answer: error.message of an
// OpenAI-shaped body, else error (a string), message or detail, else the body
// itself when it is plain text (not HTML), with whitespace collapsed.
func upstreamReason(body []byte) string {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	reason := ""
	if json.Unmarshal(body, &env) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		switch {
		case json.Unmarshal(env.Error, &obj) == nil && obj.Message != "":
			reason = obj.Message
		case json.Unmarshal(env.Error, &reason) == nil && reason != "":
		case json.Unmarshal(env.Message, &reason) == nil && reason != "":
		case json.Unmarshal(env.Detail, &reason) == nil && reason != "":
		default:
			reason = ""
		}
	} else if s := strings.TrimSpace(string(body)); utf8.ValidString(s) && !strings.HasPrefix(s, "<") {
		reason = s
	}
	return strings.Join(strings.Fields(reason), " ")
}

// truncateRunes cuts s to n runes, marking the cut with an ellipsis.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// parseRetryAfter reads a Retry-After value (delay seconds, possibly fractional,
// or an HTTP date) as whole seconds rounded up, at least 1; 0 when absent or
// unreadable.
func parseRetryAfter(v string, now time.Time) int {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var secs float64
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		secs = f
	} else if t, err := http.ParseTime(v); err == nil {
		secs = t.Sub(now).Seconds()
	} else {
		return 0
	}
	if math.IsNaN(secs) || secs > math.MaxInt32 {
		return math.MaxInt32
	}
	return max(1, int(math.Ceil(secs)))
}

// sanitizer removes from upstream messages what clients must not see: URLs,
// hosts, API keys (the configured ones and key-shaped tokens) and provider or
// vendor names (cloudA, cloudB, and the names in the configured hosts).
type sanitizer struct {
	rules []sanitizeRule
	keys  *regexp.Regexp // the configured API keys; nil when there are none
}

type sanitizeRule struct {
	re   *regexp.Regexp
	repl string
}

func newSanitizer(b Backends) *sanitizer {
	s := &sanitizer{}
	add := func(pattern, repl string) {
		s.rules = append(s.rules, sanitizeRule{regexp.MustCompile(pattern), repl})
	}
	var keys, hosts, words []string
	for _, k := range []string{b.LocalAPIKey, b.CloudAAPIKey, b.CloudBAPIKey, b.RouterAPIKey} {
		if k != "" {
			keys = append(keys, regexp.QuoteMeta(k))
		}
	}
	for _, raw := range []string{b.LocalURL, b.CloudAURL, b.CloudBURL, b.RouterURL} {
		u, err := url.Parse(raw)
		if raw == "" || err != nil || u.Host == "" {
			continue
		}
		hosts = append(hosts, regexp.QuoteMeta(u.Host), regexp.QuoteMeta(u.Hostname()))
		words = append(words, vendorWords(u.Hostname())...)
	}
	if len(keys) > 0 {
		slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
		s.keys = regexp.MustCompile(alternation("", keys))
		s.rules = append(s.rules, sanitizeRule{s.keys, "[redacted]"})
	}
	add(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>]+`, "[url]")
	add(`(?i)\bbearer\s+[A-Za-z0-9._~+/=-]+`, "Bearer [redacted]")
	add(`\b(?:sk|pk|rk|gsk|xai|key)[-_][A-Za-z0-9_-]{8,}`, "[redacted]")
	if len(hosts) > 0 {
		// Longest first, so that host:port wins over the bare host.
		slices.SortFunc(hosts, func(a, b string) int { return len(b) - len(a) })
		add(alternation("(?i)", hosts), "[host]")
	}
	add(`\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b`, "[host]")
	add(`(?i)\blocalhost(?::\d+)?\b`, "[host]")
	add(`(?i)\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:com|net|org|io|ai|dev|cloud|app|co|internal|lan)\b(?::\d+)?`, "[host]")
	words = append(words, "cloudA", "cloudB")
	add(alternation(`(?i)\b`, words)+`\b`, "upstream")
	return s
}

// sanitize applies the rules in order.
func (s *sanitizer) sanitize(msg string) string {
	for _, r := range s.rules {
		msg = r.re.ReplaceAllLiteralString(msg, r.repl)
	}
	return strings.TrimSpace(msg)
}

// sanitizeKeys removes only the configured API keys, for log lines (which may name
// hosts).
func (s *sanitizer) sanitizeKeys(msg string) string {
	if s.keys == nil {
		return msg
	}
	return s.keys.ReplaceAllLiteralString(msg, "[redacted]")
}

func (r *Router) sanitize(msg string) string { return r.san.sanitize(msg) }

func alternation(prefix string, alts []string) string {
	return prefix + "(?:" + strings.Join(alts, "|") + ")"
}

// vendorWords returns the distinctive labels of a hostname ("api.acme-ai.com" ->
// "acme-ai"), skipping IP addresses, localhost, the top-level domain and generic
// labels.
func vendorWords(host string) []string {
	if net.ParseIP(host) != nil || host == "localhost" {
		return nil
	}
	labels := strings.Split(host, ".")
	if len(labels) > 1 {
		labels = labels[:len(labels)-1]
	}
	var out []string
	for _, l := range labels {
		switch l {
		case "", "api", "www", "v1", "inference", "gateway", "router", "models", "llm", "ai", "co", "com":
			continue
		}
		if len(l) >= 3 {
			out = append(out, regexp.QuoteMeta(l))
		}
	}
	return out
}

// connectReason describes a transport error without naming the address, for
// probes (which are public) and logs.
func connectReason(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dnsErr):
		return "host not found"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "unreachable"
}
