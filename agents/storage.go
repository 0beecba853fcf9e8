package agents

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/store"
)

// Buckets of the session layout; the package owns every bucket named agents/*.
// A key component written str(x) is x encoded with store.AppendString.
var (
	// bucketSessions: str(tenant) str(id) -> sessionRecord (JSON).
	bucketSessions = []byte("agents/sessions")
	// bucketMessages: str(tenant) str(id) u64(seq) -> one message (JSON).
	bucketMessages = []byte("agents/messages")
	// bucketByUser: str(tenant) str(user) str(agent) inv(created) str(id) -> "".
	bucketByUser = []byte("agents/by-user")
	// bucketByTenant: str(tenant) str(agent) inv(created) str(id) -> "".
	bucketByTenant = []byte("agents/by-tenant")
)

// Session states.
const (
	StatusLive     = "live"
	StatusArchived = "archived"
)

// sessionRecord is a stored session.
type sessionRecord struct {
	ID               string `json:"id"`
	AgentName        string `json:"agent_name"`
	UserID           string `json:"user_id"`
	Status           string `json:"status"`
	CompactKeepLastN int    `json:"compact_keep_last_n"`
	SuccessorID      string `json:"successor_session_id,omitempty"`
	PredecessorID    string `json:"predecessor_session_id,omitempty"`
	Summary          string `json:"summary,omitempty"`
	CreatedAt        int64  `json:"created_at"` // Unix ns
	UpdatedAt        int64  `json:"updated_at"` // Unix ns
	NextSeq          uint64 `json:"next_seq"`
	MessageCount     int    `json:"message_count"`
}

func sessionKey(tenant, id string) []byte {
	return store.AppendString(store.AppendString(nil, tenant), id)
}

func messageKey(tenant, id string, seq uint64) []byte {
	return store.AppendUint64(sessionKey(tenant, id), seq)
}

func userIndexPrefix(tenant, user, agent string) []byte {
	return store.AppendString(store.AppendString(store.AppendString(nil, tenant), user), agent)
}

func tenantIndexPrefix(tenant, agent string) []byte {
	return store.AppendString(store.AppendString(nil, tenant), agent)
}

func indexKey(prefix []byte, created int64, id string) []byte {
	k := store.AppendNewestFirst(bytes.Clone(prefix), created)
	return store.AppendString(k, id)
}

// newSessionID returns "sess_" and 32 random hex digits.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "sess_" + hex.EncodeToString(b[:])
}

var errSessionMissing = errors.New("agents: session missing")

// readSession reads session id of tenant; errSessionMissing when absent.
func readSession(tx store.Tx, tenant, id string) (*sessionRecord, error) {
	raw := tx.Get(bucketSessions, sessionKey(tenant, id))
	if raw == nil {
		return nil, errSessionMissing
	}
	rec := new(sessionRecord)
	if err := json.Unmarshal(raw, rec); err != nil {
		return nil, fmt.Errorf("agents: session %q: %w", id, err)
	}
	return rec, nil
}

// putSession writes rec, and its index entries when index is set.
func putSession(tx store.Tx, tenant string, rec *sessionRecord, index bool) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := tx.Put(bucketSessions, sessionKey(tenant, rec.ID), b); err != nil {
		return err
	}
	if !index {
		return nil
	}
	if err := tx.Put(bucketByUser, indexKey(userIndexPrefix(tenant, rec.UserID, rec.AgentName), rec.CreatedAt, rec.ID), []byte{}); err != nil {
		return err
	}
	return tx.Put(bucketByTenant, indexKey(tenantIndexPrefix(tenant, rec.AgentName), rec.CreatedAt, rec.ID), []byte{})
}

// readMessages returns the messages of session id, oldest first.
func readMessages(tx store.Tx, tenant, id string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	err := tx.Scan(bucketMessages, sessionKey(tenant, id), false, func(_, v []byte) (bool, error) {
		out = append(out, bytes.Clone(v))
		return true, nil
	})
	return out, err
}

// appendMessages stores msgs after the session's last message and updates rec.
func appendMessages(tx store.Tx, tenant string, rec *sessionRecord, msgs []json.RawMessage) error {
	for _, m := range msgs {
		if err := tx.Put(bucketMessages, messageKey(tenant, rec.ID, rec.NextSeq), m); err != nil {
			return err
		}
		rec.NextSeq++
		rec.MessageCount++
	}
	return nil
}

// sessionStore is the session storage of one Service.
type sessionStore struct {
	st store.Store
}

// create stores a new session.
func (ss sessionStore) create(ctx context.Context, tenant string, rec *sessionRecord) error {
	err := ss.st.Update(ctx, func(tx store.Tx) error { return putSession(tx, tenant, rec, true) })
	if err != nil {
		return errcat.Storage(fmt.Errorf("agents: create session: %w", err))
	}
	return nil
}

// get returns session id of tenant and, when withMessages, its messages.
// Absent: (nil, nil, nil).
func (ss sessionStore) get(ctx context.Context, tenant, id string, withMessages bool) (*sessionRecord, []json.RawMessage, error) {
	var (
		rec  *sessionRecord
		msgs []json.RawMessage
	)
	err := ss.st.View(ctx, func(tx store.Tx) error {
		var err error
		rec, err = readSession(tx, tenant, id)
		if err != nil || !withMessages {
			return err
		}
		msgs, err = readMessages(tx, tenant, id)
		return err
	})
	switch {
	case errors.Is(err, errSessionMissing):
		return nil, nil, nil
	case err != nil:
		return nil, nil, errcat.Storage(fmt.Errorf("agents: read session: %w", err))
	}
	return rec, msgs, nil
}

// list returns a page of the sessions of agent for user (every user of the
// tenant when user is ""), newest first, and whether more follow.
func (ss sessionStore) list(ctx context.Context, tenant, user, agent string, pg httpx.Page) ([]*sessionRecord, bool, error) {
	bucket, prefix := bucketByUser, userIndexPrefix(tenant, user, agent)
	if user == "" {
		bucket, prefix = bucketByTenant, tenantIndexPrefix(tenant, agent)
	}
	var (
		out []*sessionRecord
		win httpx.Window
	)
	err := ss.st.View(ctx, func(tx store.Tx) error {
		out, win = out[:0], httpx.Window{Page: pg}
		return tx.Scan(bucket, prefix, false, func(k, _ []byte) (bool, error) {
			if win.Skip() {
				return true, nil
			}
			if win.Full(len(out)) {
				return false, nil
			}
			rest := k[len(prefix):]
			if len(rest) < 8 {
				return false, fmt.Errorf("agents: malformed index key")
			}
			id, _, err := store.ReadString(rest[8:])
			if err != nil {
				return false, err
			}
			rec, err := readSession(tx, tenant, id)
			if err != nil {
				return false, err
			}
			out = append(out, rec)
			return true, nil
		})
	})
	if err != nil {
		return nil, false, errcat.Storage(fmt.Errorf("agents: list sessions: %w", err))
	}
	return out, win.More, nil
}

// appendTurn stores msgs at the end of live session id in one transaction.
// The session gone is session_not_found; archived meanwhile,
// session_compact_conflict.
func (ss sessionStore) appendTurn(ctx context.Context, tenant, id string, msgs []json.RawMessage, now int64) error {
	err := ss.st.Update(ctx, func(tx store.Tx) error {
		rec, err := readLive(tx, tenant, id)
		if err != nil {
			return err
		}
		if err := appendMessages(tx, tenant, rec, msgs); err != nil {
			return err
		}
		rec.UpdatedAt = now
		return putSession(tx, tenant, rec, false)
	})
	if err != nil {
		return errcat.FromStore(err)
	}
	return nil
}

// compact archives session id and creates its live successor succ holding
// the last keep messages, in one transaction. The session must still be live
// and unchanged since it was read (nextSeq); otherwise
// session_compact_conflict.
func (ss sessionStore) compact(ctx context.Context, tenant, id string, nextSeq uint64, keep int, succ *sessionRecord) ([]json.RawMessage, error) {
	var kept []json.RawMessage
	orig := *succ
	err := ss.st.Update(ctx, func(tx store.Tx) error {
		// appendMessages advances succ: a retried transaction (the store may
		// run the callback again) starts from the successor as it was.
		*succ = orig
		rec, err := readLive(tx, tenant, id)
		if err != nil {
			return err
		}
		if rec.NextSeq != nextSeq {
			return errcat.Newf(errcat.SessionCompactConflict, "session_id",
				"Session %s changed while it was being compacted; try again.", id)
		}
		msgs, err := readMessages(tx, tenant, id)
		if err != nil {
			return err
		}
		kept = msgs[max(0, len(msgs)-keep):]
		if err := appendMessages(tx, tenant, succ, kept); err != nil {
			return err
		}
		if err := putSession(tx, tenant, succ, true); err != nil {
			return err
		}
		rec.Status, rec.SuccessorID, rec.UpdatedAt = StatusArchived, succ.ID, succ.CreatedAt
		return putSession(tx, tenant, rec, false)
	})
	if err != nil {
		return nil, errcat.FromStore(err)
	}
	return kept, nil
}

// lineage returns the chain of session id, oldest first.
func (ss sessionStore) lineage(ctx context.Context, tenant, id string) ([]*sessionRecord, error) {
	var chain []*sessionRecord
	err := ss.st.View(ctx, func(tx store.Tx) error {
		chain = chain[:0]
		rec, err := readSession(tx, tenant, id)
		if err != nil {
			return err
		}
		seen := map[string]bool{rec.ID: true}
		var back []*sessionRecord
		for p := rec.PredecessorID; p != "" && !seen[p]; {
			prev, err := readSession(tx, tenant, p)
			if err != nil {
				return err
			}
			seen[p] = true
			back = append(back, prev)
			p = prev.PredecessorID
		}
		for i := len(back) - 1; i >= 0; i-- {
			chain = append(chain, back[i])
		}
		chain = append(chain, rec)
		for n := rec.SuccessorID; n != "" && !seen[n]; {
			next, err := readSession(tx, tenant, n)
			if err != nil {
				return err
			}
			seen[n] = true
			chain = append(chain, next)
			n = next.SuccessorID
		}
		return nil
	})
	if err != nil {
		return nil, errcat.Storage(fmt.Errorf("agents: session lineage: %w", err))
	}
	return chain, nil
}

func errSessionNotFound(id string) *errcat.Error {
	return errcat.Newf(errcat.SessionNotFound, "session_id", "No session %q.", id)
}

// readLive reads session id of tenant for a write: session_not_found when it
// is gone, session_compact_conflict (errArchived) when it is archived.
func readLive(tx store.Tx, tenant, id string) (*sessionRecord, error) {
	rec, err := readSession(tx, tenant, id)
	if errors.Is(err, errSessionMissing) {
		return nil, errSessionNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	if rec.Status != StatusLive {
		return nil, errArchived(rec)
	}
	return rec, nil
}

// errArchived answers a write to an archived session: 409
// session_compact_conflict naming its successor.
func errArchived(rec *sessionRecord) *errcat.Error {
	e := errcat.Newf(errcat.SessionCompactConflict, "session_id",
		"Session %s is archived (read-only); continue in its successor %s.", rec.ID, rec.SuccessorID)
	if rec.SuccessorID != "" {
		e.Extra = map[string]any{"successor_session_id": rec.SuccessorID}
	}
	return e
}
