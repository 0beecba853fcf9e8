package openai

import (
	"encoding/json"
	"net/http"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/upstream"
)

// Embedding input limits: "256 elements; 8192 bytes (about 2k tokens) each",
// sizes in UTF-8 bytes.
const (
	// MaxEmbeddingInputs is the largest number of elements of an embeddings input.
	MaxEmbeddingInputs = 256
	// MaxEmbeddingInputBytes is the largest size of one element, in bytes.
	MaxEmbeddingInputBytes = 8192
	// EmbeddingTokenBytes is what one token of a token-array element counts
	// towards MaxEmbeddingInputBytes: token ids are 32-bit integers, so a
	// token array may hold up to 2048 tokens, the limit's "about 2k tokens".
	EmbeddingTokenBytes = 4
)

// Embeddings serves POST /v1/embeddings: an OpenAI embeddings request,
// forwarded with "model" first and every other field verbatim; the upstream's
// JSON answer is relayed as it is (with GW-Notice: backend_fallback when a
// later backend of the chain answered).
//
// Checks, before anything is forwarded:
//   - model: absent, null or "" is 400 missing_field (model); not a string is
//     400 invalid_field (model); an alias that is not of kind embeddings or
//     not in the tenant's allowlist is 400 model_not_in_allowlist (model).
//   - input: absent or null is 400 missing_field (input). It must be a string,
//     an array of strings, an array of token ids (one token array) or an array
//     of token arrays, where a token id is a non-negative integer; anything
//     else, an empty array included, is 400 invalid_field (input).
//   - limits: a string or a single token array is one element; the arrays
//     have one element per item. More than MaxEmbeddingInputs elements, or an
//     element larger than MaxEmbeddingInputBytes, is 400
//     embedding_input_too_large (input). A string counts its UTF-8 bytes (after
//     JSON unescaping); a token array counts EmbeddingTokenBytes per token.
//
// Upstream failures answer with their own codes (upstream_bad_request with the
// upstream's 4xx status, upstream_error, upstream_timeout,
// upstream_unavailable).
func (s *Service) Embeddings(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	fields, err := httpx.ReadObject(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	alias, err := fields.Model()
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	m, err := s.catalog.LookupKind(p.Tenant, alias, upstream.KindEmbeddings)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	if err := checkEmbeddingInput(fields.Get("input")); err != nil {
		httpx.WriteError(w, r, err)
		return
	}

	resp, err := s.up.Do(ctx, &upstream.Request{
		Alias:     m.Alias,
		Path:      "/embeddings",
		Body:      fields.Build(m.Alias, nil),
		RequestID: httpx.InfoFrom(ctx).RequestID,
	})
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	var notices []relay.Notice
	if resp.Fallback {
		notices = append(notices, relay.BackendFallback(resp))
	}
	relay.Response(w, r, resp, relay.Options{Notices: notices, Model: m.Alias, Clock: s.clock, MaxBytes: s.maxBytes})
}

// checkEmbeddingInput applies the rules of Embeddings to the raw input member
// (nil when absent).
func checkEmbeddingInput(raw json.RawMessage) error {
	const param = "input"
	if wire.IsNull(raw) {
		return errcat.New(errcat.MissingField, param, "input is required: a string, an array of strings or an array of token arrays.")
	}
	invalid := errcat.New(errcat.InvalidField, param,
		"input must be a string, an array of strings, an array of token ids or an array of token arrays.")
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return invalid
		}
		return checkElementSize(len(s), -1)
	case '[':
	default:
		return invalid
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return invalid
	}
	switch items[0][0] {
	case '"': // an array of strings
		if len(items) > MaxEmbeddingInputs {
			return tooManyInputs(len(items))
		}
		for i, it := range items {
			var s string
			if it[0] != '"' || json.Unmarshal(it, &s) != nil {
				return invalid
			}
			if err := checkElementSize(len(s), i); err != nil {
				return err
			}
		}
	case '[': // an array of token arrays
		if len(items) > MaxEmbeddingInputs {
			return tooManyInputs(len(items))
		}
		for i, it := range items {
			n, ok := tokenCount(it)
			if !ok {
				return invalid
			}
			if err := checkElementSize(n*EmbeddingTokenBytes, i); err != nil {
				return err
			}
		}
	default: // one token array
		n, ok := tokenCount(raw)
		if !ok {
			return invalid
		}
		return checkElementSize(n*EmbeddingTokenBytes, -1)
	}
	return nil
}

// tokenCount returns the length of raw when it is an array of non-negative
// integers.
func tokenCount(raw json.RawMessage) (int, bool) {
	var toks []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &toks) != nil {
		return 0, false
	}
	for _, t := range toks {
		for _, c := range t {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
	}
	return len(toks), true
}

func tooManyInputs(n int) error {
	return errcat.Newf(errcat.EmbeddingInputTooLarge, "input",
		"input has %d elements, more than %d.", n, MaxEmbeddingInputs)
}

// checkElementSize checks the size of element i (-1 for a single element).
func checkElementSize(size, i int) error {
	if size <= MaxEmbeddingInputBytes {
		return nil
	}
	if i < 0 {
		return errcat.Newf(errcat.EmbeddingInputTooLarge, "input",
			"input is %d bytes, more than %d.", size, MaxEmbeddingInputBytes)
	}
	return errcat.Newf(errcat.EmbeddingInputTooLarge, "input",
		"input[%d] is %d bytes, more than %d.", i, size, MaxEmbeddingInputBytes)
}
