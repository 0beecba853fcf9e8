// Package agents serves the /a1/agents family: agents loaded from files, agent
// chat with a tool loop, agent sessions with compaction and lineage, and the
// built-in agent_call tool.
//
// # Wiring
//
//	list, warnings, err := agents.Load(dir, reg) // err: gatewayd refuses to start
//	for _, w := range warnings { log.Warn(w.String()) }
//	svc, err := agents.New(agents.Config{Agents: list, Tools: reg, Upstream: up, Catalog: cat,
//		Store: st, Clock: clk, Logger: logger, Inject: mem.SystemContext, Keepalive: ka,
//		Quota: quotas}) // the Accountant of /v1 and /c1
//	err = reg.Register(svc.CallTool()) // agent_call needs the Service, so it comes after New
//
// Routes (path parameters :name and :sid; scopes and GW-User-Id rules):
//
//	GET  /a1/agents                                  agents:read   user optional
//	POST /a1/agents/:name/chat                       agents:write  user optional
//	POST /a1/agents/:name/sessions                   agents:write  user required
//	GET  /a1/agents/:name/sessions                   agents:read   user or tenant-admin read
//	GET  /a1/agents/:name/sessions/:sid              agents:read   user or tenant-admin read
//	POST /a1/agents/:name/sessions/:sid/messages     agents:write  user required
//	POST /a1/agents/:name/sessions/:sid/compact      agents:write  user required
//	GET  /a1/agents/:name/sessions/:sid/lineage      agents:read   user or tenant-admin read
//
// Agent chat needs agents:write rather than chat:write: it is the same action
// as a session message, and both are in the agents family (/a1), and a
// token denied agents:write cannot reach it through agent_call either (whose
// Scope is agents:write).
//
// # Agent files
//
// One JSON object per file, in a directory; only names ending in ".json" (lower
// case) count, hidden files and subdirectories are ignored:
//
//	{"name","description","model","system_prompt","tools":[...],"rag_index"?,"max_tool_rounds"?}
//
// name (1 to 64 of [a-zA-Z0-9_-], unique) and model are required; a field of
// the wrong type and max_tool_rounds outside 1..16 (default 4) are errors
// naming the file; an unknown field (ignored) and a tool named twice (kept
// once) are Warnings. A tool that is not registered is a Warning; the
// agent's chat (and its session messages, and agent_call of it) answers 400
// agent_tool_not_registered (param tools) while the tool is missing from the
// registry. agent_call never warns: this package provides it. With rag_index,
// the system prompt gains the line `To look up facts, call the rag_search tool
// with index "<rag_index>".`; the agent must list rag_search (the rag
// package's tool; agents does not import rag), else Load warns.
//
// GET /a1/agents answers {"object":"list","data":[{"name","description",
// "model","tools"}...]} sorted by name. The system prompt is not shown: it is
// the operator's configuration, like the tenant's prompts.
//
// # Agent chat
//
// POST /a1/agents/{name}/chat takes {"messages":[...],"stream"?} (OpenAI chat
// messages; stream defaults to false, as on /v1). Checks, in order: 404
// agent_not_found (name); GW-Caller-Depth (absent is 0; not a non-negative
// integer is 400 invalid_field headers.gw-caller-depth; 3 or more is 400
// recursion_depth_exceeded, param headers.gw-caller-depth); the body (unknown
// fields invalid_field body.<name>; messages missing is missing_field
// body.messages, not a non-empty array of objects invalid_field body.messages);
// agent_tool_not_registered; then the shared pre-flight checks of /c1
// (internal/preflight, params with "body." for field errors; the agent's model
// must be in the tenant's allowlist: model_not_in_allowlist).
//
// The upstream request is {"model":<agent model>,"messages":[injected system
// message, agent system prompt, client messages...],"stream",
// "tools":[{"type":"function","function":{"name","description","parameters"}}]}
// with the agent's tools from the registry. The injected message
// (Config.Inject: prompts and memory) is added only when the request names a
// user (GW-User-Id is optional here; "memory injection is skipped without it").
//
// # Tool loop
//
// When the model answers with tool_calls, each call of a tool the agent lists
// is run through tools.Registry.Run with the principal (so a tool's Scope is
// checked against the token), the user and the caller depth (in the context:
// CallerDepth), in order; the assistant message (its text and the executed
// calls) and one {"role":"tool","tool_call_id","content"} message per call are
// appended and the model is called again. A tool's result is sent as its JSON;
// a tool error as {"error":{"code","message","param"}}, so that the model can
// recover. Arguments that are not a JSON object are not run (the error says
// so) and are replayed as {} so that strict backends accept the history.
//
// A call of a tool the agent does not list is stripped: not run, not replayed,
// and the answer carries the notice tool_call_stripped. When an answer held
// only such calls, the model is asked again without tools. After
// max_tool_rounds rounds that ran tools, the model is called once more without
// tools and the answer carries tool_loop_capped. backend_fallback is added
// when a round was answered by a fallback backend.
//
// The last round's answer is relayed with internal/relay exactly as /v1
// relays: JSON with the notices in GW-Notice, or SSE with gw.notice events
// before data: [DONE]. Upstream failures map as on /v1 (upstream_unavailable,
// upstream_timeout, upstream_bad_request with the upstream status,
// upstream_error; an answer that is not JSON or is an error object is 502
// upstream_error). Every failure during the tool rounds is an ordinary error
// answer: nothing reaches the client before the last round.
//
// Streaming: every round is requested with stream true. A round offered tools
// is read until its first text delta (the answer is final: the stream is
// handed to the relay, what was read is replayed first, and the rest streams
// live) or its first tool-call delta (the round is read to its end and the
// loop goes on). A round without tools is relayed live at once. Nothing is
// sent, not even keepalives, while tools run. An answer that starts with text
// and then calls tools is relayed as the model sent it; its calls are not run.
//
// # Quotas
//
// With Config.Quota (the Accountant shared with /v1 and /c1), every upstream
// call of an agent chat is admitted against the tenant's daily budget for the
// agent's alias before it is made: each tool round, the final round, the
// rounds of agent_call's nested chat and of a session message, and a
// compaction's summary call. Each call counts one request against
// requests_per_day. Its reservation is quota's default output reservation
// (an agent request has no max_tokens: min(context_window - prompt estimate,
// 4096)) plus the prompt estimate: the pre-flight estimate for the first round
// and for the summary call; later rounds add, per message the tool loop
// appended, internal/preflight's per-message cost plus the message's JSON
// size at its bytes per token.
//
// A call is settled to the usage the upstream reported (usage.total_tokens of
// a JSON answer; of a stream's usage chunk, which streamed rounds ask for with
// stream_options.include_usage: read by the loop for a tool round, by the
// relay's Capture for a relayed final round), to the whole reservation when
// there is none (also a stream cut short), and cancelled when the upstream
// call failed before any answer (the request stays counted).
//
// A refusal answers what /c1 answers: 429 model_quota_exhausted, or
// cloudB_daily_quota_exhausted (param model, available_fallbacks) for an alias
// pinned to cloudB, with Retry-After until 00:00 UTC, as a JSON error before
// anything is streamed, also when a later tool round is refused (the earlier
// rounds' tools did run, and their calls stay counted). A refusal of
// agent_call's nested chat is that tool's error result, fed back to the
// calling agent's model like any tool error.
//
// # agent_call
//
// CallTool's arguments {"agent","message"} ask agent in-process with message as
// the only user message, at the caller's depth plus one, and answer
// {"agent","reply","notices"?}. A depth of 3 or more is recursion_depth_exceeded;
// an unknown agent agent_not_found (param name). From an agent chat with
// GW-Caller-Depth d the tool runs at depth d, so it calls at d+1; from
// POST /v1/tools/execute it calls at depth 1.
//
// # Sessions
//
// A session belongs to a tenant, an end user (GW-User-Id) and an agent. On
// the wire (create, get and compact answer it with messages; list without):
//
//	{"id":"sess_<32 hex>","agent_name","user_id","status":"live"|"archived",
//	 "compact_keep_last_n","successor_session_id":null|id,
//	 "predecessor_session_id":null|id,"summary":null|text,"message_count",
//	 "created_at","updated_at","messages":[{"role","content"}...]}
//
// POST .../sessions takes an optional body {"compact_keep_last_n"?}: an integer
// from 1 to the tenant's cap (tenantconfig: 200 unless config_caps lifts it),
// default the tenant config compact_keep_last_n; else 400 invalid_field
// body.compact_keep_last_n. It answers 201. GET .../sessions lists the user's
// sessions of the agent, newest first, as {"object":"list","data",
// "limit","offset","has_more"} (limit 1..500, default 50; offset >= 0; else
// invalid_field query.limit / query.offset). A tenant admin without GW-User-Id
// sees every user's sessions on the GET endpoints (docs/contract.md#818-tenant-wide-view).
//
// A session that does not exist, or is another user's or another tenant's, is
// 404 session_not_found (session_id); a session of another agent than the
// path's is 400 session_agent_mismatch (session_id). An unknown agent in the
// path is 404 agent_not_found first.
//
// POST .../messages takes {"message","stream"?}: message a string or a
// non-empty array of content parts. The upstream gets the agent's system
// prompt, the summary (as a system message "Summary of the earlier
// conversation:\n<summary>") when there is one, the stored messages and the
// new user message, and the tool loop runs as on chat. The user message and
// the reply text ({"role":"assistant","content"}; the tool rounds are not
// stored) are appended in one transaction before the answer is acknowledged
// (relay.Options.Commit, as /c1): a failed commit answers 500 storage_error
// (or a gw.error event), a failed turn stores nothing. The answer carries the
// header GW-Session-Id. A write to an archived session is 409
// session_compact_conflict (session_id) with a top-level successor_session_id:
// an archived session is read-only, and the catalog's conflict code for an
// archived session fits better than invalid_field (the field is valid; the
// session's state conflicts).
//
// # Compaction and lineage
//
// POST .../compact (no body, or {}) on a live session with more than
// compact_keep_last_n messages asks the agent's model (no tools, not streamed)
// for a summary of the older messages, folding in the session's own summary;
// then, in one transaction, the session becomes archived with its
// successor_session_id, and a new live successor is created with the same
// compact_keep_last_n, predecessor_session_id, the summary and copies of the
// last compact_keep_last_n messages. It answers 200 with the successor. N or
// fewer messages, or an archived session, is 409 session_compact_conflict; a
// failed summarisation answers the upstream error and changes nothing, as does
// a storage failure; a session that took a new message meanwhile is 409.
//
// GET .../lineage answers {"sessions":[{"id","status","successor_session_id"}...]},
// the whole chain the session belongs to, oldest first, from any of its
// sessions.
//
// # Storage
//
// Buckets agents/* (str(x) is store.AppendString):
//
//	agents/sessions  str(tenant) str(id)                               -> session record (JSON)
//	agents/messages  str(tenant) str(id) u64(seq)                      -> message (JSON)
//	agents/by-user   str(tenant) str(user) str(agent) inv(created) str(id) -> ""
//	agents/by-tenant str(tenant) str(agent) inv(created) str(id)       -> ""
//
// inv is MaxUint64 minus created_at in Unix ns, so index scans list newest
// first. Every write (create, a turn, a compaction) is one Update transaction.
package agents
