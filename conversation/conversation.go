// Package conversation owns the /c1 conversation storage and serves
// GET /c1/conversations, GET /c1/conversations/:id and
// DELETE /c1/conversations/:id.
//
// # Storage layout
//
// All buckets are prefixed conv/. A key component written str(x) is x encoded
// with store.AppendString, so a prefix of whole components never matches another
// tenant's, user's or conversation's keys, whatever bytes the ids hold.
//
//	conv/meta       str(tenant) str(id)                 -> meta (JSON): user_id, message_count, next_seq, created, last_updated
//	conv/msg        str(tenant) str(id) seq (8 bytes BE) -> one message, an OpenAI chat message object (JSON)
//	conv/by-user    str(tenant) str(user) inv id         -> summary (message_count, last_updated, user_id)
//	conv/by-tenant  str(tenant) inv id                   -> summary
//	conv/layout     "version"                            -> LayoutVersion (8 bytes BE), written by Migrate
//
// inv is MaxUint64 minus last_updated in Unix nanoseconds (8 bytes big-endian),
// so an ascending scan of an index lists newest first. Appending a turn reads and
// writes only the conversation's own meta record, its new message keys and its
// two index entries (the old ones are deleted, the new ones written), all in one
// group-committed transaction; loading a history is one prefix scan of conv/msg;
// a list page is one prefix scan of an index that reads only the skipped and
// returned entries; delete removes messages, meta and index entries in one
// transaction.
//
// # System prompt
//
// The system_prompt of a conversation's first persisted turn is stored as its
// first message (role system, sequence 0). It is therefore part of the history
// that GET /c1/conversations/:id returns (StoredMessage allows role system), it
// counts in message_count, and DELETE counts it among the deleted messages.
//
// # Identity
//
// A conversation belongs to the end user (GW-User-Id) of its first persisted
// turn. Another user's conversation answers like an unknown one: 404
// conversation_not_found on GET, {"deleted":0} on DELETE. A request without
// GW-User-Id (the root lets only a tenant_admin omit it) gets the tenant-wide
// view.
//
// Conversation ids are chosen by clients (a ticket number, say), so they are
// scoped to the tenant: every key starts with the tenant, and two tenants
// that use the same id hold two conversations that never meet. Another
// tenant's use of an id is invisible: it neither claims the id nor changes a
// conversation, list entry, count or last_updated of this tenant. (Layout 1
// claimed an id for the first tenant that stored it, which let tenants probe
// and squat each other's ids; Migrate removes those claims.)
package conversation

import (
	"context"
	"net/http"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/store"
)

// Page-size limits of GET /c1/conversations.
const (
	DefaultLimit = httpx.DefaultPageLimit
	MaxLimit     = httpx.MaxPageLimit
)

// Config configures the conversation family.
type Config struct {
	// Store holds the conversations; required.
	Store store.Store
	// Clock stamps last_updated. Nil means the wall clock.
	Clock clock.Clock
}

// Service serves the conversation endpoints. Its embedded *Repository is the
// storage API; *Service therefore also satisfies chat.History (Load, Append) and
// is passed to chat.Config.History as it is.
type Service struct {
	*Repository
}

// New returns the conversation service over cfg.Store.
func New(cfg Config) *Service {
	return &Service{Repository: NewRepository(cfg.Store, cfg.Clock)}
}

// summaryJSON is a ConversationSummary on the wire.
type summaryJSON struct {
	ConversationID string `json:"conversation_id"`
	MessageCount   int64  `json:"message_count"`
	LastUpdated    string `json:"last_updated"`
	UserID         string `json:"user_id"`
}

// ListConversations serves GET /c1/conversations?limit=&offset=: the caller's
// conversations (the tenant's without GW-User-Id), newest last_updated first, as
// {"object":"list","data":[ConversationSummary...],"limit","offset","has_more"}.
// limit defaults to 50 and must be 1..500, offset >= 0; otherwise 400
// invalid_field query.limit / query.offset.
func (s *Service) ListConversations(w http.ResponseWriter, r *http.Request) {
	pg, err := httpx.ParsePage(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	c, err := readCaller(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	page, more, err := s.List(r.Context(), c.Tenant.ID, c.User, pg.Limit, pg.Offset)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	data := make([]summaryJSON, len(page))
	for i, c := range page {
		data[i] = summaryJSON{
			ConversationID: c.ID,
			MessageCount:   c.MessageCount,
			LastUpdated:    c.LastUpdated.UTC().Format(time.RFC3339),
			UserID:         c.UserID,
		}
	}
	httpx.WriteList(w, pg, data, more)
}

// GetConversation serves GET /c1/conversations/:id:
// {"conversation_id","user_id","messages":[StoredMessage...]}, the messages as
// stored (content a string or a parts array; assistant tool_calls in the OpenAI
// shape). Unknown, or another user's: 404 conversation_not_found.
func (s *Service) GetConversation(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, readCaller, func(ctx context.Context, who httpx.Caller) (conversationJSON, error) {
		c, err := s.Get(ctx, who.Tenant.ID, who.User, httpx.Param(r, "id"))
		if err != nil {
			return conversationJSON{}, err
		}
		return conversationJSON{c.ID, c.UserID, c.Messages}, nil
	})
}

// conversationJSON is the answer of GET /c1/conversations/:id.
type conversationJSON struct {
	ConversationID string `json:"conversation_id"`
	UserID         string `json:"user_id"`
	Messages       any    `json:"messages"`
}

// readCaller resolves who reads: GW-User-Id's user, or a tenant admin's
// whole tenant without it.
func readCaller(r *http.Request) (httpx.Caller, error) {
	return httpx.CallerOf(r, httpx.UserOrAdminRead, true)
}

// writeCaller resolves who writes: GW-User-Id is required.
func writeCaller(r *http.Request) (httpx.Caller, error) {
	return httpx.CallerOf(r, httpx.UserRequired, false)
}

// DeleteConversation serves DELETE /c1/conversations/:id: {"deleted":N}, N the number
// of stored messages removed; 0 for an unknown id or another user's.
func (s *Service) DeleteConversation(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, writeCaller, func(ctx context.Context, c httpx.Caller) (map[string]int64, error) {
		n, err := s.Delete(ctx, c.Tenant.ID, c.User, httpx.Param(r, "id"))
		if err != nil {
			return nil, err
		}
		return map[string]int64{"deleted": n}, nil
	})
}
