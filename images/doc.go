// Package images serves the generated-image endpoints of /v1: generation
// through the upstream, and the images the gateway keeps for a time-to-live.
// Images are kept in the Store, tenant-scoped (no per-user filter; GW-User-Id
// is optional everywhere).
//
// It is a top-level family package of its own rather than a part of openai:
// openai is the stateless passthrough, while images is stateful. It owns its
// buckets (img/...), the ledger of the tenants' generation rate, and the
// purger that deletes expired images in the background: New starts the
// purger and Close stops it, so the package owns what it runs from start to
// end. Like every family it imports no other family; it shares the JSON body
// splitting with openai through internal/httpx (Object) and the model lookup
// through upstream.Catalog (LookupKind). Embedders configure it through
// Config, so it is not internal.
//
// Every handler is a plain http.HandlerFunc that expects the gateway's
// middleware to have run (principal in the context, body limit, request
// info, the route's scope images:read or images:write).
//
// # POST /v1/images/generations
//
// An OpenAI image generation request plus the gateway's ttl_hours. Checks,
// before anything is forwarded (each a 400 unless said otherwise):
//   - model: an alias of kind image_generation that the tenant's allowlist
//     allows, else model_not_in_allowlist (model); not a string is
//     invalid_field (model). Absent or null means the catalog's first
//     image_generation alias that the tenant allows; when there is none,
//     missing_field (model).
//   - prompt: absent or null is missing_field (prompt); not a string is
//     invalid_field (prompt).
//   - n: an integer from 1 to 10 (default 1), and not more than the tenant's
//     image_gen_rate_per_hour (a request that could never pass); else
//     invalid_field (n).
//   - ttl_hours: an integer from 1 to the tenant's image_max_ttl_hours; else
//     invalid_field (ttl_hours). Absent or null means 12 (DefaultTTLHours),
//     or the tenant's image_max_ttl_hours when that is lower.
//   - response_format: "url" (the default, as OpenAI's) or "b64_json"; else
//     invalid_field (response_format). It chooses what the answer carries; the
//     upstream is always asked for b64_json, since the gateway stores the bytes.
//   - stream: true is invalid_field (stream); streamed partial images are not
//     supported.
//
// Every other field (size, quality, style, user...) is forwarded verbatim;
// ttl_hours is not forwarded.
//
// Rate: the tenant's image_gen_rate_per_hour caps the images generated in any
// sliding window of one hour (Clock). The n images of a request are reserved
// before the upstream call, so concurrent requests cannot overshoot; a failed
// call returns its reservation, and an answer with fewer images than n is
// charged what it delivered. A request that does not fit answers 429
// model_quota_exhausted (the catalog's code for a tenant's rate budget for a
// model; rate_limit_exceeded is the per-token bucket) with Retry-After: the
// whole seconds until enough earlier images leave the window.
//
// The answer is OpenAI's shape with the gateway's metadata in each item:
//
//	{"created":1700000000,
//	 "data":[{"id":"img_...","object":"image","created_at":"...","expires_at":"...",
//	          "ttl_hours":12,"model":"lm-image","mime_type":"image/png","bytes":68,
//	          "revised_prompt":"...",            (when the upstream gave one)
//	          "url":"https://gw.example/v1/images/img_.../content"}],   (or "b64_json":"...")
//	 "usage":{...}}                              (when the upstream gave one)
//
// The url is the image's content endpoint on the gateway, built from the
// request (scheme from TLS or X-Forwarded-Proto, host from X-Forwarded-Host
// or Host, the mount prefix from the request URI); fetching it needs the bearer
// token, as every /v1 endpoint does.
//
// # GET /v1/images
//
// The tenant's live images, newest first, without their bytes:
// {"object":"list","data":[<metadata>...],"limit":N,"offset":N,"has_more":bool},
// where a metadata object is an item of the answer above without url and
// b64_json. limit defaults to 50 and must be 1..500, offset >= 0; otherwise
// 400 invalid_field (query.limit, query.offset).
//
// # GET /v1/images/{id}, GET /v1/images/{id}/content, DELETE /v1/images/{id}
//
// GET answers the metadata plus "b64_json"; /content answers the image bytes
// with their media type; DELETE removes the image and answers
// {"id":...,"object":"image","deleted":true}. An id that is unknown, belongs to
// another tenant or has expired (expires_at <= Clock.Now(), even before the
// purger ran) answers 404 image_not_found (id).
//
// # Storage
//
//	img/meta    str(tenant) str(id)                 -> metadata (JSON)
//	img/data    str(tenant) str(id)                 -> image bytes
//	img/expiry  u64(expires_at ns) str(tenant) str(id) -> ""  (purge index)
//	img/rate    str(tenant) u64(reserved_at ns) str(rid) -> image count (decimal)
//	img/lease   "purger"                            -> the purge lease (JSON: holder, until)
//
// Ids are "img_" + 16 hex digits of the creation time in Unix nanoseconds + 16
// random hex digits, so a tenant's images sort by creation time. An image is
// written, and deleted, with its three records in one transaction.
//
// # The purger
//
// New starts a goroutine that runs a purge round at once and then every
// Config.PurgeInterval (default one minute) until Close. PurgeExpired walks
// img/expiry from the oldest expiry up to Clock.Now(), so it never reads live
// images, and drops rate-ledger entries older than the window. Its failures
// are logged (Config.Logger) and retried at the next interval.
//
// Several gateway replicas may share one Store (PostgreSQL); each runs a
// purger, but only one purges. A round first takes or renews the purge lease
// (img/lease, key "purger": a holder, random per Service, and an expiry, in
// one Update transaction; internal/lease) and purges only when it holds it.
// The lease lasts Config.PurgeLease (default three intervals, so a holder
// keeps it across a round that ran late). When the holder stops, another
// replica takes over: at its next round after Close, which releases the
// lease, and at most PurgeLease plus one PurgeInterval after the holder died
// without Close. A purge that outlasts the lease may meet another replica's:
// deleting is idempotent, so both do the same deletions and nothing breaks.
// Expiry is judged by each replica's clock, so replicas' clocks must agree
// to well within the lease.
package images
