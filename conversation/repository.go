package conversation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/store"
)

// MaxIDLength is the longest conversation id, in bytes, that Append stores.
const MaxIDLength = 256

// Summary is one conversation of a list page (a ConversationSummary on the wire).
type Summary struct {
	ID           string
	UserID       string
	MessageCount int64
	LastUpdated  time.Time
}

// Conversation is one conversation with its stored messages, oldest first.
type Conversation struct {
	ID       string
	UserID   string
	Messages []json.RawMessage
}

// meta is the per-conversation record: who owns it, how many messages it holds,
// the sequence number of the next message and when it last changed (which also
// locates its two index entries).
type meta struct {
	UserID       string `json:"user_id"`
	MessageCount int64  `json:"message_count"`
	NextSeq      uint64 `json:"next_seq"`
	Created      int64  `json:"created"`      // Unix ns
	LastUpdated  int64  `json:"last_updated"` // Unix ns
}

// Repository is the conversation storage in a store.Store. It is safe for
// concurrent use. Its Load and Append methods have the shape of the chat
// family's History interface, so a *Repository (or the *Service that holds it)
// is passed to chat.Config.History as it is.
//
// Every method that serves a request (all but Migrate) returns *errcat.Error
// values: conversation_not_found (param conversation_id) where it says so,
// storage_error wrapping a store failure.
type Repository struct {
	st    store.Store
	clock clock.Clock
}

// NewRepository returns the repository over st; c stamps last_updated (nil: the
// wall clock).
func NewRepository(st store.Store, c clock.Clock) *Repository {
	if c == nil {
		c = clock.Wall{}
	}
	return &Repository{st: st, clock: c}
}

func notFound() *errcat.Error {
	return errcat.New(errcat.ConversationNotFound, "conversation_id", "No conversation with this id exists for this user.")
}

// storageErr passes an *errcat.Error returned by a transaction's fn through and
// wraps anything else (a store failure) as storage_error.
func storageErr(op string, err error) error {
	var e *errcat.Error
	if errors.As(err, &e) {
		return e
	}
	return errcat.Storage(fmt.Errorf("conversation.%s: %w", op, err))
}

func getMeta(tx store.Tx, key []byte) (*meta, error) {
	return decodeMeta(tx.Get(bucketMeta, key))
}

// decodeMeta decodes a meta record; v nil (absent) is a nil *meta.
func decodeMeta(v []byte) (*meta, error) {
	if v == nil {
		return nil, nil
	}
	m := new(meta)
	if err := json.Unmarshal(v, m); err != nil {
		return nil, fmt.Errorf("decode meta: %w", err)
	}
	return m, nil
}

// The seen of LoadTx, for Append, is the conversation's meta record as read
// (a copy), or an empty slice when it was absent; nil says nothing. It is
// handed on only on a store that can check it instead of reading the record
// again (store.Assumer): elsewhere it would cost a copy for nothing.

// seenOf is the seen of meta record v in tx.
func seenOf(tx store.Tx, v []byte) []byte {
	if _, ok := tx.(store.Assumer); !ok {
		return nil
	}
	if v == nil {
		return []byte{}
	}
	return bytes.Clone(v)
}

// assumeSeen has tx assume the meta record at key is what seen says, when
// seen says something and tx can check it.
func assumeSeen(tx store.Tx, key, seen []byte) {
	a, ok := tx.(store.Assumer)
	switch {
	case !ok || seen == nil:
	case len(seen) == 0:
		a.Assume(bucketMeta, key, nil)
	default:
		a.Assume(bucketMeta, key, seen)
	}
}

// Load returns the stored messages of conversation id, oldest first: the
// conversation's system prompt (role system) first when one was stored, then
// the user and assistant messages. Each is an OpenAI chat message object
// ({"role","content"} plus "tool_calls" for an assistant reply that called
// tools). A conversation the tenant never stored (or deleted) returns (nil,
// nil), whatever other tenants stored under the same id; one that belongs to
// another user of the tenant returns conversation_not_found.
func (r *Repository) Load(ctx context.Context, tenant, user, id string) ([]json.RawMessage, error) {
	var msgs []json.RawMessage
	err := r.st.View(ctx, func(tx store.Tx) error {
		var err error
		msgs, _, err = r.LoadTx(tx, tenant, user, id)
		return err
	})
	if err != nil {
		return nil, storageErr("Load", err)
	}
	return msgs, nil
}

// LoadTx is Load in the caller's read transaction of the repository's store
// (a /c1 turn reads the tenant's config, the history and the injected
// prompts in one), with the same answers and errors. seen is for Append,
// opaque to the caller.
func (r *Repository) LoadTx(tx store.Tx, tenant, user, id string) (msgs []json.RawMessage, seen []byte, err error) {
	p := convPrefix(tenant, id)
	v := tx.Get(bucketMeta, p)
	m, err := decodeMeta(v)
	switch {
	case err != nil:
		return nil, nil, storageErr("Load", err)
	case m == nil:
		return nil, seenOf(tx, v), nil
	case m.UserID != user:
		return nil, nil, notFound()
	}
	if msgs, err = scanMessages(tx, p, int(m.MessageCount)); err != nil {
		return nil, nil, storageErr("Load", err)
	}
	return msgs, seenOf(tx, v), nil
}

// AppendReads appends to dst the reads of LoadTx for conversation id of
// tenant (its meta record and its messages), for a caller that prefetches
// its read transaction (store.Prefetcher).
func (r *Repository) AppendReads(dst []store.Read, tenant, id string) []store.Read {
	p := convPrefix(tenant, id)
	return append(dst, store.Read{Bucket: bucketMeta, Key: p}, store.Read{Bucket: bucketMsg, Key: p, Prefix: true})
}

// scanMessages copies the messages of the conversation whose prefix is p (n
// of them expected) out of the transaction: into one buffer, which the
// returned messages share (their capacity ends where they do, so appending to
// one never writes into the next).
func scanMessages(tx store.Tx, p []byte, n int) ([]json.RawMessage, error) {
	ends := make([]int, 0, n)
	var buf []byte
	err := tx.Scan(bucketMsg, p, false, func(k, v []byte) (bool, error) {
		if len(k) != len(p)+8 {
			return false, errors.New("malformed message key")
		}
		buf = append(buf, v...)
		ends = append(ends, len(buf))
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	msgs := make([]json.RawMessage, len(ends))
	start := 0
	for i, end := range ends {
		msgs[i] = buf[start:end:end]
		start = end
	}
	return msgs, nil
}

// Append stores msgs (OpenAI chat message objects with role user or assistant)
// at the end of conversation id of user, in one transaction that also updates
// the conversation's meta record and its list-index entries; concurrent Appends
// are group-committed (store.Batch). It returns after the commit is durable.
//
// When the conversation does not exist yet it is created for user, and a
// non-empty systemPrompt is stored as its first message (role system);
// systemPrompt is ignored when the conversation exists. A conversation of
// another user of the tenant returns conversation_not_found and writes
// nothing; another tenant's conversation of the same id is another
// conversation, which Append neither reads nor changes.
//
// seen is what LoadTx saw of the conversation in the turn's read, or nil: on
// a store.Assumer the meta record is then assumed to be unchanged, and the
// store checks that with the writes instead of reading it first (one round
// trip to a database server instead of two); the outcome is the same.
func (r *Repository) Append(ctx context.Context, tenant, user, id string, msgs []json.RawMessage, systemPrompt string, seen []byte) error {
	if id == "" || len(id) > MaxIDLength {
		return errcat.Internal(fmt.Errorf("conversation.Append: invalid id length %d", len(id)))
	}
	for i, m := range msgs {
		if !json.Valid(m) || len(m) == 0 || m[0] != '{' {
			return errcat.Internal(fmt.Errorf("conversation.Append: message %d is not a JSON object", i))
		}
	}
	var sys []byte
	if systemPrompt != "" {
		sys = wire.TextMessage("system", systemPrompt)
	}
	now := r.clock.Now().UnixNano()
	p := convPrefix(tenant, id)
	up, tp := userPrefix(tenant, user), tenantPrefix(tenant)
	err := r.st.Batch(ctx, func(tx store.Tx) error {
		assumeSeen(tx, p, seen)
		m, err := getMeta(tx, p)
		if err != nil {
			return err
		}
		switch {
		case m == nil:
			m = &meta{UserID: user, Created: now}
			if sys != nil {
				if err := tx.Put(bucketMsg, msgKey(p, 0), sys); err != nil {
					return err
				}
				m.NextSeq, m.MessageCount = 1, 1
			}
		case m.UserID != user:
			return notFound()
		default:
			if err := tx.Delete(bucketByUser, indexKey(up, m.LastUpdated, id)); err != nil {
				return err
			}
			if err := tx.Delete(bucketByTenant, indexKey(tp, m.LastUpdated, id)); err != nil {
				return err
			}
		}
		for _, msg := range msgs {
			if err := tx.Put(bucketMsg, msgKey(p, m.NextSeq), msg); err != nil {
				return err
			}
			m.NextSeq++
			m.MessageCount++
		}
		m.LastUpdated = now
		sv := summaryValue(m.MessageCount, now, user)
		if err := tx.Put(bucketByUser, indexKey(up, now, id), sv); err != nil {
			return err
		}
		if err := tx.Put(bucketByTenant, indexKey(tp, now, id), sv); err != nil {
			return err
		}
		mv, err := json.Marshal(m)
		if err != nil {
			return err
		}
		return tx.Put(bucketMeta, p, mv)
	})
	if err != nil {
		return storageErr("Append", err)
	}
	return nil
}

// Get returns conversation id with all its messages. user "" is the tenant-wide
// view of a tenant admin and sees any conversation of the tenant; otherwise a
// conversation of another user, like an unknown one, returns
// conversation_not_found.
func (r *Repository) Get(ctx context.Context, tenant, user, id string) (Conversation, error) {
	var c Conversation
	p := convPrefix(tenant, id)
	err := r.st.View(ctx, func(tx store.Tx) error {
		m, err := getMeta(tx, p)
		if err != nil {
			return err
		}
		if m == nil || (user != "" && m.UserID != user) {
			return notFound()
		}
		msgs, err := scanMessages(tx, p, int(m.MessageCount))
		c = Conversation{ID: id, UserID: m.UserID, Messages: msgs}
		return err
	})
	if err != nil {
		return Conversation{}, storageErr("Get", err)
	}
	return c, nil
}

// List returns up to limit conversations of user, newest last_updated first,
// skipping the first offset, and whether more follow. user "" lists the whole
// tenant (a tenant admin's view). It reads only the index entries of the page
// and those skipped, never the other conversations of the tenant.
func (r *Repository) List(ctx context.Context, tenant, user string, limit, offset int) ([]Summary, bool, error) {
	prefix, bucket := userPrefix(tenant, user), bucketByUser
	if user == "" {
		prefix, bucket = tenantPrefix(tenant), bucketByTenant
	}
	var (
		page []Summary
		win  httpx.Window
	)
	err := r.st.View(ctx, func(tx store.Tx) error {
		page, win = make([]Summary, 0, min(limit, 64)), httpx.Window{Page: httpx.Page{Limit: limit, Offset: offset}}
		return tx.Scan(bucket, prefix, false, func(k, v []byte) (bool, error) {
			if win.Skip() {
				return true, nil
			}
			if win.Full(len(page)) {
				return false, nil
			}
			s, err := parseIndex(k, v, len(prefix))
			if err != nil {
				return false, err
			}
			page = append(page, s)
			return true, nil
		})
	})
	if err != nil {
		return nil, false, storageErr("List", err)
	}
	return page, win.More, nil
}

// Delete removes conversation id of user (its messages, meta record and index
// entries) in one transaction and returns the number of messages removed. An
// unknown conversation or another user's removes nothing and returns 0 (no
// existence leak). user "" is a tenant admin's view and deletes any
// conversation of the tenant.
func (r *Repository) Delete(ctx context.Context, tenant, user, id string) (int64, error) {
	var n int64
	p := convPrefix(tenant, id)
	err := r.st.Update(ctx, func(tx store.Tx) error {
		n = 0
		m, err := getMeta(tx, p)
		if err != nil || m == nil || (user != "" && m.UserID != user) {
			return err
		}
		var keys [][]byte
		if err := tx.Scan(bucketMsg, p, false, func(k, _ []byte) (bool, error) {
			keys = append(keys, bytes.Clone(k))
			return true, nil
		}); err != nil {
			return err
		}
		for _, k := range keys {
			if err := tx.Delete(bucketMsg, k); err != nil {
				return err
			}
		}
		if err := tx.Delete(bucketByUser, indexKey(userPrefix(tenant, m.UserID), m.LastUpdated, id)); err != nil {
			return err
		}
		if err := tx.Delete(bucketByTenant, indexKey(tenantPrefix(tenant), m.LastUpdated, id)); err != nil {
			return err
		}
		n = int64(len(keys))
		return tx.Delete(bucketMeta, p)
	})
	if err != nil {
		return 0, storageErr("Delete", err)
	}
	return n, nil
}
