// Package chat serves POST /c1/chat, the cache-augmented chat with conversation
// persistence. Its handler is (*Service).Chat; the conversation storage is
// reached through the History interface, which the conversation family's
// *conversation.Service implements (chat never imports it).
//
// # A turn
//
//  1. The ChatRequest is decoded strictly (unknown fields: 400 invalid_field
//     body.<name>; a wrong JSON type: invalid_field body.<field>) and checked:
//     message required (missing_field body.message), a string or a non-empty
//     array of content parts; provider in auto|local|cloudA|cloudB; temperature
//     in 0..2; keep_last_turns >= 0; max_tokens >= 0, and 0 is
//     max_tokens_below_minimum; images an array of
//     {url, detail?} (body.images[N].<field>); tools an array, tool_choice
//     auto|none|required or an object, response_format an object, attachments
//     an array. tools, tool_choice and response_format may be absent.
//  2. The conversation id is the body's conversation_id or the gw-conversation-id
//     / x-conversation-id header (either name, any case); body and header that
//     differ are 400 invalid_field body.conversation_id, the two headers that
//     differ invalid_field headers.x-conversation-id. An empty string counts as
//     absent; ids are at most 256 bytes (a header's also UTF-8, else
//     invalid_field naming the header). Without one a random (v4) UUID is
//     generated. The id is sent back under both header names on every answer
//     once it is known, errors included.
//  3. The alias: model when set; else provider gives <base>-<provider> (auto:
//     <base>), base being the tenant's default_model without a trailing -local,
//     -cloudA or -cloudB; else default_model.
//  4. The stored history is loaded; a conversation of another end user of the
//     tenant answers 404 conversation_not_found (param conversation_id) and
//     reaches no model. Ids are scoped to the tenant: an id that another
//     tenant uses is, to this one, an id it never stored.
//  5. The upstream body is an OpenAI chat-completions request: the injected
//     system message (Config.Inject, inserted first by the pre-flight checks),
//     the conversation's stored system prompt, the stored user/assistant messages
//     (the last 2*keep_last_turns of them when keep_last_turns is set; a gw
//     notice history_trimmed says when messages were left out;
//     stored tool calls replayed as described under "Tool calls"), and the
//     current user message: message as given, or, when message is a string
//     and images are given, the parts array [text, image_url...] (images is
//     ignored when message is a parts array). tools, tool_choice,
//     response_format, max_tokens, temperature and stream (default true) are
//     passed through; a stream asks for usage (stream_options.include_usage,
//     whose final usage chunk reaches the client too). attachments, "the same
//     additive field" as on /v1, are handled by the pre-flight checks as there.
//  6. The shared pre-flight checks (internal/preflight, params of the Codes
//     table, "body." for field errors) run on that body: model allowlist, image
//     checks, vision capability, tool-call arguments, max_tokens flooring
//     (gw-applied and x-rust-api-applied), context window, cloud consent.
//  7. With Config.Quota, the turn is admitted against the tenant's daily
//     budget for the alias (see Quotas); a refusal answers 429 and reaches no
//     model.
//  8. The answer is relayed (internal/relay) while the reply is captured; a gw
//     notice backend_fallback says when a later backend of the chain answered.
//
// # Persistence
//
// When the answer ends cleanly the user message and the captured reply are
// appended in one transaction, and only then is the turn acknowledged. The
// commit runs as relay.Options.Commit, which the relay calls once the whole
// answer arrived and the reply is captured, and before it writes the
// acknowledgement: a JSON answer's status and body are written after the
// commit; a stream sends its content as it comes, but its gw.notice events and
// data: [DONE] only after the commit (keepalives go on meanwhile). A commit that
// fails answers 500 storage_error (JSON), or ends the stream with a gw.error
// event carrying storage_error and no [DONE]. A store failure before the answer
// (loading the history) is 500 storage_error.
//
// The reply is stored as {"role":"assistant","content":<text>} plus
// "tool_calls" in OpenAI's message shape when the model called tools; content
// is "" (not null) when the reply only called tools, so that content is always a
// string or an array as StoredMessage says. The user message is stored as the
// model saw it: images as parts, document attachments as their text part.
//
// With "ephemeral": true nothing is stored (the stored history is still sent).
// A turn that does not end cleanly stores nothing at all, neither the user
// message nor a partial reply: an upstream error, a stream that the upstream
// cuts or ends without [DONE], a client that goes away before the commit. The
// stored history therefore always consists of whole turns. (A client that goes
// away after the commit but before it read [DONE] has its turn stored.)
//
// The system_prompt of a request is used and stored only when the conversation
// has no stored message yet: it becomes the conversation's first
// message, role system, and is ignored on later turns.
//
// # Tool calls
//
// /c1 passes tools through but has no way for the client to send tool results,
// so a stored reply's tool_calls are never answered by tool messages, and
// strict OpenAI-compatible backends reject (400) an assistant tool call without
// its results. When the upstream body is built, an assistant message of the
// stored history whose tool_calls are not all answered by the tool messages
// directly after it is therefore sent without tool_calls: with its content, or,
// when that is empty, the text "[called tools: <name>, <name>...]" naming the
// called functions in order. (Were some calls answered, only the unanswered
// ones would be left out.) This also keeps a tool call whose arguments are not
// valid JSON from failing every later turn with tool_call_arguments_invalid. The
// stored history is unchanged: GET /c1/conversations/{id} shows the tool_calls.
//
// # Quotas
//
// With Config.Quota (one Accountant shared with /v1), each turn is admitted
// after the pre-flight checks and before the upstream call, against the
// tenant's daily budget for the alias (auth.Tenant.Quotas, the token file's
// "quotas"). The reservation is max_tokens after flooring, or, without
// max_tokens, min(context_window - prompt estimate, 4096), plus the pre-flight
// prompt estimate. A refusal answers 429 model_quota_exhausted, or
// cloudB_daily_quota_exhausted (param model, available_fallbacks) for an alias
// pinned to cloudB, with Retry-After until the next 00:00 UTC; the
// conversation id headers are sent and nothing is stored. When the answer ends
// the ticket is settled to usage.total_tokens when the answer carried usage (a
// JSON answer normally does; a stream does when the backend honours
// stream_options.include_usage, which /c1 always sends) and to the whole
// reservation otherwise, including a stream cut after its first byte or a
// client that went away. An upstream call that
// fails before any answer releases the reservation; the turn still counts
// against requests_per_day. A failed commit still settles: the model did
// answer.
package chat
