// Package quota keeps the per-tenant, per-model daily budgets behind the 429s
// model_quota_exhausted and cloudB_daily_quota_exhausted (docs/contract.md#codes).
//
// It is a top-level leaf package, not internal, because the public Configs of
// the chat families (openai, chat, agents) take its *Accountant so that /v1,
// /c1 and agents share one budget, and a public Config never exposes a type
// from internal/.
//
// # Configuration
//
// Budgets come from the token file (quotas, a chatgw field: docs/decisions.md), on a tenant:
//
//	"quotas": {"lm-4-scout-cloudB": {"tokens_per_day": 100000, "requests_per_day": 500}}
//
// that is auth.Tenant.Quotas, keyed by public model alias. A zero field is
// unlimited; an alias without an entry (or with both fields zero) has no budget
// and costs nothing to check: Admit returns a nil *Ticket without touching the
// store or allocating. Budgets are read from the tenant on every Admit, so a token file
// reloaded on SIGHUP applies new limits to the counts already made that day.
//
// # Counting
//
// A day is a UTC calendar day of the injected clock.Clock. Each (tenant ID,
// alias) pair has one counter per day: requests admitted, tokens spent and tokens
// reserved by requests still in flight.
//
//   - Admit counts the request and reserves the caller's worst-case estimate (the
//     request's max_tokens plus its prompt estimate). It refuses when the request
//     would exceed requests_per_day, or when spent + reserved + this reservation
//     would exceed tokens_per_day (a spent token budget refuses even a zero
//     reservation), so concurrent requests can never overspend together. A
//     refused request is not counted.
//   - Ticket.Settle(n) replaces the reservation by the real usage n (the
//     upstream's usage.total_tokens). Settle with n < 0 means the usage is not
//     known (a stream without a usage chunk, an answer cut after its first byte):
//     the whole reservation is charged, the conservative choice.
//   - Ticket.Cancel is for an upstream call that failed before any answer reached
//     the client: the reservation is released, but the request stays counted (it
//     was made, and the cloud hosts count failed requests against their own daily
//     quotas too; not counting it would let retry loops bypass requests_per_day).
//
// Settle and Cancel are idempotent: the first call wins and later calls do
// nothing. A ticket admitted yesterday settles against yesterday's counter, never
// today's (nothing, once that counter is deleted).
//
// A reservation expires ReservationTTL (default 15 minutes) after its
// admission: a ticket that is neither settled nor cancelled, because the
// replica holding it died, stops holding budget then, and the next admission
// on its counter drops it. The request stays counted. The TTL must exceed the
// longest a request can take from admission to its end, which the upstream's
// total time-out bounds (the gateway sets it to that time-out plus 5 minutes,
// and at least the default); a ticket ended after an admission dropped its
// expired hold charges nothing and is logged.
//
// Real usage above the reservation (an upstream that ignored max_tokens, a low
// prompt estimate) is charged in full, so the spent tokens can exceed the budget
// by that margin; the next requests are then refused until the reset.
//
// # Errors
//
// A refusal is an *errcat.Error with Retry-After set to the whole seconds until
// the next 00:00 UTC (rounded up, at least 1, as every Retry-After):
//
//   - an alias whose every backend has provider cloudB (a pinned cloudB alias)
//     gives 429 cloudB_daily_quota_exhausted, param "model", and the top-level
//     body field available_fallbacks: the catalog's chat aliases that the tenant
//     allows, that have a usable backend (status neither planned nor
//     unconfigured) on another provider, and whose own budget would admit the
//     same request now; aliases of the refused alias's family come first, then
//     the others, each group in catalog order. The list may be empty, never null.
//   - any other alias gives 429 model_quota_exhausted with no param and a fixed
//     message that names no upstream provider, no alias and no token counts.
//
// The counts behind a refusal are in the error's Cause, which is logged and never
// sent to the client.
//
// # Storage, replicas and restarts
//
// Counters live in the store (bucket quota/counters, one JSON record per day,
// tenant and alias: the day's requests and spent tokens, and one hold per
// ticket not yet ended: its id, tokens and expiry), so every Accountant over
// one store shares them: replicas on one database hold one budget, and a
// restart keeps the day's counts.
//
// Admit is one transaction that reads the counter (and, on a cloudB refusal,
// the fallbacks' counters), drops the expired holds, checks and writes the
// counter with the new hold. The store's transactions are serializable, so
// concurrent admissions, on one replica or several, never overspend together:
// they take turns on the counter's key (PostgreSQL aborts and retries the
// ones that collide). A counter holds one hold per request in flight (about
// 70 bytes each) and is rewritten whole by each admission and ending. Admit,
// Settle and Cancel write with Batch, so that on bbolt concurrent requests
// share one fsync.
// Settle and Cancel are one transaction each that removes the ticket's hold,
// if still there, and charges the tokens; a hold already gone charges nothing,
// so ending is idempotent in the store too, and a failed write is tried once
// more before it is logged. Admit fails closed ("With PostgreSQL every limit
// (per-token rate, quotas, image rate, confirm tokens) is shared by all
// replicas using that database. [...] everything else fails closed (500
// storage_error)", docs/contract.md#92-several-replicas): a store failure
// admits nothing. Settle and Cancel are not cut short by a client that went
// away (context.WithoutCancel).
//
// The first admission of a new UTC day on each Accountant (and the first after
// a start) deletes the counters of past days, one key range at the start of
// the bucket, so the store holds about one day of counters: the (tenant,
// alias) pairs with a budget used that day. A clock that steps back keeps the
// latest day the Accountant saw.
//
// An Accountant is safe for concurrent use, and so is a Ticket.
package quota
