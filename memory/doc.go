// Package memory holds the persisted context the gateway adds to chats: memory
// entries and versioned system prompts. It serves /v1/memory* and
// /v1/system-prompts*, builds the injected system message (SystemContext) and
// provides the model tools memory_remember and memory_forget (Tools).
//
// Every handler is a plain http.HandlerFunc; the root middleware has already
// checked the token, the route's scope and the GW-User-Id header (mandatory on
// all these routes). The handlers read the tenant from auth.FromContext, the
// user from httpx.UserID and path parameters with httpx.Param.
//
// # Memory entries
//
// An entry is a key and a string value in a bucket (scope_id, visibility,
// owner) of a tenant. A private bucket belongs to one user (GW-User-Id); the
// public bucket of a scope is shared by all the tenant's users. scope_id
// defaults to "default" (absent or empty) and is at most 256 bytes. A bucket
// holds at most 16384 bytes, counted as the sum of len(key) + len(value) in
// UTF-8 bytes over its entries: a write that lands exactly on 16384 is
// accepted, one byte more is 409 memory_bucket_full (param "value") and the old
// value stays. Every bucket has a usage record written in the transaction of
// each entry write, so the cap check reads two keys and never the bucket.
//
//	POST   /v1/memory  {"key","value","visibility","scope_id"?}
//	       upsert; 200 {"key","value","visibility","scope_id","created_at","updated_at"}
//	GET    /v1/memory?visibility=&scope_id=
//	       200 {"object":"list","data":[entry...]} sorted by key; without
//	       visibility: the caller's private entries, then the scope's public ones
//	DELETE /v1/memory?visibility=&key=&scope_id=
//	       200 {"deleted":true}, or {"deleted":false} when there was no such entry
//	GET    /v1/memory/usage?visibility=&scope_id=
//	       200 {"used_bytes","cap_bytes","entries"}
//
// Validation: an absent key, value or visibility is 400 missing_field
// (body.key, query.key, ...); an empty one, a visibility other than private or
// public, or a bad scope_id is 400 invalid_field. REST writes never need a
// confirm token.
//
// # System prompts
//
// Levels: tenant (one per tenant), scope (one per scope_id, default "default",
// given as body scope_id on PUT and query scope_id elsewhere) and user (one per
// GW-User-Id). scope_id on the tenant or user level is 400 invalid_field; an
// unknown level is 400 invalid_field with param "level". Each PUT stores
// version n = last + 1 (numbers are never reused, even after a hard delete) and
// makes it current; content is at most 8192 bytes (400 system_prompt_too_large,
// param "content"); empty content is 400 invalid_field (use the soft delete).
//
//	PUT    /v1/system-prompts/:level            {"content","scope_id"?}  200 version
//	GET    /v1/system-prompts/:level            200 current version; 404 system_prompt_version_not_found when none
//	GET    /v1/system-prompts/:level/versions   200 {"object":"list","level","current":n|null,"data":[version...]} oldest first
//	PUT    /v1/system-prompts/:level/current/:n rollback (or restore after a soft delete); 200 version
//	DELETE /v1/system-prompts/:level/v/:n       hard delete; 200 {"deleted":true,"n":n}
//	DELETE /v1/system-prompts/:level            soft delete; 200 {"deleted":true|false} (whether a version was current)
//
// A version is {"n","content","is_current","created_at"}. State transitions:
// hard delete of the current version is 409
// system_prompt_current_locked (param "version") and changes nothing; a
// rollback makes n current and the former current version deletable; a soft
// delete leaves no current version, after which every version may be
// hard-deleted and any may be made current again. An n that names no stored
// version, including a path segment that is not a positive integer, is 404
// system_prompt_version_not_found (param "version").
//
// # Injection
//
// SystemContext returns one text, the first system message of a chat. Its
// parts, separated by one empty line ("\n\n"), are, each only when present:
//
//  1. the current tenant-level prompt,
//  2. the current scope-level prompt of scope "default",
//  3. the current user-level prompt of the user,
//  4. the memory list: the line "Memory:" followed by one line "- key: value" per
//     entry, first the user's private entries of scope "default", then the public
//     entries of scope "default", each group sorted by key (byte order). Line
//     breaks in a key become spaces; each later line of a multi-line value is
//     indented by two spaces.
//
// Prompts are trimmed of surrounding white space. Nothing stored gives "".
// Without a user, parts 3 and the private entries are left out. For example:
//
//	You are the ACME assistant.
//
//	Answer in French.
//
//	Memory:
//	- name: Ada
//	- office: Paris
//
// # Memory tools
//
// See Service.Tools. Confirm tokens of public memory_remember live in the
// store, so a token issued by one gateway is redeemed on any other sharing its
// store, after a restart too. A redemption and the write it confirms are one
// transaction: the token is consumed exactly once, and only by a write that
// happened. Expired tokens are deleted when their tenant asks for the next
// confirmation; a tenant holds at most Config.MaxPendingConfirms.
//
// # Storage
//
// Buckets mem/entries, mem/usage, mem/prompts, mem/prompt-heads and
// mem/confirms (see service.go); every write is one Update transaction, so a
// store failure (500 storage_error) leaves nothing half-written, and a new
// Service over the same store sees everything.
package memory
