// Package anthropic serves Anthropic's Messages API, POST /v1/messages and
// POST /v1/messages/count_tokens, for the clients that speak it (Claude-style
// coding agents, the Anthropic SDKs). It is a family of its own, a top-level
// package beside openai, because it is a wire format of its own that the
// root wires (its Config takes only leaf types) and no other family may
// import. It keeps nothing: "the local backend and the cloud hosts stay
// OpenAI Chat-Completions backends: the gateway translates at its edge"
// (issue 17). A request is translated into a chat-completions request and
// run through the same pipeline as POST /v1/chat/completions
// (internal/pipeline: pre-flight checks with memory and system-prompt
// injection, the content guard and cloud consent; quota admission; the
// upstream call with fallback before the first byte; the relay with its
// keepalive, bound and shutdown cut), and the answer translated back by a
// relay.Encoder. Every rule of the spec applies as on /v1/chat/completions:
// scope chat:write, GW-User-Id optional (memory injected when present),
// the rate limit, the allowlist, quotas.
//
// # Authentication and errors
//
// x-api-key: <token> authenticates like Authorization: Bearer <token> (the
// root's middleware, on every route). Every error of these routes, the
// middleware's 401, 403, 413 and 429 included, has Anthropic's shape with
// the catalog's status (ErrorBody, the routes' errcat.Format):
//
//	{"type":"error","error":{"type":"invalid_request_error","message":"...","code":"missing_field","param":"max_tokens"}}
//
// The anthropic-version header is accepted whatever its value and not
// required.
//
// # Request
//
//	Messages API                          chat completions
//	model (an alias of the allowlist)     model
//	max_tokens (required here)            max_tokens (floored, checked as on /v1)
//	system: string or text blocks         a system message first (blocks joined by "\n"), after the injected one
//	messages[].content: string            the same message
//	  text block                          a text part (one text part alone: a string content)
//	  image block, base64 source          an image_url part with a data: URI, checked as on /v1
//	  image block, url source             an image_url part with the URL (image_url_not_supported unless the model accepts URLs)
//	  tool_use block (assistant)          tool_calls[]: id, function name, arguments = the input's JSON
//	  tool_result block (user)            a tool message before the user's other blocks: tool_call_id,
//	                                      content = its text (blocks joined by "\n"), "Error: " first when is_error;
//	                                      its images go first in the user message that follows
//	tools[]: name, description,           tools[]: {"type":"function","function":{name, description, parameters}}
//	  input_schema
//	tool_choice auto | none | any | tool  tool_choice "auto" | "none" | "required" | {"type":"function","function":{"name"}}
//	tool_choice.disable_parallel_tool_use parallel_tool_calls false
//	temperature, top_p                    temperature (0 to 2, as on /v1), top_p
//	stop_sequences                        stop
//	stream                                stream, with stream_options.include_usage (usage for message_delta and the quota)
//	output_config.format json_schema      response_format {"type":"json_schema","json_schema":{"name":"output","schema"}}
//
// Accepted and left out, because leaving them out changes nothing a client
// can observe: metadata (its user_id is data: the end user is the
// GW-User-Id header), service_tier, and cache_control, top-level or in
// blocks (caching happens behind the gateway, invisible to clients).
// thinking {"type":"disabled"} asks for nothing and is accepted.
//
// What cannot be honoured answers 400 invalid_field naming it, never a
// silent drop: any other member (thinking enabled, top_k, mcp_servers,
// container, context_management, inference_geo, speed, unknown names),
// output_config.effort, a tool's strict, server tools (tools[N].type other
// than custom), and content blocks other than the above (document,
// thinking, redacted_thinking, server tool blocks, file image sources).
// Params name the Messages API's fields: max_tokens, messages[2].content[0].type,
// tools[1].input_schema; the pre-flight checks' image params become
// messages[].content[].source. A missing max_tokens is missing_field
// max_tokens, as Anthropic requires it.
//
// # Answer
//
// A JSON answer is a message:
//
//	{"id":"msg_<request id>","type":"message","role":"assistant","model":<alias>,
//	 "content":[{"type":"text","text":...},{"type":"tool_use","id","name","input"}...],
//	 "stop_reason":..., "stop_sequence":null,
//	 "usage":{"input_tokens","cache_creation_input_tokens":0,"cache_read_input_tokens","output_tokens"}}
//
// stop_reason: tool_use when the answer calls tools, max_tokens for
// finish_reason length, refusal for content_filter, stop_sequence (with
// stop_sequence set) when the upstream names the stop string that ended it
// (vLLM's choice stop_reason) and it is one of stop_sequences, else
// end_turn. usage: input_tokens is prompt_tokens less
// prompt_tokens_details.cached_tokens, which is cache_read_input_tokens;
// output_tokens is completion_tokens. A tool call whose arguments are not
// a JSON object answers 502 upstream_error: the Messages API has no way to
// carry it.
//
// A stream is Anthropic's event sequence, every event with its event: line:
//
//	message_start        the message with empty content and zero usage (the upstream tells the tokens at the end)
//	content_block_start  a text block, or a tool_use block with the call's id and name and input {}
//	content_block_delta  text_delta for content, input_json_delta for a tool call's arguments
//	content_block_stop   when the next block starts or the upstream's choice finishes
//	ping                 the keepalive, after 15 s without an upstream event
//	message_delta        at the end: stop_reason, stop_sequence, and the usage (input and output tokens)
//	gw.notice            each notice (below)
//	message_stop         the stream is complete
//
// A stream cut after its first byte (the upstream failed, the gateway shuts
// down) ends with an error event, {"type":"error","error":{...}}, which
// Anthropic's clients raise as an API error, and no message_stop.
//
// Notices (backend_fallback) are sent as the event gw.notice, data
// {"type":"gw.notice","gw_notice":{"code","message"}}, before message_stop
// ("A streaming response carries them as named SSE events whose names
// start with gw."): the Anthropic SDKs skip events they do not know, and
// the Messages API's own versioning policy has clients ignore unknown event
// types. They are also in the GW-Notice header, of a stream as of a JSON
// answer.
//
// # count_tokens
//
// POST /v1/messages/count_tokens takes the same body without max_tokens and
// answers {"input_tokens":N}: the gateway's pre-flight estimate (UTF-8
// bytes / 3 per text, a fixed count per message and per image, the tools'
// JSON, the injected system message), the estimate the context-window
// check and quotas use, not the model's tokenizer. It sends nothing
// upstream and counts against no quota.
package anthropic
