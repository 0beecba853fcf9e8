package preflight

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/jsonscan"
	"github.com/chatgw/gateway/upstream"
)

// Estimate parameters of the context-window check (see the package doc).
const (
	BytesPerToken    = 3
	TokensPerMessage = 4
	TokensPerImage   = 1000
)

// HeaderCloudConsent is the request header that grants cloud consent for
// document attachments: <content_hash>[;persist][, ...].
const HeaderCloudConsent = "GW-Cloud-Consent"

// canonicalCloudConsent is HeaderCloudConsent's canonical form
// (http.CanonicalHeaderKey), under which http.Header keeps it.
const canonicalCloudConsent = "Gw-Cloud-Consent"

// CloudConsent is h's HeaderCloudConsent values as one list, joined with
// commas, for Request.CloudConsent. It reads the canonical key itself:
// Header.Values would allocate that form on every request.
func CloudConsent(h http.Header) string {
	return strings.Join(h[canonicalCloudConsent], ",")
}

// Request is one chat-completions request to check and rewrite.
type Request struct {
	// Body is the OpenAI chat-completions request body. Check does not modify it;
	// Result.Body may share its backing array.
	Body []byte
	// Tenant is the caller's tenant (allowlist, settings). Required.
	Tenant *auth.Tenant
	// Catalog is the model catalog with backend statuses. Required.
	Catalog *upstream.Catalog
	// ParamPrefix is put before the param of missing_field and invalid_field (and
	// of attachment errors): "" on /v1, "body." on /c1 and agents (CheckBuilt
	// sets it).
	ParamPrefix string
	// System, when non-nil, is called once, after the request passed every check
	// but the context window and consent, and returns the text of the system
	// message to insert first (memory and prompts); "" inserts nothing. Its error
	// is returned unchanged, so it should be an *errcat.Error.
	System func(ctx context.Context) (string, error)
	// CloudConsent is the value of the GW-Cloud-Consent header, or "".
	CloudConsent string
	// Consents holds persisted consent grants; nil means none are stored and
	// ;persist entries are ignored.
	Consents Consents
	// Guard is the tenant's content guard for this request; nil classifies
	// nothing (see Guard).
	Guard *Guard
}

// Injector returns the Request.System hook that injects memory and prompts
// for user in tenant through inject: nil (no injection) when inject is nil or
// the request names no user, which skips per-user injection. An error of
// inject that is not an *errcat.Error is reported as internal_error.
func Injector(inject func(ctx context.Context, tenantID, userID string) (string, error), tenant, user string) func(context.Context) (string, error) {
	if inject == nil || user == "" {
		return nil
	}
	return func(ctx context.Context) (string, error) {
		text, err := inject(ctx, tenant, user)
		if err != nil {
			return "", errcat.As(err)
		}
		return text, nil
	}
}

// Result is a request that passed every check, rewritten for the upstream.
type Result struct {
	// Body is the body to send upstream: {"model":"<alias>",...}.
	Body []byte
	// Model is the catalog entry of the requested alias. It points into the
	// catalog and must not be modified.
	Model *upstream.ModelInfo
	// Stream is the request's stream flag.
	Stream bool
	// StreamOptions is the request's stream_options value, verbatim, or nil.
	StreamOptions json.RawMessage
	// FlooredMaxTokens is the value max_tokens (and max_completion_tokens) was
	// raised to, or 0 when nothing was floored.
	FlooredMaxTokens int
	// MaxOutputTokens is the larger of max_tokens and max_completion_tokens
	// after flooring, or -1 when the request has neither: what a quota
	// reserves for the answer, without reading the body again.
	MaxOutputTokens int64
	// PromptTokens is the context-window estimate of the prompt, without
	// max_tokens.
	PromptTokens int
	// Documents are the document attachments, in order, for callers that persist
	// or audit them; their text is already in Body.
	Documents []Document
}

// Document is a document attachment of the request.
type Document struct {
	Name        string
	ContentHash string // sha256:<hex>
}

// Messages returns the messages of Body as the upstream gets them (the
// injected system message first, attachments merged into the last user
// message), each a slice of Body: callers that store or continue the
// conversation read them here instead of decoding the body again.
func (r *Result) Messages() ([]json.RawMessage, error) {
	s := jsonscan.New(r.Body)
	var msgs []json.RawMessage
	_, err := s.Object(s.Space(0), func(k jsonscan.Key, v int) (int, error) {
		if jsonscan.Unquote(r.Body[k.Start:k.End]) != "messages" {
			return s.Value(v)
		}
		return s.Array(v, func(_, e int) (int, error) {
			end, err := s.Value(e)
			msgs = append(msgs, json.RawMessage(r.Body[e:end:end]))
			return end, err
		})
	})
	if err != nil || len(msgs) == 0 {
		return nil, fmt.Errorf("preflight: the checked body has no messages: %v", err)
	}
	return msgs, nil
}

// Applied returns the value of the gw-applied (and x-rust-api-applied) response
// header, "max_tokens_floored=<N>", or "" when nothing was applied.
func (r *Result) Applied() string {
	if r.FlooredMaxTokens == 0 {
		return ""
	}
	return "max_tokens_floored=" + strconv.Itoa(r.FlooredMaxTokens)
}
