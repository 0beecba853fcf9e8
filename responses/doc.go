// Package responses serves OpenAI's Responses API: POST /v1/responses, and
// the stored responses, GET and DELETE /v1/responses/{id} and GET
// /v1/responses/{id}/input_items, for the clients that speak it (the OpenAI
// SDKs' responses, the Vercel AI SDK's default openai(model) provider,
// LangChain's useResponsesApi, the OpenAI Agents SDK, Codex-style coding
// agents). It is a family of its own, a top-level package beside openai and
// anthropic, because it is a wire format of its own that the root wires (its
// Config takes only leaf types) and no other family may import; and, like
// images and usage, it is stateful: it owns the resp/... buckets of the
// store.
//
// "The local backend and the cloud hosts stay OpenAI Chat-Completions
// backends: the gateway translates at its edge" (issue 17). A request is
// translated into a chat-completions request and run through the same
// pipeline as POST /v1/chat/completions (internal/pipeline: pre-flight checks
// with memory and system-prompt injection, the content guard and cloud
// consent; quota admission; the upstream call with fallback before the first
// byte; the relay with its keepalive, bound and shutdown cut), and the answer
// translated back by a relay.Encoder. Every rule of the spec applies as on
// /v1/chat/completions: scope chat:write, GW-User-Id optional (memory
// injected when present), the rate limit, the allowlist, quotas, usage
// records. Errors are the gateway's envelope, which is OpenAI's shape, with
// params naming the Responses API's fields.
//
// # Request
//
//	Responses API                          chat completions
//	model (an alias of the allowlist)      model; the response names the alias, never the backend's model
//	instructions                           a system message first, after the injected one
//	input: a string                        one user message
//	input items, in order:
//	  message, role system or developer    a system message (its input_text parts joined)
//	  message, role user                   a user message: input_text parts as text parts (one alone as a
//	                                       string), input_image parts as image_url parts {url, detail},
//	                                       checked by the pre-flight checks as on /v1 (a data: URI; an
//	                                       http(s) URL answers image_url_not_supported)
//	  message, role assistant              an assistant message of its output_text and refusal texts
//	  function_call (after it)             tool_calls[] of that assistant message (a new one when none precedes)
//	  function_call_output                 a tool message: tool_call_id, its output (input_text parts joined)
//	  item_reference                       the stored item of that id (found through the item index)
//	previous_response_id                   the chain's input and output items, oldest first, before input
//	tools[]: type function, name,          tools[]: {"type":"function","function":{name, description,
//	  description, parameters, strict        parameters ({"type":"object","properties":{}} when null), strict}}
//	tool_choice none | auto | required     the same (none and auto say nothing without tools)
//	tool_choice {"type":"function",name}   {"type":"function","function":{"name"}}
//	parallel_tool_calls false              parallel_tool_calls false (with tools)
//	text.format json_object                response_format {"type":"json_object"}
//	text.format json_schema                response_format {"type":"json_schema","json_schema":{name, schema, strict, description}}
//	max_output_tokens                      max_tokens (floored, checked as on /v1)
//	temperature, top_p                     temperature (0 to 2, as on /v1), top_p
//	stream                                 stream, with stream_options.include_usage (usage for response.completed and the quota)
//	metadata                               not sent: repeated in the response and stored
//
// Accepted and left out, because leaving them out changes nothing a client
// can observe: user and safety_identifier (the end user is the GW-User-Id
// header), prompt_cache_key and prompt_cache_retention (caching happens
// behind the gateway, invisible to clients), service_tier, stream_options;
// and the values that ask for nothing: background false, truncation
// disabled, include [], reasoning without effort or summary, text.format
// text. Members an input item carries besides those read (status,
// annotations, logprobs) describe the item as an answer had it.
//
// What cannot be honoured answers 400 invalid_field (or missing_field)
// naming it, never a silent drop: any other member (conversation, prompt,
// top_logprobs, max_tool_calls, unknown names), background true, truncation
// auto (the gateway never drops input; a prompt over the context window
// answers context_window_exceeded), any include value, reasoning.effort and
// reasoning.summary, text.verbosity, built-in tools (tools[N].type other
// than function: web_search, file_search, code_interpreter, computer use,
// mcp, ...), a tool_choice of another type, items other than the above
// (reasoning, built-in tool calls: input[N].type), input_file parts and
// file_id images, and images in a function_call_output (a tool message holds
// text only). Params name the Responses API's fields (input[2].content[0].type,
// tools[1].parameters); the pre-flight checks' params become
// input[].content[].image_url, input[].arguments, max_output_tokens and
// input.
//
// # Answer
//
// A JSON answer is the response object, valid against OpenAI's Response
// schema: id resp_ and 32 random hex digits, status completed (incomplete
// with incomplete_details.reason max_output_tokens for finish_reason length,
// content_filter for content_filter), output: a message item of one
// output_text part (annotations and logprobs empty) when the answer has
// text, then a function_call item per tool call (call_id the upstream's
// tool call id, or call_ and hex digits when it gave none); usage:
// input_tokens is prompt_tokens (cached tokens included, as OpenAI counts
// them), input_tokens_details {cached_tokens, cache_write_tokens 0},
// output_tokens, output_tokens_details.reasoning_tokens, total_tokens.
// Output items' ids are msg_, fc_ and hex digits.
//
// A stream is the Responses API's event sequence, each event with its
// event: line equal to its type and a sequence_number counting from 0:
//
//	response.created, response.in_progress   the response in progress, no output, no usage
//	response.output_item.added               a message item (at the first text), or a function_call item
//	response.content_part.added              the message's output_text part, empty
//	response.output_text.delta               text
//	response.function_call_arguments.delta   a piece of a call's arguments (items may interleave)
//	at the end, for each item in order:      response.output_text.done and response.content_part.done, or
//	                                         response.function_call_arguments.done; response.output_item.done
//	gw.notice                                each notice (below)
//	response.completed                       the whole response with its usage (response.incomplete when cut
//	                                         by max_output_tokens or the content filter)
//
// Keepalives are SSE comments. A stream cut after its first byte (the
// upstream failed, a store write failed, the gateway shuts down) ends with
// response.failed (status failed, error.code server_error, the output that
// arrived) and an error event with the gateway's code, message and param, at
// its top level as OpenAI's error event has them and again in an error
// member: the openai npm client raises an APIError at it, the Vercel AI SDK
// an error part.
//
// Notices (backend_fallback) are in the GW-Notice header, of a stream as of a
// JSON answer (a stream's notices are known before it starts), and in a
// stream also as the event gw.notice, data
// {"type":"gw.notice","sequence_number":N,"gw_notice":{"code","message"}},
// before response.completed ("A streaming response carries them as named SSE
// events whose names start with gw."): the openai npm client yields it as an
// event of a type its accumulator does not know and skips, the Vercel AI
// SDK maps it to its unknown chunk and drops it (both checked by
// e2e/node/compat.mjs).
//
// # Stored responses
//
// With store (the default, as OpenAI's), the response is stored before the
// client's answer is acknowledged (pipeline.Answer.Commit: a JSON answer is
// sent after it, a stream's response.completed too); a store failure answers
// 500 storage_error, or ends the stream as above, and leaves nothing
// written. store false keeps nothing. A response is its caller's: the
// tenant, and the end user named by GW-User-Id ("" for a request without
// it, which sees only the responses stored without it); every other caller,
// and an unknown or deleted id, gets 404 response_not_found (param
// response_id, previous_response_id or input[N].id, the field that named
// it).
//
// Layout (each key is made of store.AppendString components):
//
//	resp/responses  (tenant, user, response id) -> {"response": the response object as answered,
//	                "input": its input items (ids given, references resolved), "previous_response_id"}
//	resp/items      (tenant, user, item id) -> the id of the response that first stored it
//
// One transaction writes a response and the index entries of its input and
// output items that no stored item has yet (an item sent back by value keeps
// being found where it was first stored). Input items sent without an id get
// msg_, fc_ or fco_ and hex digits; a client's id holds at most 128 bytes.
//
// previous_response_id prepends the input and output items of its chain,
// oldest first: at most Config.MaxChain responses (default 100), a longer
// chain answers 400 invalid_field previous_response_id rather than being cut.
// A chain stops at a response that was deleted. The instructions of earlier
// responses are not carried over (OpenAI's rule). DELETE removes the response
// and its items' index entries: its items can no longer be referenced.
// input_items lists the response's own input items (not its chain's), as
// OpenAI pages them: order desc (the default) or asc, limit 1 to 100
// (default 20), after an item id of the list; include answers 400.
package responses
