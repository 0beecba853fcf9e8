// Package upstream declares Upstream, the gateway's way to reach models, and
// holds the model catalog (aliases and their backend chains) that the router
// serves. The default implementation, Router, speaks the OpenAI-compatible HTTP
// API to the local backend and the cloud hosts, with the fallback chain of the
// catalog; upstream/upstreamtest has an in-process fake backend.
package upstream

import (
	"context"
	"io"
	"net/http"

	"go.opentelemetry.io/otel/trace"
)

// Upstream sends one model call for a public alias, trying the alias's backends in
// catalog order.
//
// Do returns the first 2xx response whose headers arrived; the caller reads and
// closes Body, and no fallback happens after that point. On failure it returns an
// *errcat.Error: upstream_unavailable (no backend could be connected to),
// upstream_timeout (total time-out), upstream_error (5xx or other non-2xx of the
// last backend), or upstream_bad_request carrying the upstream's 4xx status and
// reason (and Retry-After for 429). Messages never name a provider or a key.
// Do is safe for concurrent use; cancelling ctx aborts the call and the body.
type Upstream interface {
	Do(ctx context.Context, req *Request) (*Response, error)
}

// Request is one model call.
type Request struct {
	// Alias is the public model alias; the router resolves its backend chain.
	Alias string
	// Path is the OpenAI API path below the base URL, such as "/chat/completions",
	// "/embeddings", "/images/generations" or "/audio/transcriptions".
	Path string
	// Body is the request body. For JSON bodies (ContentType "" or
	// "application/json") the router replaces the top-level "model" with each
	// backend's router_alias; for multipart/form-data bodies it replaces (or adds)
	// the "model" form field; other bodies are sent as they are.
	Body []byte
	// BodyReader, when set, is streamed instead of Body (multipart audio uploads;
	// a JSON BodyReader is read into memory first). A streamed request cannot be
	// retried on another backend once any of it was read (a refused connection
	// still moves on).
	BodyReader io.Reader
	// ContentType is the body's media type; "" means application/json.
	ContentType string
	// Stream tells the router that the caller expects an SSE answer.
	Stream bool
	// RequestID is sent upstream as x-request-id and used in logs and on
	// the attempt spans (chatgw.request_id).
	RequestID string
	// ConversationID, when not "", is the /c1 conversation the call belongs
	// to: it is sent nowhere, and recorded as gen_ai.conversation.id on the
	// attempt spans of a tracing Router (WithTracerProvider).
	ConversationID string
}

// Response is a successful (2xx) upstream answer.
type Response struct {
	StatusCode int
	Header     http.Header
	Body       io.ReadCloser
	// Provider is the provider that answered (local, cloudA, cloudB); for logs
	// and notices, never for client-visible messages.
	Provider string
	// RouterAlias is the backend alias that answered.
	RouterAlias string
	// Fallback is true when an earlier backend of the chain was tried and failed
	// (backends skipped as unconfigured do not count).
	Fallback bool
	// Attempt is the position of the answering backend among those tried,
	// 1 for the first; 0 when the Upstream does not say.
	Attempt int
	// Span is the answering attempt's OpenTelemetry client span when the
	// Upstream traces (Router.WithTracerProvider), nil otherwise. Whoever
	// reads the answer may add what it learns (response model, usage,
	// finish reasons; never content) before closing Body, which ends the
	// span: it must not call End itself.
	Span trace.Span
}

// Prober is implemented by upstreams that can report readiness for /readyz.
type Prober interface {
	// Probe checks the router and each backend in parallel, each with its own
	// time-out, and never takes longer than about one second.
	Probe(ctx context.Context) Readiness
}

// Readiness is the result of a probe.
type Readiness struct {
	Router       Status
	LocalBackend Status
	Probes       map[string]ProbeResult // keys router, local_backend, cloudA, cloudB
}

// ProbeResult says what one probe found.
type ProbeResult struct {
	Configured bool   `json:"configured"`
	Reachable  bool   `json:"reachable"`
	MS         int64  `json:"ms"`
	Error      string `json:"error,omitempty"`
}
