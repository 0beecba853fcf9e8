package memory

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"sync"
	"time"

	"github.com/chatgw/gateway/store"
)

// confirmStore holds the pending confirm tokens of public memory_remember calls,
// in memory: a token lives 60 s, so a restart only costs a new confirmation.
//
// A token is a random id (crypto/rand, 130 bits) mapped to the SHA-256 of the
// call it confirms (tenant, user, scope, visibility, key, value) and its expiry.
// It is redeemed once, only by the same call before expiry; a failed redemption
// (wrong arguments, tenant or user) leaves it for the rightful call.
type confirmStore struct {
	mu      sync.Mutex
	max     int
	pending map[string]pendingConfirm
}

type pendingConfirm struct {
	digest  [sha256.Size]byte
	expires time.Time
}

func newConfirmStore(max int) *confirmStore {
	return &confirmStore{max: max, pending: make(map[string]pendingConfirm)}
}

// confirmDigest binds a token to one exact write.
func confirmDigest(b bucketKey, user, key, value string) [sha256.Size]byte {
	k := store.AppendString(nil, b.tenant)
	k = store.AppendString(k, user)
	k = store.AppendString(k, b.scope)
	k = store.AppendString(k, b.visibility)
	k = store.AppendString(k, key)
	k = store.AppendString(k, value)
	return sha256.Sum256(k)
}

// issue returns a new token for digest, valid until now + ttl.
func (c *confirmStore) issue(now time.Time, ttl time.Duration, digest [sha256.Size]byte) string {
	tok := "mct_" + rand.Text()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) >= c.max {
		c.evict(now)
	}
	c.pending[tok] = pendingConfirm{digest: digest, expires: now.Add(ttl)}
	return tok
}

// redeem consumes tok when it was issued for digest and has not expired (a
// token is valid while now < expiry). It returns the consumed record, for
// restore.
func (c *confirmStore) redeem(now time.Time, tok string, digest [sha256.Size]byte) (pendingConfirm, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[tok]
	if !ok {
		return p, false
	}
	if !now.Before(p.expires) {
		delete(c.pending, tok)
		return p, false
	}
	if subtle.ConstantTimeCompare(p.digest[:], digest[:]) != 1 {
		return p, false
	}
	delete(c.pending, tok)
	return p, true
}

// restore puts back a token whose write failed (bucket full, storage error),
// so that the confirmed call can be retried until the token expires.
func (c *confirmStore) restore(tok string, p pendingConfirm) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[tok] = p
}

// evict drops expired tokens and, when none had expired, the one closest to
// expiry. The caller holds c.mu.
func (c *confirmStore) evict(now time.Time) {
	oldest, first := "", true
	var oldestExp time.Time
	for tok, p := range c.pending {
		if !now.Before(p.expires) {
			delete(c.pending, tok)
			continue
		}
		if first || p.expires.Before(oldestExp) {
			oldest, oldestExp, first = tok, p.expires, false
		}
	}
	if len(c.pending) >= c.max && !first {
		delete(c.pending, oldest)
	}
}
