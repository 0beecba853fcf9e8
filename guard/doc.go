// Package guard classifies the content of chat requests for the tenant
// content guard (the content_guard setting, the 422 content_blocked error):
// the Classifier interface, the classifiers that ship with gatewayd, and the
// wrappers that chain, bound and cache them.
//
// It is a top-level leaf package, like store and upstream: it imports no
// family package and not the root, so that the root can re-export Classifier
// and plug one in (gateway.WithClassifier). It decides nothing about
// requests: the caller (the chat pipeline) says what is classified, runs the
// classification before forwarding (block) or alongside it (audit), and
// applies the fail-open or fail-closed policy to errors.
//
// # Verdicts and categories
//
// A Classifier returns a Verdict: the Categories it flags, each with a
// canonical Name, a Score, the classifier's Native code and the Classifier's
// name. Canonical names are OpenAI's moderation category names
// (CategoryHarassment ... CategoryViolenceGraphic); a category with no OpenAI
// equivalent keeps a stable lowercase name (privacy, elections, ...).
// Verdict.Param is the param of the 422: the flagged names sorted, without
// duplicates, joined by commas.
//
// # Classifiers
//
// As gatewayd configures them (docs/contract.md#91-content-guard-configuration):
//
//   - Rules (ClassifierRules, GATEWAY_GUARD_RULES): terms and RE2 patterns per
//     category from a JSON rules file (ParseRules), matched on Unicode
//     NFKC-normalised text; deterministic and offline. RulesFile holds the
//     rules of a file and reloads them (SIGHUP), keeping the old rules when
//     the new file is bad.
//   - Moderation (ClassifierModeration, GATEWAY_GUARD_MODERATION_URL,
//     _API_KEY, _MODEL, GATEWAY_GUARD_THRESHOLD): any OpenAI-compatible
//     POST /v1/moderations endpoint.
//   - LlamaGuard (ClassifierLlamaGuard, GATEWAY_GUARD_LLAMA_GUARD_URL,
//     _API_KEY, _MODEL): a Llama Guard model behind any OpenAI-compatible
//     chat endpoint, its S-codes mapped to canonical names by a documented
//     table.
//
// # Composition
//
// Several classifiers form a Chain: asked concurrently, flagged by any is
// flagged. WithTimeout bounds a classification (GATEWAY_GUARD_TIMEOUT,
// DefaultTimeout 2 s); Cached remembers verdicts by the digest of the input
// for a short time, so that retries are not classified twice. The classifier
// to plug in is then
//
//	guard.Cached(guard.WithTimeout(guard.Chain{rules, moderation}, timeout), clock, guard.DefaultCacheTTL, guard.DefaultCacheSize)
//
// # Errors and content
//
// A classifier error means no verdict could be had; it never holds the
// classified content, nor an endpoint's answer (ErrUnavailable,
// ErrMalformed). What an error means for the request is the caller's policy:
// "A `block` tenant whose guard cannot answer gets 503 `upstream_unavailable`;
// an `audit` tenant is let through": block tenants fail closed and
// audit tenants fail open. A Chain returns what its members flagged alongside
// the error of those that failed.
package guard
