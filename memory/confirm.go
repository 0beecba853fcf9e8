package memory

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"slices"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
)

// Confirm tokens of public memory_remember calls live in the store, so that a
// token issued by one gateway is redeemed on another sharing its database
// ("With PostgreSQL every limit (per-token rate, quotas, image rate, confirm
// tokens) is shared by all replicas using that database",
// docs/contract.md#92-several-replicas), and survives a restart.
//
// A token is a random id (crypto/rand, 130 bits) bound to the SHA-256 of the
// call it confirms (tenant, user, scope, visibility, key, value) and its
// expiry. It is redeemed once, only by the same call before expiry; a failed
// redemption (wrong arguments, tenant or user) leaves it for the rightful call.
//
// A token's key (bucketConfirms) holds the token's hash, not the token, so
// that what the store holds cannot confirm anything. The tenant comes first
// so that issuing a token scans only its tenant's tokens, dropping the
// expired ones and, at Config.MaxPendingConfirms, the ones closest to expiry:
// expired tokens do not accumulate, a tenant's are deleted by its next
// confirmation, and a tenant never holds more than MaxPendingConfirms.

// confirmRecord is a pending confirm token.
type confirmRecord struct {
	Digest  []byte `json:"digest"`  // confirmDigest of the call
	Expires int64  `json:"expires"` // unix nanoseconds: invalid from then on
}

// errConfirm is the answer to a token that does not confirm the call.
func errConfirm() *errcat.Error {
	return errcat.New(errcat.MemoryConfirmRequired, "confirm_token",
		"The confirm_token is unknown, expired, already used or issued for other arguments; call again without it to get a new one.")
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

// confirmKey is the key of tok, a token of tenant.
func confirmKey(tenant, tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return append(store.AppendString(nil, tenant), h[:]...)
}

// newConfirmToken returns a new random token.
func newConfirmToken() string { return "mct_" + rand.Text() }

// issueConfirm returns a new token for the public write digest names, of
// key=value into b, valid for ConfirmTTLSeconds. In the same transaction it
// checks that the write fits now (memory_bucket_full otherwise: a token for a
// write bound to fail would only waste the user's confirmation), and deletes
// the tenant's expired tokens and, when Config.MaxPendingConfirms are still
// pending, the ones closest to expiry.
func (s *Service) issueConfirm(ctx context.Context, b bucketKey, key, value string, digest [sha256.Size]byte) (string, error) {
	tok, now := newConfirmToken(), s.clk.Now()
	rec := confirmRecord{Digest: digest[:], Expires: now.Add(ConfirmTTLSeconds * time.Second).UnixNano()}
	err := s.st.Update(ctx, func(tx store.Tx) error {
		if _, _, err := fits(tx, b, key, value); err != nil {
			return err
		}
		if err := trimConfirms(tx, b.tenant, now, s.maxConfirms-1); err != nil {
			return err
		}
		return store.PutJSON(tx, bucketConfirms, confirmKey(b.tenant, tok), rec)
	})
	if err != nil {
		return "", errcat.FromStore(err)
	}
	return tok, nil
}

// writeConfirmed redeems tok for the public write digest names and writes
// key=value into b, in one transaction: the token is consumed exactly once,
// by a write that happened, whichever gateway on the store serves the call;
// a write that fails (memory_bucket_full, a store failure) rolls the
// redemption back with it, and the token stays for a retry.
func (s *Service) writeConfirmed(ctx context.Context, b bucketKey, key, value string, digest [sha256.Size]byte, tok string) error {
	now := s.clk.Now()
	return errcat.FromStore(s.st.Update(ctx, func(tx store.Tx) error {
		if err := redeemConfirm(tx, b.tenant, tok, digest, now); err != nil {
			return err
		}
		_, err := writeEntry(tx, b, key, value, now.UTC())
		return err
	}))
}

// trimConfirms deletes tenant's tokens that expired at now and, past keep,
// the live ones closest to expiry.
func trimConfirms(tx store.Tx, tenant string, now time.Time, keep int) error {
	type pending struct {
		key     []byte
		expires int64
	}
	var stale [][]byte
	var live []pending
	err := store.ScanJSON(tx, bucketConfirms, store.AppendString(nil, tenant), false, func(k []byte, rec confirmRecord) (bool, error) {
		if rec.Expires <= now.UnixNano() {
			stale = append(stale, bytes.Clone(k))
		} else {
			live = append(live, pending{bytes.Clone(k), rec.Expires})
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if over := len(live) - keep; over > 0 {
		slices.SortFunc(live, func(a, b pending) int { return cmp.Compare(a.expires, b.expires) })
		for _, p := range live[:over] {
			stale = append(stale, p.key)
		}
	}
	for _, k := range stale {
		if err := tx.Delete(bucketConfirms, k); err != nil {
			return err
		}
	}
	return nil
}

// redeemConfirm consumes tok, a token of tenant, in tx when it was issued for
// digest and has not expired (a token is valid while now < expiry), or
// returns memory_confirm_required and changes nothing.
func redeemConfirm(tx store.Tx, tenant, tok string, digest [sha256.Size]byte, now time.Time) error {
	key := confirmKey(tenant, tok)
	var rec confirmRecord
	found, err := store.GetJSON(tx, bucketConfirms, key, &rec)
	switch {
	case err != nil:
		return err
	case !found, rec.Expires <= now.UnixNano(), subtle.ConstantTimeCompare(rec.Digest, digest[:]) != 1:
		return errConfirm()
	}
	return tx.Delete(bucketConfirms, key)
}
