package errcat

// entries is the catalog, in the order of the Codes table (docs/contract.md#codes);
// chatgw's own additions come last. Adding an entry is non-breaking; renaming or removing one
// bumps Version. Titles read as messages: Write sends them when an *Error has none.
var entries = []Entry{
	{
		Code: MissingAuthorization, Type: TypeAuthentication, HTTPStatus: 401, TypicalParam: ptr("headers.authorization"),
		Title: "Missing authorization",
		Description: "The request reached an authenticated endpoint without an `Authorization` header. " +
			"Every path except the public ones (`/`, `/healthz`, `/readyz`, `/errors`, `/openapi`, " +
			"`/openapi.json`, `/redoc`, `/docs/*`, `/playground`) needs a bearer token. " +
			"`param` is `headers.authorization`.",
		Remediation: "Send `Authorization: Bearer <token>` with a token issued by the gateway operator.",
	},
	{
		Code: InvalidAuthorization, Type: TypeAuthentication, HTTPStatus: 401, TypicalParam: ptr("headers.authorization"),
		Title: "Invalid authorization",
		Description: "The `Authorization` header does not carry a bearer token known to the gateway's token catalog, " +
			"or the `GW-Tenant-Id` header names a tenant the token is not bound to. " +
			"Tokens are compared in constant time and changed server-side only; there is no refresh endpoint. " +
			"`param` is `headers.authorization`.",
		Remediation: "Check the token for typos or revocation and ask the operator for a valid one; " +
			"omit `GW-Tenant-Id` or set it to the token's own tenant.",
	},
	{
		Code: Forbidden, Type: TypePermission, HTTPStatus: 403,
		Title: "Forbidden",
		Description: "The token is valid but lacks the scope the endpoint needs. Scopes have the form " +
			"`resource:action[:qualifier]` (for example `chat:write`, `tenant_config:write`, " +
			"`system_prompts:write:tenant`); a token gets them from its role and extra scopes, minus its denied scopes. " +
			"`param` is null.",
		Remediation: "Use a token whose role or extra scopes grant the needed scope (the `member` role lacks " +
			"`tenant_config:write`, `system_prompts:write:tenant` and `system_prompts:write:scope`), " +
			"or ask the operator to grant it.",
	},
	{
		Code: RateLimitExceeded, Type: TypeRateLimit, HTTPStatus: 429,
		Title: "Rate limit exceeded",
		Description: "The token's request bucket is empty. Each bearer token has its own token bucket " +
			"(default 1 request per second, burst 30, tunable by the operator), keyed by the SHA-256 of the token " +
			"rather than the IP address, so every client using one token shares it. " +
			"The message is always `Rate limit exceeded` and `param` is null. " +
			"The `Retry-After` header gives the whole seconds (at least 1) until a request is accepted again.",
		Remediation: "Wait the number of seconds in `Retry-After`, then retry; pace requests or back off " +
			"exponentially, and ask the operator for a higher per-token rate if the limit is too low.",
	},
	{
		Code: BodyTooLarge, Type: TypeTooLarge, HTTPStatus: 413,
		Title: "Request body too large",
		Description: "The request body is larger than the gateway's body limit: 33554432 bytes (32 MiB) by default, " +
			"set by the operator with `GATEWAY_BODY_LIMIT_BYTES`. The request is not processed. `param` is null.",
		Remediation: "Send a smaller body: downscale or drop inline images, split large documents, " +
			"or send fewer messages.",
	},
	{
		Code: InvalidJSON, Type: TypeInvalidRequest, HTTPStatus: 400,
		Title: "Invalid JSON",
		Description: "The request body could not be read, is not valid JSON, or is not a single JSON object. " +
			"`param` is null. A well-formed body with a field of the wrong type, or with an unknown field " +
			"in one of the gateway's own schemas, answers `invalid_field` instead.",
		Remediation: "Send exactly one JSON object, UTF-8 encoded, with `Content-Type: application/json`.",
	},
	{
		Code: MissingField, Type: TypeInvalidRequest, HTTPStatus: 400,
		Title: "Missing required field",
		Description: "A required field, query parameter or header is absent; `param` names it. " +
			"On the OpenAI-compatible `/v1` passthroughs it is the OpenAI field name (`messages`, `model`); " +
			"elsewhere a location path: `body.<field>` (nested with dots), `query.<name>` or " +
			"`headers.<lower-case-name>`. The `GW-User-Id` header is mandatory on `/c1/*`, `/v1/memory*`, " +
			"`/v1/system-prompts*`, agent sessions and runs (a `tenant_admin` token may omit it on some " +
			"read-only endpoints for a tenant-wide view); without it `param` is `headers.gw-user-id`.",
		Remediation: "Add the field, parameter or header named in `param` and retry.",
	},
	{
		Code: InvalidField, Type: TypeInvalidRequest, HTTPStatus: 400,
		Title: "Invalid field",
		Description: "A field has the wrong type, is out of range, is not one of the allowed values, " +
			"or is not allowed at all; `param` names it with the same rules as `missing_field` " +
			"(`temperature` on `/v1`, `body.temperature` on `/c1`, `query.limit`, `body.<name>` for an " +
			"unknown field in the gateway's own schemas). A `user_id` in a body or query string is always " +
			"rejected this way (`body.user_id`, `query.user_id`): the end user is identified only by the " +
			"`GW-User-Id` header.",
		Remediation: "Fix or remove the field named in `param`; identify the end user with `GW-User-Id`.",
	},
	{
		Code: ModelNotInAllowlist, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("model"),
		Title: "Model not in allowlist",
		Description: "The requested model alias is not one the tenant may use. On `/c1/chat` the alias may come " +
			"from `model`, from `provider` or from the tenant's `default_model`. `param` is `model`.",
		Remediation: "Use an alias listed by `GET /v1/models` or `GET /v1/info` for your token, " +
			"or ask the operator to add the alias to the tenant's `models`.",
	},
	{
		Code: MaxTokensBelowMinimum, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("max_tokens"),
		Title: "max_tokens below minimum",
		Description: "`max_tokens` is below 1, so it stays invalid even after flooring (on `/c1/chat` this is 0; " +
			"a negative value there is `invalid_field` `body.max_tokens`). Values from 1 up to the model's " +
			"`constraints.min_max_tokens` are not an error: they are raised silently and reported in the " +
			"`gw-applied: max_tokens_floored=<N>` header. `param` is `max_tokens`.",
		Remediation: "Send `max_tokens` of at least 1, or omit it; `GET /v1/info` shows each model's " +
			"`constraints.min_max_tokens`.",
	},
	{
		Code: ImageURLNotSupported, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("messages[].content[].image_url.url"),
		Title: "Image URL not supported",
		Description: "An image's `image_url.url` is an `http` or `https` URL. The gateway does not fetch remote " +
			"images (`constraints.accepts_image_url` is false for every backend); images are sent inline. " +
			"`param` is `messages[].content[].image_url.url`.",
		Remediation: "Download the image and send it inline as `data:image/<jpeg|png|webp|gif>;base64,<data>`.",
	},
	{
		Code: ImageDecodeError, Type: TypeInvalidRequest, HTTPStatus: 400,
		Title: "Image could not be decoded",
		Description: "An inline image is not a well-formed data URI, has no MIME type, or its bytes are not a valid " +
			"image. It is checked before forwarding, for content parts, `/c1` `images` and `image` attachments. " +
			"`param` is null.",
		Remediation: "Send `data:image/<jpeg|png|webp|gif>;base64,<data>` holding the image file's real bytes.",
	},
	{
		Code: ImageBase64Invalid, Type: TypeInvalidRequest, HTTPStatus: 400,
		Title: "Invalid image base64",
		Description: "The base64 payload of an inline data-URI image is not valid base64. It is checked before " +
			"forwarding, for content parts, `/c1` `images` and `image` attachments. `param` is null.",
		Remediation: "Encode the image bytes with standard base64 (RFC 4648) without line breaks.",
	},
	{
		Code: ModelNotVisionCapable, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("messages[].content[].image_url"),
		Title: "Model does not accept images",
		Description: "An image (a content part or an `attachments` entry of `kind` `image`) was sent to a model " +
			"whose `modalities.image_in` is false. The gateway never drops an image silently. " +
			"`param` is `messages[].content[].image_url`.",
		Remediation: "Use a vision alias (`modalities.image_in` true in `GET /v1/info`) or remove the images.",
	},
	{
		Code: ToolCallArgumentsInvalid, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("messages[].tool_calls[].function.arguments"),
		Title: "Invalid tool call arguments",
		Description: "A `function.arguments` of an assistant message's `tool_calls` is not a string holding valid " +
			"JSON. `param` is `messages[].tool_calls[].function.arguments`.",
		Remediation: "Send `arguments` as a JSON-encoded string, exactly as the model returned it.",
	},
	{
		Code: ContextWindowExceeded, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("messages"),
		Title: "Context window exceeded",
		Description: "The prompt plus the requested `max_tokens` would not fit the model's `context_window`. " +
			"The gateway checks before forwarding, on `/v1` and `/c1` (stored history included), with a " +
			"conservative estimate: UTF-8 bytes / 3 for text plus a fixed count per image and per message. " +
			"`param` is `messages`.",
		Remediation: "Shorten the messages, lower `max_tokens`, set `keep_last_turns` on `/c1/chat`, " +
			"or use a model with a larger `context_window` (see `GET /v1/info`).",
	},
	{
		Code: UpstreamBadRequest, Type: TypeInvalidRequest, HTTPStatus: 400,
		Title: "Upstream rejected the request",
		Description: "The model backend answered with a 4xx status, on the last backend of the chain or on a " +
			"pinned alias. The gateway passes that status on instead of 502, so the response status may be " +
			"another 4xx than 400; `message` holds the upstream's reason. On an upstream 429 its `Retry-After` " +
			"header is passed on. `param` is null.",
		Remediation: "Read `message` and fix what the backend rejected (often a parameter the model does not " +
			"support); on 429 wait for `Retry-After` before retrying.",
	},
	{
		Code: EmbeddingInputTooLarge, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("input"),
		Title: "Embedding input too large",
		Description: "`POST /v1/embeddings` received more than 256 `input` elements, or an element over 8192 " +
			"UTF-8 bytes (about 2k tokens). `param` is `input`.",
		Remediation: "Send at most 256 elements per request and chunk each text to at most 8192 bytes.",
	},
	{
		Code: AgentNotFound, Type: TypeNotFound, HTTPStatus: 404, TypicalParam: ptr("name"),
		Title: "Agent not found",
		Description: "No agent named like the `{name}` in `/a1/agents/{name}/...` is configured. Agents are " +
			"loaded from files when the gateway starts. `param` is `name`.",
		Remediation: "List the configured agents with `GET /a1/agents`; new agents are added by the operator.",
	},
	{
		Code: AgentToolNotRegistered, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("tools"),
		Title: "Agent tool not registered",
		Description: "The agent's `tools` list names a tool the gateway has not registered. Such an agent is " +
			"loaded with a warning that names its file and the tool, and every chat with it answers this " +
			"error. `param` is `tools`.",
		Remediation: "Ask the operator to fix the agent file: remove the tool or register it " +
			"(`POST /v1/tools/execute` with `{\"inspect\":true}` lists the registered tools).",
	},
	{
		Code: RecursionDepthExceeded, Type: TypeInvalidRequest, HTTPStatus: 400,
		Title: "Agent recursion depth exceeded",
		Description: "`POST /a1/agents/{name}/chat` received a `GW-Caller-Depth` header of 3 or more. " +
			"The `agent_call` tool sends its caller's depth plus 1, so agents calling agents stop here. " +
			"`param` is null.",
		Remediation: "Keep agent chains at most three agents deep, and do not send `GW-Caller-Depth` from clients.",
	},
	{
		Code: IndexNotFound, Type: TypeNotFound, HTTPStatus: 404, TypicalParam: ptr("id"),
		Title: "RAG index not found",
		Description: "The RAG index `{id}` of `/a1/rag/indices/{id}/...` does not exist for the tenant. " +
			"Indices are tenant-scoped and created by the first document ingest. `param` is `id`.",
		Remediation: "Check the id with `GET /a1/rag/indices`, or create the index by posting documents to " +
			"`/a1/rag/indices/{id}/documents`.",
	},
	{
		Code: DocumentNotFound, Type: TypeNotFound, HTTPStatus: 404, TypicalParam: ptr("doc_id"),
		Title: "Document not found",
		Description: "The RAG index holds no document with the `doc_id` of " +
			"`/a1/rag/indices/{id}/documents/{doc_id}`. `param` is `doc_id`.",
		Remediation: "List the index's documents with `GET /a1/rag/indices/{id}/documents`.",
	},
	{
		Code: SessionNotFound, Type: TypeNotFound, HTTPStatus: 404, TypicalParam: ptr("session_id"),
		Title: "Session not found",
		Description: "No agent session with this id exists for the tenant and the end user in `GW-User-Id`; " +
			"another user's session answers the same. `param` is `session_id`.",
		Remediation: "List your sessions with `GET /a1/agents/{name}/sessions` under the same `GW-User-Id`, " +
			"or create one with `POST /a1/agents/{name}/sessions`.",
	},
	{
		Code: SessionAgentMismatch, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("session_id"),
		Title: "Session belongs to another agent",
		Description: "The session exists but its `agent_name` differs from the `{name}` of " +
			"`/a1/agents/{name}/sessions/{sid}`. `param` is `session_id`.",
		Remediation: "Address the session under the path of the agent it was created for.",
	},
	{
		Code: SessionCompactConflict, Type: TypeConflict, HTTPStatus: 409, TypicalParam: ptr("session_id"),
		Title: "Session cannot be compacted",
		Description: "Compaction was asked for a session with `compact_keep_last_n` or fewer live messages, " +
			"or for a session already archived by an earlier compaction (archived sessions are read-only). " +
			"`param` is `session_id`.",
		Remediation: "Compact only live sessions with more than `compact_keep_last_n` messages; for an archived " +
			"session follow `successor_session_id` (or `.../lineage`) to its live successor.",
	},
	{
		Code: RuntimeNotRunnable, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("body.runtime"),
		Title: "Runtime cannot run",
		Description: "`POST /a1/runs` named a `runtime` whose `runs` flag is false in `GET /a1/runtimes` " +
			"(for example `chat`). `param` is `body.runtime`.",
		Remediation: "Choose a runtime with `runs: true` from `GET /a1/runtimes`.",
	},
	{
		Code: CodingAgentDisabled, Type: TypePermission, HTTPStatus: 403,
		Title: "Coding agent disabled",
		Description: "A run was requested on the external coding-agent runtime, which is not enabled on this " +
			"gateway. It is off by default; the operator enables it with `GATEWAY_CODING_AGENT_CMD`. " +
			"`param` is null.",
		Remediation: "Ask the operator to enable the coding-agent runtime.",
	},
	{
		Code: CodingAgentRepoNotAllowed, Type: TypePermission, HTTPStatus: 403, TypicalParam: ptr("body.repo"),
		Title: "Repository not allowed",
		Description: "The `repo` of `POST /a1/runs` is not on the tenant's `coding_agent_repos` allowlist " +
			"(repositories compare as canonical lowercase URLs); an empty list disables the runtime for the " +
			"tenant. `param` is `body.repo`.",
		Remediation: "Use an allowed repository, or ask the operator to add it to the tenant's `coding_agent_repos`.",
	},
	{
		Code: CodingAgentRunNotFound, Type: TypeNotFound, HTTPStatus: 404, TypicalParam: ptr("run_id"),
		Title: "Run not found",
		Description: "No run with this id exists for the calling tenant and end user; other users' runs " +
			"answer the same. `param` is `run_id`.",
		Remediation: "List your runs with `GET /a1/runs` under the same `GW-User-Id`.",
	},
	{
		Code: AgentBusy, Type: TypeConflict, HTTPStatus: 409,
		Title: "Agent busy",
		Description: "`POST /a1/runs` for a tenant, `repo` and `work_item` that already have a run `queued` or " +
			"`running`. `param` is null.",
		Remediation: "Wait for the active run to end (`GET /a1/runs/{id}`) or cancel it with " +
			"`POST /a1/runs/{id}/cancel`, then retry.",
	},
	{
		Code: TenantConfigKeyReadonly, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("key"),
		Title: "Tenant config key is read-only",
		Description: "`PUT /v1/tenant/config` named an operator-controlled key (`models`, `c1_cloud_doc_consent`, " +
			"`content_guard`, `coding_agent_repos` or one of the caps). The writable keys are listed in " +
			"`writable_keys` of `GET /v1/tenant/config`. `param` is `key`.",
		Remediation: "Write only keys listed in `writable_keys`; operator-controlled settings are changed by " +
			"the operator in the token catalog.",
	},
	{
		Code: TenantConfigInvalidValue, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("key"),
		Title: "Invalid tenant config value",
		Description: "`PUT /v1/tenant/config` got an unknown key, or a value of the wrong type, out of the key's " +
			"range or outside its enum; `default_model` must be a chat alias in the tenant's allowlist. " +
			"Ranges stop at the hard caps (`image_gen_rate_per_hour` 200, `image_max_ttl_hours` 720, " +
			"`compact_keep_last_n` 200) unless the operator lifted them. `param` is `key`.",
		Remediation: "Check the key's `range` or `enum` in `GET /v1/tenant/config` and send a value within it.",
	},
	{
		Code: ImageNotFound, Type: TypeNotFound, HTTPStatus: 404, TypicalParam: ptr("id"),
		Title: "Image not found",
		Description: "No stored image has this id for the tenant: the id is wrong, belongs to another tenant, " +
			"or the image's time-to-live (`ttl_hours`, default 12) has elapsed. `param` is `id`.",
		Remediation: "List the tenant's images with `GET /v1/images`; generate an expired image again, " +
			"with a longer `ttl_hours` if needed.",
	},
	{
		Code: MemoryBucketFull, Type: TypeConflict, HTTPStatus: 409, TypicalParam: ptr("value"),
		Title: "Memory bucket full",
		Description: "The memory write would push its bucket over the cap of 16384 bytes (the UTF-8 lengths of " +
			"keys plus values) per `(scope_id, visibility, owner)`. Nothing is written. `param` is `value`.",
		Remediation: "Check `GET /v1/memory/usage?visibility=<v>`, delete entries with " +
			"`DELETE /v1/memory?visibility=<v>&key=<k>`, or write a shorter value.",
	},
	{
		Code: MemoryConfirmRequired, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("confirm_token"),
		Title: "Memory confirm token required",
		Description: "A public memory write through the tool path (`memory_remember` in the model's tool loop " +
			"or `POST /v1/tools/execute`) carried a `confirm_token` that is wrong, reused, expired or issued " +
			"for other arguments. The first call without a token is not an error: it answers 200 with " +
			"`confirm_required`, a `confirm_token` and `expires_in` 60, and writes nothing. REST writes " +
			"(`POST /v1/memory`) need no token. `param` is `confirm_token`.",
		Remediation: "Repeat the call with the same arguments plus the `confirm_token` of a fresh confirm " +
			"answer, within 60 seconds; each token works once.",
	},
	{
		Code: SystemPromptTooLarge, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("content"),
		Title: "System prompt too large",
		Description: "The `content` of `PUT /v1/system-prompts/{level}` is over the per-level cap, 8192 UTF-8 " +
			"bytes by default (the `tenant`, `scope` and `user` levels stack to about 24 KiB). " +
			"`param` is `content`.",
		Remediation: "Shorten the prompt below the cap, or move part of it to another level.",
	},
	{
		Code: SystemPromptVersionNotFound, Type: TypeNotFound, HTTPStatus: 404, TypicalParam: ptr("version"),
		Title: "System prompt version not found",
		Description: "No version `n` exists for this level (and scope or user), in " +
			"`PUT /v1/system-prompts/{level}/current/{n}` or `DELETE /v1/system-prompts/{level}/v/{n}`. " +
			"`param` is `version`.",
		Remediation: "List the versions with `GET /v1/system-prompts/{level}/versions`.",
	},
	{
		Code: SystemPromptCurrentLocked, Type: TypeConflict, HTTPStatus: 409, TypicalParam: ptr("version"),
		Title: "Current system prompt version is locked",
		Description: "`DELETE /v1/system-prompts/{level}/v/{n}` asked to hard-delete the current version " +
			"(`is_current`). `param` is `version`.",
		Remediation: "Make another version current (`PUT /v1/system-prompts/{level}/current/{n}`) or " +
			"soft-delete the level (`DELETE /v1/system-prompts/{level}`) first, then delete the version.",
	},
	{
		Code: ConversationNotFound, Type: TypeNotFound, HTTPStatus: 404, TypicalParam: ptr("conversation_id"),
		Title: "Conversation not found",
		Description: "The conversation was never persisted, was deleted, or belongs to another end user " +
			"(`GET /c1/conversations/{id}`, or a `/c1/chat` `conversation_id` owned by another user). " +
			"`param` is `conversation_id`.",
		Remediation: "List your conversations with `GET /c1/conversations` under the same `GW-User-Id`; " +
			"omit `conversation_id` on `/c1/chat` to start a new one.",
	},
	{
		Code: RouteNotFound, Type: TypeNotFound, HTTPStatus: 404,
		Title: "Route not found",
		Description: "No endpoint has the request's path (a path that exists, asked with another method, " +
			"answers `method_not_allowed`). `param` is null.",
		Remediation: "Check the method and path against `/openapi.json`; paths are case-sensitive.",
	},
	{
		Code: CloudConsentRequired, Type: TypeConflict, HTTPStatus: 409,
		Title: "Cloud consent required",
		Description: "An attachment of `kind` `document` would reach a cloud backend without per-document " +
			"consent. Enforced only for tenants with the `c1_cloud_doc_consent` setting on, on " +
			"`/v1/chat/completions` and `/c1/chat`. The body has a top-level `required_consents` array of " +
			"objects with `content_hash` and `doc_name`, one per document lacking consent. `param` is null.",
		Remediation: "Retry with the header `GW-Cloud-Consent: <content_hash>[;persist][, ...]`, one entry per " +
			"document (`;persist` stores a permanent grant for the tenant), or send the documents to a " +
			"local model alias.",
	},
	{
		Code: ContentBlocked, Type: TypeInvalidRequest, HTTPStatus: 422,
		Title: "Content blocked",
		Description: "The tenant's content guard, in block mode, classified the input as unsafe: nothing was " +
			"sent upstream, nothing was stored and no quota was charged. `param` holds the flagged categories, " +
			"sorted and comma-separated without spaces, by OpenAI's moderation names (`harassment`, `hate`, " +
			"`illicit`, `self-harm`, `sexual`, `sexual/minors`, `violence`, ... with their `/threatening`, " +
			"`/intent`, `/graphic` forms) or a stable lowercase name where there is none (`privacy`, " +
			"`elections`). A tenant's `content_guard` is `off`, `audit` (the request goes through and a " +
			"flagged one is logged, without its content) or `block`. The status is 422, not the 400 " +
			"`content_filter` of OpenAI's API: the request is well-formed and was understood; this tenant's " +
			"policy refuses its content.",
		Remediation: "Remove or rephrase the flagged content; ask the operator if the classification looks wrong.",
	},
	{
		Code: ModelQuotaExhausted, Type: TypeRateLimit, HTTPStatus: 429,
		Title: "Model quota exhausted",
		Description: "The tenant's token, cost or rate budget for the model is used up. The body names no " +
			"upstream provider and gives no token counts; `Retry-After` gives the seconds until the budget " +
			"resets when that is known. `param` is null.",
		Remediation: "Wait for `Retry-After` or use another alias; ask the operator to raise the budget.",
	},
	{
		Code: CloudBDailyQuotaExhausted, Type: TypeRateLimit, HTTPStatus: 429, TypicalParam: ptr("model"),
		Title: "cloudB daily quota exhausted",
		Description: "A tenant alias pinned to `cloudB` hit its daily limit. `param` is `model`. The body has " +
			"a top-level `available_fallbacks` array of aliases that can serve the request instead, and the " +
			"`Retry-After` header gives the seconds until the quota resets at the next 00:00 UTC.",
		Remediation: "Retry with one of `available_fallbacks` as `model`, or wait for `Retry-After`.",
	},
	{
		Code: UpstreamError, Type: TypeAPI, HTTPStatus: 502,
		Title: "Upstream error",
		Description: "The model backend answered a 5xx or another non-2xx status that is not passed on as " +
			"`upstream_bad_request`, and no backend of the chain could take over. `message` holds the " +
			"sanitised upstream message; keys and backend addresses are never included. `param` is null.",
		Remediation: "Retry with back-off or use another alias; if it persists, report the response's " +
			"`x-request-id` to the operator.",
	},
	{
		Code: UpstreamTimeout, Type: TypeTimeout, HTTPStatus: 504,
		Title: "Upstream timeout",
		Description: "The total upstream time-out (600 s by default, `GATEWAY_UPSTREAM_TIMEOUT`) elapsed before " +
			"the backend finished. A backend that sends no first byte in time is skipped for the next one of " +
			"the chain instead. `param` is null.",
		Remediation: "Retry with a smaller `max_tokens` or a faster model; slow image generation takes 100 to " +
			"180 s, so give clients a time-out of at least 240 s.",
	},
	{
		Code: UpstreamUnavailable, Type: TypeOverloaded, HTTPStatus: 503,
		Title: "Upstream unavailable",
		Description: "The gateway could not connect to the model router or to any backend of the alias's chain, " +
			"or the content guard of a tenant in block mode could not classify the request in time (its " +
			"classifier did not answer within `GATEWAY_GUARD_TIMEOUT`; nothing was sent upstream). " +
			"`param` is null.",
		Remediation: "Retry later; `GET /readyz` shows which backends answer. Tell the operator if `ready` stays false.",
	},
	{
		Code: InternalError, Type: TypeAPI, HTTPStatus: 500,
		Title: "Internal server error",
		Description: "An unexpected server-side fault. Details are omitted from the response and logged with " +
			"the request id. `param` is null.",
		Remediation: "Retry later; if it persists, report the response's `x-request-id` to the operator.",
	},
	{
		Code: StorageError, Type: TypeAPI, HTTPStatus: 500,
		Title: "Storage error",
		Description: "Reading or writing the gateway's store (conversations, memory, prompts, sessions, runs) " +
			"failed. Multi-key writes are transactional, so a failed request leaves no partial change. " +
			"Details are omitted from the response and logged with the request id. `param` is null.",
		Remediation: "Retry; if it persists, report the response's `x-request-id` to the operator.",
	},
	{
		Code: MethodNotAllowed, Type: TypeInvalidRequest, HTTPStatus: 405,
		Title: "Method not allowed",
		Description: "The path exists but does not take the request's method. The `Allow` header lists the " +
			"methods it takes. `param` is null. (A path no route has answers `route_not_found`.)",
		Remediation: "Use one of the methods in `Allow`; `/openapi.json` lists every route's methods.",
	},
	{
		Code: ModelNotConfigured, Type: TypeInvalidRequest, HTTPStatus: 400, TypicalParam: ptr("model"),
		Title: "Model not configured",
		Description: "The model is in the gateway's catalog, but none of its backends is configured on this " +
			"gateway: the variables that give their addresses (`GATEWAY_LOCAL_URL`, `GATEWAY_CLOUDA_URL`, " +
			"`GATEWAY_CLOUDB_URL`, or `GATEWAY_ROUTER_URL`) are unset. The message names the variable to set. " +
			"The model is marked `unconfigured` in `/v1/models` and `/v1/info`. Retrying does not help, which " +
			"is why this is not the 503 `upstream_unavailable` of a backend that is configured but does not " +
			"answer. `param` is `model`.",
		Remediation: "Use a model whose backend is configured (`GET /v1/models`), or ask the operator to set " +
			"the variable the message names and restart the gateway.",
	},
	{
		Code: ResponseNotFound, Type: TypeNotFound, HTTPStatus: 404, TypicalParam: ptr("response_id"),
		Title: "Response not found",
		Description: "No stored response has this id for the calling tenant and user: it was never stored " +
			"(`store` was false), was deleted, or belongs to another user or tenant " +
			"(`GET`/`DELETE /v1/responses/{id}`, `/v1/responses/{id}/input_items`, or a `previous_response_id`). " +
			"`param` is `response_id` (`previous_response_id` when that field named it).",
		Remediation: "Send the id of a response created with `store` left true, under the same `GW-User-Id`.",
	},
}
