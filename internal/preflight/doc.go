// Package preflight holds the pre-flight checks and rewrites of an OpenAI
// chat-completions request, shared by POST /v1/chat/completions and POST /c1/chat.
//
// # Use
//
//	res, err := preflight.Check(ctx, &preflight.Request{
//		Body:         body,               // an OpenAI chat-completions JSON object
//		Tenant:       principal.Tenant,
//		Catalog:      catalog,
//		ParamPrefix:  "",                 // "body." on /c1
//		System:       injectFn,           // optional: memory + prompts
//		CloudConsent: preflight.CloudConsent(r.Header),
//		Consents:     consents,           // optional: persisted grants
//	})
//	if err != nil { httpx.WriteError(w, r, err); return }
//	// res.Body goes upstream; res.Applied() goes to gw-applied.
//
// Check never writes to the client; every error it returns is an *errcat.Error
// (400, 409 cloud_consent_required, 422 content_blocked, 503 upstream_unavailable
// from the content guard, or what System / Consents return).
//
// # The body
//
// The body is walked once by a validating JSON scanner (internal/jsonscan);
// only the top-level members, the messages (role, content parts, tool calls)
// and the attachments are looked into. Every other value, known to OpenAI or
// not, is kept as the client's bytes and forwarded verbatim. The rewritten body
// has "model" as its first member ({"model":"<alias>",...}, the upstream
// router's fast path), then the client's members in their order (a repeated
// member keeps only its last occurrence, as encoding/json reads it), with
// messages and max_tokens rewritten when needed and attachments removed. A body
// that needs no rewrite and already starts with {"model":"<alias>" is returned
// as is, without a copy.
//
// # Checks, in the order they are made
//
// The first failing check answers. p is Request.ParamPrefix ("" on /v1,
// "body." on /c1); a param without p is the one the code's row of the Codes
// table names, "exactly that string", the same on both endpoints.
//
//  1. Not one JSON object: invalid_json.
//  2. messages absent: missing_field p+"messages"; model absent: missing_field p+"model".
//  3. messages not a non-empty array of objects, each with a role among system,
//     developer, user, assistant, tool, function, whose content is a string, an
//     array of objects or null, and whose tool_calls (when present) is an array of
//     objects: invalid_field p+"messages".
//  4. model not a string: invalid_field p+"model"; not a chat alias of the catalog,
//     or not in the tenant allowlist: model_not_in_allowlist "model".
//  5. temperature not a number in 0..2 (null is absent): invalid_field
//     p+"temperature"; stream not a boolean: invalid_field p+"stream"; max_tokens /
//     max_completion_tokens not an integer: invalid_field p+"max_tokens" /
//     p+"max_completion_tokens"; attachments malformed (see below): invalid_field or
//     missing_field p+"attachments[N]..."; a given content_hash that is not
//     sha256:<hex of the content>: invalid_field p+"attachments[N].content_hash".
//  6. max_tokens or max_completion_tokens below 1: max_tokens_below_minimum
//     "max_tokens" (the /c1 rule "negative is invalid_field body.max_tokens" is
//     /c1's own schema check, made before Check). Values from 1 to
//     constraints.min_max_tokens-1 are raised to min_max_tokens and reported in
//     Result.FlooredMaxTokens.
//  7. An assistant tool_calls[].function.arguments that is not a JSON string
//     holding valid JSON: tool_call_arguments_invalid
//     "messages[].tool_calls[].function.arguments".
//  8. Each image, content parts first then image attachments, in order:
//     modalities.image_in false: model_not_vision_capable
//     "messages[].content[].image_url" (attachments too; never a silent drop);
//     an http(s) URL to a model whose constraints.accepts_image_url is false:
//     image_url_not_supported "messages[].content[].image_url.url"; a data URI
//     that is malformed, has no MIME type, a MIME type other than image/jpeg,
//     image/png, image/webp, image/gif, or is not ;base64: image_decode_error;
//     a payload that is not standard padded base64: image_base64_invalid; bytes
//     whose header is not an image of the declared type: image_decode_error.
//     The param of the last three is "messages[].content[].image_url.url" for a
//     content part and p+"attachments[N].url" for an attachment. Only the image
//     header is decoded (image/jpeg, image/png, image/gif DecodeConfig; the
//     RIFF/WEBP header for WebP); the whole payload is base64-checked in chunks
//     into a fixed buffer, so a large image costs no large allocation.
//  9. Request.System is called (after every check above passed) and its text is
//     inserted as the first message {"role":"system","content":...}.
//  10. The context-window estimate (below) over the model's context_window:
//     context_window_exceeded "messages".
//  11. The content guard (below), for a tenant whose content_guard is block:
//     422 content_blocked, or 503 upstream_unavailable when the classifier
//     cannot answer.
//  12. Cloud consent (below): 409 cloud_consent_required.
//
// # Context-window estimate
//
// The estimate is deliberately coarse and errs on the large side:
//
//	tokens = Σ messages (TokensPerMessage + ⌈text bytes / BytesPerToken⌉ + TokensPerImage × images)
//	       + ⌈bytes of tools and functions / BytesPerToken⌉
//	       + max(max_tokens, max_completion_tokens) after flooring (0 when absent)
//
// where text bytes are the UTF-8 bytes of string contents and text parts
// (JSON escapes decoded) plus the raw JSON bytes of every other member of a
// message (tool_calls, name, ...), the injected system message and the
// converted attachments included. A model whose context_window is 0 is not
// checked.
//
// # Attachments
//
// A top-level "attachments" array holds {"kind":"image","url":<data URI>,
// "detail"?} and {"kind":"document","doc_name":<string>,"content":<string>,
// "content_hash"?} entries. Anything else is invalid_field (a missing url,
// doc_name or content is missing_field p+"attachments[N].<field>"). Images are
// checked like image parts and become {"type":"image_url","image_url":{"url",
// "detail"?}} parts; documents become a text part "Document <doc_name>:\n<content>".
// The parts are appended, in order, to the content of the last user message (a
// string content becomes a text part first); without a user message a new one
// is appended. "attachments" itself is not forwarded.
//
// # Content guard
//
// Request.Guard carries the gateway's classifier (guard.Classifier) to a
// tenant whose content_guard is audit or block. What is classified: the text
// parts and image URLs of every user message of the rewritten body (on /v1
// and agent chat, whose clients send the whole history), or of the last
// message only (Guard.NewOnly: the new turn of a /c1 conversation or an agent
// session, "stored history was classified when it was written"); document
// attachments are text parts of the last user message by then. A request
// with nothing to classify is not classified.
//
// block classifies before Check returns, so that a flagged request reaches
// neither the upstream, nor the store, nor the quota: 422 content_blocked
// with the flagged categories in param (guard.Verdict.Param), or 503
// upstream_unavailable when the classifier fails ("A block tenant whose
// guard cannot answer gets 503 upstream_unavailable"). audit starts the
// classification when every check passed and returns at once: it runs
// alongside the upstream call and logs one line for a flagged request (mode,
// tenant, user, route, categories, classifier, scores; request_id from the
// request's logger; never the content) and one for a failure, letting the
// request through either way.
//
// # Cloud consent
//
// When the tenant has settings.c1_cloud_doc_consent, and the model's chain has a
// backend whose provider is not "local" and whose status is available or
// deprecated (one that can be tried), every document attachment needs consent:
// its content_hash listed in the GW-Cloud-Consent header
// (<content_hash>[;persist][, ...]) or a grant in Request.Consents. Otherwise
// Check answers 409 cloud_consent_required (param p+"attachments") with
// required_consents [{content_hash, doc_name}] in the order of the attachments.
// When the request passes, header entries marked ;persist whose hash is one of
// the request's documents are stored with Consents.Grant, for the whole tenant.
package preflight
