package gateway

import (
	"net/http"

	"github.com/chatgw/gateway/anthropic"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/usage"
)

// userRule says whether a route needs the GW-User-Id header.
type userRule uint8

const (
	userOptional    userRule = iota // the header may be absent
	userRequired                    // absent: 400 missing_field headers.gw-user-id
	userOrAdminRead                 // required, except a tenant_admin's GET (tenant-wide view)
	public          userRule = 0xff // no bearer, no identity
)

// route is one row of the gateway's surface. scope "" on a non-public route means
// any valid token; "{level}" in a scope is replaced by that path parameter.
// errors is the shape of every error the route answers, the middleware's
// (401, 403, 413, 429, ...) as the handler's: nil is the gateway's envelope;
// a route of another provider's API gives that API's errcat.Format, because
// its clients read errors only in their own shape.
type route struct {
	method, path string
	scope        string
	user         userRule
	h            http.HandlerFunc
	errors       errcat.Format
}

// routes is the whole HTTP surface of the gateway, one line per route. A
// handler wrapped in g.metered gets a usage record per request that reached
// the upstream.
func (g *Gateway) routes() []route {
	return []route{
		// Public: no bearer.
		{"GET", "/", "", public, g.index, nil},
		{"GET", "/healthz", "", public, g.healthz, nil},
		{"GET", "/readyz", "", public, g.readyz, nil},
		{"GET", "/errors", "", public, g.errorsJSON.ServeHTTP, nil},
		{"GET", "/docs/*path", "", public, g.docs, nil},
		{"GET", "/openapi.json", "", public, g.apidocs.OpenAPIJSON, nil},
		{"GET", "/openapi", "", public, g.apidocs.OpenAPI, nil},
		{"GET", "/redoc", "", public, g.apidocs.Redoc, nil},
		{"GET", "/playground", "", public, g.apidocs.Playground, nil},

		// Stateless OpenAI-compatible passthrough.
		{"POST", "/v1/chat/completions", "chat:write", userOptional, g.metered(usage.KindChat, g.openai.ChatCompletions), nil},
		{"GET", "/v1/models", "models:read", userOptional, g.openai.Models, nil},
		{"GET", "/v1/models/:id", "models:read", userOptional, g.openai.GetModel, nil},
		{"GET", "/v1/info", "models:read", userOptional, g.openai.Info, nil},
		{"POST", "/v1/embeddings", "embeddings:write", userOptional, g.metered(usage.KindEmbeddings, g.openai.Embeddings), nil},
		{"POST", "/v1/audio/transcriptions", "audio:write", userOptional, g.openai.Transcriptions, nil},
		{"POST", "/v1/audio/translations", "audio:write", userOptional, g.openai.Translations, nil},

		// Anthropic's Messages API, translated onto the pipeline of
		// /v1/chat/completions; its clients read every error in Anthropic's
		// shape, the middleware's too.
		{"POST", "/v1/messages", "chat:write", userOptional, g.metered(usage.KindChat, g.anthropic.CreateMessage), anthropic.ErrorBody},
		{"POST", "/v1/messages/count_tokens", "chat:write", userOptional, g.anthropic.CountTokens, anthropic.ErrorBody},

		// OpenAI's Responses API, translated onto the pipeline of
		// /v1/chat/completions; stored responses are the tenant's, and the
		// user's when GW-User-Id names one.
		{"POST", "/v1/responses", "chat:write", userOptional, g.metered(usage.KindChat, g.responses.Create), nil},
		{"GET", "/v1/responses/:id", "conversations:read", userOptional, g.responses.Get, nil},
		{"DELETE", "/v1/responses/:id", "conversations:write", userOptional, g.responses.Delete, nil},
		{"GET", "/v1/responses/:id/input_items", "conversations:read", userOptional, g.responses.ListInputItems, nil},

		// Generated images: tenant-scoped, with a time-to-live.
		{"POST", "/v1/images/generations", "images:write", userOptional, g.metered(usage.KindImage, g.images.Generate), nil},
		{"GET", "/v1/images", "images:read", userOptional, g.images.List, nil},
		{"GET", "/v1/images/:id", "images:read", userOptional, g.images.Get, nil},
		{"GET", "/v1/images/:id/content", "images:read", userOptional, g.images.Content, nil},
		{"DELETE", "/v1/images/:id", "images:write", userOptional, g.images.Delete, nil},

		// Chat with conversation persistence.
		{"POST", "/c1/chat", "chat:write", userRequired, g.metered(usage.KindChat, g.chat.Chat), nil},
		{"GET", "/c1/conversations", "conversations:read", userOrAdminRead, g.conv.ListConversations, nil},
		{"GET", "/c1/conversations/:id", "conversations:read", userOrAdminRead, g.conv.GetConversation, nil},
		{"DELETE", "/c1/conversations/:id", "conversations:write", userRequired, g.conv.DeleteConversation, nil},

		// Memory: entries in buckets of (scope_id, visibility, owner).
		{"POST", "/v1/memory", "memory:write", userRequired, g.mem.PutEntry, nil},
		{"GET", "/v1/memory", "memory:read", userRequired, g.mem.ListEntries, nil},
		{"DELETE", "/v1/memory", "memory:write", userRequired, g.mem.DeleteEntry, nil},
		{"GET", "/v1/memory/usage", "memory:read", userRequired, g.mem.GetUsage, nil},

		// System prompts: versions per level (tenant, scope, user). A tenant admin
		// reads the tenant and scope levels without GW-User-Id; the user level
		// always needs one (the handler asks for it).
		{"PUT", "/v1/system-prompts/:level", "system_prompts:write:{level}", userRequired, g.mem.PutPrompt, nil},
		{"GET", "/v1/system-prompts/:level", "system_prompts:read", userOrAdminRead, g.mem.GetPrompt, nil},
		{"DELETE", "/v1/system-prompts/:level", "system_prompts:write:{level}", userRequired, g.mem.DeletePrompt, nil},
		{"GET", "/v1/system-prompts/:level/versions", "system_prompts:read", userOrAdminRead, g.mem.ListPromptVersions, nil},
		{"PUT", "/v1/system-prompts/:level/current/:n", "system_prompts:write:{level}", userRequired, g.mem.SetCurrentPrompt, nil},
		{"DELETE", "/v1/system-prompts/:level/v/:n", "system_prompts:write:{level}", userRequired, g.mem.DeletePromptVersion, nil},

		// Usage records of the metered routes above and below (g.metered):
		// totals over a range, grouped as asked.
		{"GET", "/v1/usage", "usage:read", userOrAdminRead, g.usage.List, nil},

		// Tenant configuration and tools (agent_call runs a metered chat).
		{"GET", "/v1/tenant/config", "tenant_config:read", userOptional, g.tenants.Get, nil},
		{"PUT", "/v1/tenant/config", "tenant_config:write", userOptional, g.tenants.Put, nil},
		{"POST", "/v1/tools/execute", "tools:execute", userOptional, g.metered(usage.KindChat, g.tools.Execute), nil},

		// Agents: loaded from files; sessions scoped to tenant and end user.
		{"GET", "/a1/agents", "agents:read", userOptional, g.agents.List, nil},
		{"POST", "/a1/agents/:name/chat", "agents:write", userOptional, g.metered(usage.KindChat, g.agents.Chat), nil},
		{"POST", "/a1/agents/:name/sessions", "agents:write", userRequired, g.agents.CreateSession, nil},
		{"GET", "/a1/agents/:name/sessions", "agents:read", userOrAdminRead, g.agents.ListSessions, nil},
		{"GET", "/a1/agents/:name/sessions/:sid", "agents:read", userOrAdminRead, g.agents.GetSession, nil},
		{"POST", "/a1/agents/:name/sessions/:sid/messages", "agents:write", userRequired, g.metered(usage.KindChat, g.agents.PostMessage), nil},
		{"POST", "/a1/agents/:name/sessions/:sid/compact", "agents:write", userRequired, g.metered(usage.KindChat, g.agents.Compact), nil},
		{"GET", "/a1/agents/:name/sessions/:sid/lineage", "agents:read", userOrAdminRead, g.agents.Lineage, nil},

		// RAG indices: tenant-scoped, created on first ingest.
		{"GET", "/a1/rag/indices", "rag:read", userOptional, g.rag.ListIndices, nil},
		{"POST", "/a1/rag/indices/:id/documents", "rag:write", userOptional, g.rag.ReplaceDocuments, nil},
		{"POST", "/a1/rag/indices/:id/documents/append", "rag:write", userOptional, g.rag.AppendDocuments, nil},
		{"GET", "/a1/rag/indices/:id/documents", "rag:read", userOptional, g.rag.ListDocuments, nil},
		{"GET", "/a1/rag/indices/:id/documents/:doc_id", "rag:read", userOptional, g.rag.GetDocument, nil},
		{"DELETE", "/a1/rag/indices/:id/documents/:doc_id", "rag:write", userOptional, g.rag.DeleteDocument, nil},
		{"GET", "/a1/rag/indices/:id/search", "rag:read", userOptional, g.rag.SearchIndex, nil},

		// Coding-agent runs and runtimes.
		{"GET", "/a1/runtimes", "runs:read", userOptional, g.runs.Runtimes, nil},
		{"POST", "/a1/runs", "runs:write", userRequired, g.runs.Create, nil},
		{"GET", "/a1/runs", "runs:read", userOrAdminRead, g.runs.List, nil},
		{"GET", "/a1/runs/:id", "runs:read", userOrAdminRead, g.runs.Get, nil},
		{"POST", "/a1/runs/:id/cancel", "runs:write", userRequired, g.runs.Cancel, nil},
	}
}
