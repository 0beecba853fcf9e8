// Package chat serves POST /c1/chat, the cache-augmented chat with conversation
// persistence. Its handler is (*Service).ServeHTTP; the conversation storage is
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
//     max_tokens_below_minimum (DECISIONS 8 item 28); images an array of
//     {url, detail?} (body.images[N].<field>); tools an array, tool_choice
//     auto|none|required or an object, response_format an object, attachments
//     an array. tools, tool_choice and response_format may be absent.
//  2. The conversation id is the body's conversation_id or the gw-conversation-id
//     / x-conversation-id header (either name, any case); body and header that
//     differ are 400 invalid_field body.conversation_id, the two headers that
//     differ invalid_field headers.x-conversation-id. An empty string counts as
//     absent; ids are at most 256 bytes. Without one a random (v4) UUID is
//     generated. The id is sent back under both header names on every answer
//     once it is known, errors included.
//  3. The alias: model when set; else provider gives <base>-<provider> (auto:
//     <base>), base being the tenant's default_model without a trailing -local,
//     -cloudA or -cloudB (DECISIONS 8 item 6); else default_model.
//  4. The stored history is loaded; a conversation of another end user (or a
//     tenant's id that a user of another tenant sends: tenants never share
//     conversations) answers 404 conversation_not_found (param conversation_id)
//     and reaches no model.
//  5. The upstream body is an OpenAI chat-completions request: the injected
//     system message (Config.Inject, inserted first by the pre-flight checks),
//     the conversation's stored system prompt, the stored user/assistant messages
//     (the last 2*keep_last_turns of them when keep_last_turns is set, DECISIONS 8
//     item 16; a gw notice history_trimmed says when messages were left out), and
//     the current user message: message as given, or, when message is a string
//     and images are given, the parts array [text, image_url...] (images is
//     ignored when message is a parts array). tools, tool_choice,
//     response_format, max_tokens, temperature and stream (default true) are
//     passed through; stream_options is not added. attachments are handled by
//     the pre-flight checks exactly as on /v1 (DECISIONS 8 item 31).
//  6. The shared pre-flight checks (internal/preflight, params of the spec's
//     table, "body." for field errors) run on that body: model allowlist, image
//     checks, vision capability, tool-call arguments, max_tokens flooring
//     (gw-applied and x-rust-api-applied), context window, cloud consent.
//  7. The answer is relayed (internal/relay) while the reply is captured; a gw
//     notice backend_fallback says when a later backend of the chain answered.
//
// # Persistence
//
// When the answer ends cleanly the user message and the captured reply are
// appended in one transaction, and only then is the turn acknowledged: a JSON
// answer is written after the commit; a stream sends its content as it comes,
// but its gw.notice events and data: [DONE] only after the commit. A commit that
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
// has no stored message yet (rule 5): it becomes the conversation's first
// message, role system, and is ignored on later turns.
package chat
