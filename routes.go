package gateway

import (
	"net/http"

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
type route struct {
	method, path string
	scope        string
	user         userRule
	h            http.HandlerFunc
}

// routes is the whole HTTP surface of the gateway, one line per route. A
// handler wrapped in g.metered gets a usage record per request that reached
// the upstream.
func (g *Gateway) routes() []route {
	return []route{
		// Public: no bearer.
		{"GET", "/", "", public, g.index},
		{"GET", "/healthz", "", public, g.healthz},
		{"GET", "/readyz", "", public, g.readyz},
		{"GET", "/errors", "", public, g.errorsJSON.ServeHTTP},
		{"GET", "/docs/*path", "", public, g.docs},
		{"GET", "/openapi.json", "", public, g.apidocs.OpenAPIJSON},
		{"GET", "/openapi", "", public, g.apidocs.OpenAPI},
		{"GET", "/redoc", "", public, g.apidocs.Redoc},
		{"GET", "/playground", "", public, g.apidocs.Playground},

		// Stateless OpenAI-compatible passthrough.
		{"POST", "/v1/chat/completions", "chat:write", userOptional, g.metered(usage.KindChat, g.openai.ChatCompletions)},
		{"GET", "/v1/models", "models:read", userOptional, g.openai.Models},
		{"GET", "/v1/info", "models:read", userOptional, g.openai.Info},
		{"POST", "/v1/embeddings", "embeddings:write", userOptional, g.metered(usage.KindEmbeddings, g.openai.Embeddings)},
		{"POST", "/v1/audio/transcriptions", "audio:write", userOptional, g.openai.Transcriptions},
		{"POST", "/v1/audio/translations", "audio:write", userOptional, g.openai.Translations},

		// Generated images: tenant-scoped, with a time-to-live.
		{"POST", "/v1/images/generations", "images:write", userOptional, g.metered(usage.KindImage, g.images.Generate)},
		{"GET", "/v1/images", "images:read", userOptional, g.images.List},
		{"GET", "/v1/images/:id", "images:read", userOptional, g.images.Get},
		{"GET", "/v1/images/:id/content", "images:read", userOptional, g.images.Content},
		{"DELETE", "/v1/images/:id", "images:write", userOptional, g.images.Delete},

		// Chat with conversation persistence.
		{"POST", "/c1/chat", "chat:write", userRequired, g.metered(usage.KindChat, g.chat.Chat)},
		{"GET", "/c1/conversations", "conversations:read", userOrAdminRead, g.conv.ListConversations},
		{"GET", "/c1/conversations/:id", "conversations:read", userOrAdminRead, g.conv.GetConversation},
		{"DELETE", "/c1/conversations/:id", "conversations:write", userRequired, g.conv.DeleteConversation},

		// Memory: entries in buckets of (scope_id, visibility, owner).
		{"POST", "/v1/memory", "memory:write", userRequired, g.mem.PutEntry},
		{"GET", "/v1/memory", "memory:read", userRequired, g.mem.ListEntries},
		{"DELETE", "/v1/memory", "memory:write", userRequired, g.mem.DeleteEntry},
		{"GET", "/v1/memory/usage", "memory:read", userRequired, g.mem.GetUsage},

		// System prompts: versions per level (tenant, scope, user). A tenant admin
		// reads the tenant and scope levels without GW-User-Id; the user level
		// always needs one (the handler asks for it).
		{"PUT", "/v1/system-prompts/:level", "system_prompts:write:{level}", userRequired, g.mem.PutPrompt},
		{"GET", "/v1/system-prompts/:level", "system_prompts:read", userOrAdminRead, g.mem.GetPrompt},
		{"DELETE", "/v1/system-prompts/:level", "system_prompts:write:{level}", userRequired, g.mem.DeletePrompt},
		{"GET", "/v1/system-prompts/:level/versions", "system_prompts:read", userOrAdminRead, g.mem.ListPromptVersions},
		{"PUT", "/v1/system-prompts/:level/current/:n", "system_prompts:write:{level}", userRequired, g.mem.SetCurrentPrompt},
		{"DELETE", "/v1/system-prompts/:level/v/:n", "system_prompts:write:{level}", userRequired, g.mem.DeletePromptVersion},

		// Usage records of the metered routes above and below (g.metered):
		// totals over a range, grouped as asked.
		{"GET", "/v1/usage", "usage:read", userOrAdminRead, g.usage.List},

		// Tenant configuration and tools (agent_call runs a metered chat).
		{"GET", "/v1/tenant/config", "tenant_config:read", userOptional, g.tenants.Get},
		{"PUT", "/v1/tenant/config", "tenant_config:write", userOptional, g.tenants.Put},
		{"POST", "/v1/tools/execute", "tools:execute", userOptional, g.metered(usage.KindChat, g.tools.Execute)},

		// Agents: loaded from files; sessions scoped to tenant and end user.
		{"GET", "/a1/agents", "agents:read", userOptional, g.agents.List},
		{"POST", "/a1/agents/:name/chat", "agents:write", userOptional, g.metered(usage.KindChat, g.agents.Chat)},
		{"POST", "/a1/agents/:name/sessions", "agents:write", userRequired, g.agents.CreateSession},
		{"GET", "/a1/agents/:name/sessions", "agents:read", userOrAdminRead, g.agents.ListSessions},
		{"GET", "/a1/agents/:name/sessions/:sid", "agents:read", userOrAdminRead, g.agents.GetSession},
		{"POST", "/a1/agents/:name/sessions/:sid/messages", "agents:write", userRequired, g.metered(usage.KindChat, g.agents.PostMessage)},
		{"POST", "/a1/agents/:name/sessions/:sid/compact", "agents:write", userRequired, g.metered(usage.KindChat, g.agents.Compact)},
		{"GET", "/a1/agents/:name/sessions/:sid/lineage", "agents:read", userOrAdminRead, g.agents.Lineage},

		// RAG indices: tenant-scoped, created on first ingest.
		{"GET", "/a1/rag/indices", "rag:read", userOptional, g.rag.ListIndices},
		{"POST", "/a1/rag/indices/:id/documents", "rag:write", userOptional, g.rag.ReplaceDocuments},
		{"POST", "/a1/rag/indices/:id/documents/append", "rag:write", userOptional, g.rag.AppendDocuments},
		{"GET", "/a1/rag/indices/:id/documents", "rag:read", userOptional, g.rag.ListDocuments},
		{"GET", "/a1/rag/indices/:id/documents/:doc_id", "rag:read", userOptional, g.rag.GetDocument},
		{"DELETE", "/a1/rag/indices/:id/documents/:doc_id", "rag:write", userOptional, g.rag.DeleteDocument},
		{"GET", "/a1/rag/indices/:id/search", "rag:read", userOptional, g.rag.SearchIndex},

		// Coding-agent runs and runtimes.
		{"GET", "/a1/runtimes", "runs:read", userOptional, g.runs.Runtimes},
		{"POST", "/a1/runs", "runs:write", userRequired, g.runs.Create},
		{"GET", "/a1/runs", "runs:read", userOrAdminRead, g.runs.List},
		{"GET", "/a1/runs/:id", "runs:read", userOrAdminRead, g.runs.Get},
		{"POST", "/a1/runs/:id/cancel", "runs:write", userRequired, g.runs.Cancel},
	}
}
