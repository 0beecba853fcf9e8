// Package usage keeps one usage record per chat, embeddings and image request
// that reached the upstream, and answers GET /v1/usage with their totals:
// what operators otherwise build from logs.
//
// It is a top-level family package because it is stateful, like images: it
// owns its buckets (usage/...), a background writer and a purger, which New
// starts and Close stops. It imports no other family. The root's middleware
// builds each Record when a metered request ends (the request's
// httpx.Meter, fed by the relay, the image and agent code and the root's
// upstream wrapper) and hands it to Record.
//
// # Recording
//
// Record never blocks on the store and never fails a request: it appends the
// record to an in-memory buffer under a short lock. A background writer
// writes the buffer every Config.FlushInterval (1 s), and at once when
// Config.MaxBatch (1000) records are waiting, one store transaction per batch
// of at most MaxBatch records, so a request adds no transaction and no fsync
// of its own. While the store fails, the records stay buffered, oldest first,
// and are written when it answers again; the buffer holds at most
// Config.MaxBuffered (100000) records, and a record that finds it full is
// dropped and counted (Dropped); the writer logs the count at most once a
// second. A store failure is logged once when the writes start failing and
// once when they succeed again. Close writes what is buffered (within
// Config.CloseTimeout); what it cannot write is counted as dropped and
// logged, and Close returns an error.
//
// What gets a record: a request on a metered route (chat completions of /v1,
// /c1, agent chat and session messages, session compaction,
// /v1/tools/execute, embeddings, image generation) that made at least one
// upstream call, whatever its outcome: a failed upstream call (503, 504, 502,
// upstream_bad_request) is recorded with its status and error code and no
// backend; an answer cut short is recorded with the tokens reported before
// the cut. A request answered before any upstream call (a 4xx of the checks,
// a quota 429, a content-guard 422) gets no record. Tokens are what the
// upstream reported (prompt/completion or input/output tokens) summed over
// the request's calls; an answer that reported none (a /v1 stream whose
// client did not ask for stream_options.include_usage, which the gateway
// does not add) counts 0 and marks the record usage_missing.
//
// # Storage
//
// Bucket usage/records holds one JSON record per key
// str(tenant) u64(day) u64(unix nanos) u64(instance) u64(seq), day being
// the UTC day number of the record's time: a tenant's records of a day are
// one key prefix, in time order, so a range query scans only the days it
// covers. instance (random per Service) and seq (per Service) make keys
// unique across replicas, and a batch written again after a commit that was
// reported failed writes the same keys (no record counts twice). Bucket
// usage/tenants lists the tenants with records, for the purger.
//
// # Retention
//
// Records older than Config.Retention (90 days; gatewayd's
// GATEWAY_USAGE_RETENTION) are deleted by a purger every
// Config.PurgeInterval (one hour, and once at New), in transactions of at
// most 1000 records, each tenant from its oldest record. Of several Services
// on one store (replicas on PostgreSQL), only the holder of the purge lease
// (bucket usage/lease, internal/lease) purges.
//
// # GET /v1/usage
//
// Scope usage:read, in every role's default set. The GW-User-Id rule is the
// route table's userOrAdminRead: a tenant_admin without GW-User-Id sees the
// whole tenant; any caller with GW-User-Id sees that user's records only; a
// member without it gets 400 missing_field (headers.gw-user-id). Query
// parameters (a bad one is 400 invalid_field with param query.<name>):
//
//   - from, to: the range, from included, to excluded; an RFC 3339 timestamp,
//     or a date YYYY-MM-DD (from: 00:00 UTC of that day; to: the end of that
//     day, so from=2025-03-01&to=2025-03-31 is all of March). Between 1970
//     and 2200. Default: to is now, from 30 days before to. from must be
//     before to (else query.from).
//   - group_by: a comma-separated list of distinct keys among day (UTC),
//     alias, user, backend and kind; default day; empty (group_by=) makes one
//     group of the whole range.
//   - alias, user, kind: keep only the records of that alias, user
//     (GW-User-Id) or kind (chat, embeddings or image). A caller restricted to
//     its own user who names another gets an empty list.
//   - limit, offset: the page, as every list (default 50, 1..500; offset >= 0).
//
// The answer is the gateway's list, one item per group that has records,
// sorted by the group_by keys in the order given, each ascending:
//
//	{"object":"list","data":[{"day":"2025-03-01","alias":"lm-4-scout","user":"alice",
//	  "requests":3,"failed_requests":0,"requests_without_usage":0,
//	  "input_tokens":36,"output_tokens":15,"total_tokens":51}],
//	 "limit":50,"offset":0,"has_more":false}
//
// An item has the keys it is grouped by (in the order day, alias, user,
// backend, kind; user null for requests without GW-User-Id; backend "" for
// requests that no backend answered) and the totals. A store failure answers
// 500 storage_error.
package usage
