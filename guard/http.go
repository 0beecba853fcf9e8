package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chatgw/gateway/internal/redact"
)

// The errors of the HTTP classifiers (Moderation, LlamaGuard), wrapped with
// what went wrong. Neither, nor what wraps it, holds the classified content or
// the endpoint's answer: an answer is described by its length, error type and
// code, and a hash (internal/redact.Body).
var (
	// ErrUnavailable is wrapped by every failure to get an answer: the
	// endpoint could not be reached, did not answer in time (the error also
	// wraps context.DeadlineExceeded), answered with a status other than
	// 2xx, or sent more than MaxAnswerBytes.
	ErrUnavailable = errors.New("classifier unavailable")
	// ErrMalformed is wrapped when a 2xx answer is not what the classifier
	// understands: not JSON, without results or choices, a Llama Guard answer
	// that is neither "safe" nor "unsafe" with S-codes.
	ErrMalformed = errors.New("malformed answer")
)

// MaxAnswerBytes bounds what the HTTP classifiers read of an answer.
const MaxAnswerBytes = 1 << 20

// DefaultClient returns the *http.Client the HTTP classifiers use when their
// Config has none: its own connection pool, connections set up within 5 s,
// headers awaited at most 30 s, a whole call bounded by 60 s, and redirects
// not followed (a classifier endpoint that redirects is misconfigured; its 3xx
// is reported). The per-call bound is WithTimeout's: these only stop a call
// made without one from hanging.
func DefaultClient() *http.Client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   256, // one classification per chat request: keep up with them
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// endpoint is what the HTTP classifiers share: where to POST and how.
type endpoint struct {
	name   string // the classifier's name, for errors
	url    string
	key    string
	client *http.Client
}

// newEndpoint checks a base URL (absolute http or https, ending in /v1 by
// convention but not by rule) and returns the endpoint of path under it.
// A base URL that already ends in path is refused: the operator gave the
// endpoint, not its base.
func newEndpoint(name, base, path, key string, client *http.Client) (endpoint, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return endpoint{}, fmt.Errorf("guard: %s: base URL %q is not an absolute http or https URL", name, redactURL(base))
	}
	if strings.HasSuffix(strings.TrimRight(u.Path, "/"), path) {
		return endpoint{}, fmt.Errorf("guard: %s: base URL %q already ends in %s: give the base, ending in /v1", name, redactURL(base), path)
	}
	if client == nil {
		client = DefaultClient()
	}
	return endpoint{name: name, url: u.JoinPath(path).String(), key: key, client: client}, nil
}

// redactURL returns base without its user information, for an error.
func redactURL(base string) string {
	if u, err := url.Parse(base); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

// post sends body as JSON and decodes a 2xx answer into out.
func (e endpoint) post(ctx context.Context, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("guard: %s: encoding the request: %w", e.name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("guard: %s: %w", e.name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("guard: %s: %w: %w", e.name, ErrUnavailable, cause(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	if err != nil {
		return fmt.Errorf("guard: %s: %w: reading the answer: %w", e.name, ErrUnavailable, cause(err))
	}
	if len(data) > MaxAnswerBytes {
		return fmt.Errorf("guard: %s: %w: answer over %d bytes", e.name, ErrUnavailable, MaxAnswerBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("guard: %s: %w: status %d (%s)", e.name, ErrUnavailable, resp.StatusCode, redact.Body(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("guard: %s: %w: not the expected JSON (%s)", e.name, ErrMalformed, redact.Body(data))
	}
	return nil
}

// cause returns err for an error message: without the URL a *url.Error names
// (it is configuration, but may carry a key in its query), and with anything
// the cause quotes from the other side dropped (redact.Quotes). It unwraps to
// err, so errors.Is(err, context.DeadlineExceeded) still holds.
func cause(err error) error {
	text := err.Error()
	if ue, ok := errors.AsType[*url.Error](err); ok {
		text = ue.Err.Error()
	}
	return redact.Opaque(err, redact.Quotes(text))
}
