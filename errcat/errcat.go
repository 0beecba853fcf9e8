// Package errcat is the gateway's error catalog: every error a client can see has a
// stable Code listed here, with its HTTP status and category type, and every handler
// reports failures as an *Error carrying one of these codes.
//
// The catalog is the single table from code to status and type; the envelope writer
// (Write) and the published catalog (GET /errors, /docs/errors) both read it, so a
// code cannot answer with one status on the wire and document another.
package errcat

import (
	"errors"
	"fmt"
)

// Code is a stable machine-readable error code, sent as error.code and gw_code.
type Code string

// The codes of the Codes table (docs/contract.md#codes), in its order.
const (
	MissingAuthorization        Code = "missing_authorization"
	InvalidAuthorization        Code = "invalid_authorization"
	Forbidden                   Code = "forbidden"
	RateLimitExceeded           Code = "rate_limit_exceeded"
	BodyTooLarge                Code = "body_too_large"
	InvalidJSON                 Code = "invalid_json"
	MissingField                Code = "missing_field"
	InvalidField                Code = "invalid_field"
	ModelNotInAllowlist         Code = "model_not_in_allowlist"
	MaxTokensBelowMinimum       Code = "max_tokens_below_minimum"
	ImageURLNotSupported        Code = "image_url_not_supported"
	ImageDecodeError            Code = "image_decode_error"
	ImageBase64Invalid          Code = "image_base64_invalid"
	ModelNotVisionCapable       Code = "model_not_vision_capable"
	ToolCallArgumentsInvalid    Code = "tool_call_arguments_invalid"
	ContextWindowExceeded       Code = "context_window_exceeded"
	UpstreamBadRequest          Code = "upstream_bad_request"
	EmbeddingInputTooLarge      Code = "embedding_input_too_large"
	AgentNotFound               Code = "agent_not_found"
	AgentToolNotRegistered      Code = "agent_tool_not_registered"
	RecursionDepthExceeded      Code = "recursion_depth_exceeded"
	IndexNotFound               Code = "index_not_found"
	DocumentNotFound            Code = "document_not_found"
	SessionNotFound             Code = "session_not_found"
	SessionAgentMismatch        Code = "session_agent_mismatch"
	SessionCompactConflict      Code = "session_compact_conflict"
	RuntimeNotRunnable          Code = "runtime_not_runnable"
	CodingAgentDisabled         Code = "coding_agent_disabled"
	CodingAgentRepoNotAllowed   Code = "coding_agent_repo_not_allowed"
	CodingAgentRunNotFound      Code = "coding_agent_run_not_found"
	AgentBusy                   Code = "agent_busy"
	TenantConfigKeyReadonly     Code = "tenant_config_key_readonly"
	TenantConfigInvalidValue    Code = "tenant_config_invalid_value"
	ImageNotFound               Code = "image_not_found"
	MemoryBucketFull            Code = "memory_bucket_full"
	MemoryConfirmRequired       Code = "memory_confirm_required"
	SystemPromptTooLarge        Code = "system_prompt_too_large"
	SystemPromptVersionNotFound Code = "system_prompt_version_not_found"
	SystemPromptCurrentLocked   Code = "system_prompt_current_locked"
	ConversationNotFound        Code = "conversation_not_found"
	RouteNotFound               Code = "route_not_found"
	CloudConsentRequired        Code = "cloud_consent_required"
	ContentBlocked              Code = "content_blocked"
	ModelQuotaExhausted         Code = "model_quota_exhausted"
	CloudBDailyQuotaExhausted   Code = "cloudB_daily_quota_exhausted"
	UpstreamError               Code = "upstream_error"
	UpstreamTimeout             Code = "upstream_timeout"
	UpstreamUnavailable         Code = "upstream_unavailable"
	InternalError               Code = "internal_error"
	StorageError                Code = "storage_error"

	// chatgw's additions to the spec's table; adding a code is non-breaking
	// ("Adding codes is non-breaking and does not bump it").
	MethodNotAllowed   Code = "method_not_allowed"
	ModelNotConfigured Code = "model_not_configured"
	ResponseNotFound   Code = "response_not_found"
)

// Error is a failure with a catalogued code. Handlers return it (possibly wrapped);
// Write turns it into the envelope. Cause is logged, never sent to the client.
type Error struct {
	Code    Code
	Param   string // JSON-pointer-style field name; "" sends "param": null
	Message string // client-visible text; "" uses the catalog title
	// Status overrides the catalog status; only upstream_bad_request uses it, to
	// pass on the upstream's 4xx.
	Status int
	// RetryAfter, when positive, is sent as the Retry-After header in whole seconds.
	RetryAfter int
	// Extra holds additional top-level body fields (available_fallbacks,
	// required_consents).
	Extra map[string]any
	// Cause is the underlying error, for logs only.
	Cause error
}

// New returns an *Error with code, param and message.
func New(code Code, param, message string) *Error {
	return &Error{Code: code, Param: param, Message: message}
}

// Newf is New with a formatted message.
func Newf(code Code, param, format string, args ...any) *Error {
	return &Error{Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

// Internal wraps a server-side fault as internal_error; cause is only logged.
func Internal(cause error) *Error {
	return &Error{Code: InternalError, Cause: cause}
}

// Storage wraps a store failure as storage_error; cause is only logged.
func Storage(cause error) *Error {
	return &Error{Code: StorageError, Cause: cause}
}

// FromStore reports the error of a store transaction (store.Store's View,
// Update or Batch) to a client: nil stays nil, the first *Error in err's chain
// (one the transaction function returned, such as memory_bucket_full) is
// returned as is, and any other failure becomes storage_error.
func FromStore(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Storage(err)
}

// Error implements error; it includes the cause for logs.
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = Lookup(e.Code).Title
	}
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, msg, e.Cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, msg)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// As returns the first *Error in err's chain, or an internal_error wrapping err
// when there is none (so an unexpected error never leaks its text to a client).
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal(err)
}

// CodeOf returns the code of err, falling back to internal_error.
func CodeOf(err error) Code {
	return As(err).Code
}
