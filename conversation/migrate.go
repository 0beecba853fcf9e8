package conversation

import (
	"context"
	"fmt"

	"github.com/chatgw/gateway/store"
)

// LayoutVersion is the version of the storage layout this package reads and
// writes; Migrate brings a store to it. The versions:
//
//  1. conv/owner (id -> tenant) claimed a conversation id for the first
//     tenant that stored it: another tenant naming the id was refused.
//  2. No conv/owner: a conversation is keyed by tenant and id alone, so
//     tenants never see each other's ids, and another user of the tenant is
//     refused by the conversation's own meta record, as before.
const LayoutVersion = 2

// Migrate brings the conversation buckets of the store to LayoutVersion and
// records the version in conv/layout, all in one transaction: on any error
// nothing has changed. Once the store is at LayoutVersion it only reads the
// version, so it is meant to run at every start (gateway.New calls it). It is
// idempotent, fine on a store that never held a conversation, and harmless
// while the repository serves requests: what it removes is what no method
// reads any more.
//
// A store whose version is newer than LayoutVersion (written by a newer
// gateway) is refused with an error and left as it is. Errors are plain
// wrapped errors, not *errcat.Error: Migrate serves no request.
func (r *Repository) Migrate(ctx context.Context) error {
	v, err := store.ViewValue(ctx, r.st, layoutVersion)
	if err != nil {
		return fmt.Errorf("conversation.Migrate: %w", err)
	}
	if v == LayoutVersion {
		return nil
	}
	err = r.st.Update(ctx, func(tx store.Tx) error {
		v, err := layoutVersion(tx)
		if err != nil || v == LayoutVersion {
			return err // another gateway on the same store was first
		}
		if err := dropOwnerClaims(tx); err != nil {
			return err
		}
		return tx.Put(bucketLayout, []byte(layoutKey), store.AppendUint64(nil, LayoutVersion))
	})
	if err != nil {
		return fmt.Errorf("conversation.Migrate: layout %d to %d: %w", v, LayoutVersion, err)
	}
	return nil
}

// layoutKey is the key of the layout version in conv/layout.
const layoutKey = "version"

// layoutVersion reads the store's layout version: 1 when none is recorded
// (layout 1 recorded none, and a new store holds nothing of either layout).
// A version newer than LayoutVersion is an error, so that an older gateway
// does not write into a layout it does not know.
func layoutVersion(tx store.Tx) (uint64, error) {
	b := tx.Get(bucketLayout, []byte(layoutKey))
	if b == nil {
		return 1, nil
	}
	v, rest, err := store.ReadUint64(b)
	switch {
	case err != nil || len(rest) != 0:
		return 0, fmt.Errorf("malformed layout version %x", b)
	case v > LayoutVersion:
		return 0, fmt.Errorf("the store's conversations are in layout %d, newer than this gateway's %d: run a newer gateway", v, LayoutVersion)
	}
	return v, nil
}

// dropOwnerClaims removes layout 1's conv/owner records. Keys are collected
// first: a Scan's callback must not change the bucket it scans.
func dropOwnerClaims(tx store.Tx) error {
	return store.DeleteMatching(tx, bucketOwnerV1, nil, nil)
}
