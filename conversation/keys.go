package conversation

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/chatgw/gateway/store"
)

// Buckets of the conversation layout; the package owns every bucket named conv/*.
var (
	// bucketMeta: str(tenant) str(id) -> meta record (JSON).
	bucketMeta = []byte("conv/meta")
	// bucketMsg: str(tenant) str(id) seq(8 bytes big-endian) -> one stored message
	// (an OpenAI chat message object, JSON).
	bucketMsg = []byte("conv/msg")
	// bucketByUser: str(tenant) str(user) inv(8) id -> summary value.
	bucketByUser = []byte("conv/by-user")
	// bucketByTenant: str(tenant) inv(8) id -> summary value.
	bucketByTenant = []byte("conv/by-tenant")
	// bucketLayout: "version" -> the layout version of the conv/ buckets,
	// 8 bytes big-endian; absent is layout 1 (see Migrate).
	bucketLayout = []byte("conv/layout")
	// bucketOwnerV1: id -> tenant, layout 1's global claim of an id by the
	// first tenant that stored it. Nothing reads or writes it since layout 2;
	// Migrate empties it.
	bucketOwnerV1 = []byte("conv/owner")
)

// str appends s as one component of a composite key (store.AppendString), so a
// prefix of whole components never matches another tenant's, user's or
// conversation's keys, whatever bytes the ids hold.
func str(b []byte, s string) []byte { return store.AppendString(b, s) }

// convPrefix is str(tenant) str(id): the meta key, and the prefix of the
// conversation's message keys.
func convPrefix(tenant, id string) []byte {
	b := make([]byte, 0, len(tenant)+len(id)+4+8)
	return str(str(b, tenant), id)
}

// msgKey is the key of message seq of a conversation whose prefix is p.
func msgKey(p []byte, seq uint64) []byte {
	k := make([]byte, len(p), len(p)+8)
	copy(k, p)
	return store.AppendUint64(k, seq)
}

// userPrefix is str(tenant) str(user), the prefix of a user's index entries.
func userPrefix(tenant, user string) []byte {
	return str(str(nil, tenant), user)
}

// tenantPrefix is str(tenant), the prefix of a tenant's index entries.
func tenantPrefix(tenant string) []byte { return str(nil, tenant) }

// indexKey is prefix inv(updated) id.
func indexKey(prefix []byte, updated int64, id string) []byte {
	k := make([]byte, 0, len(prefix)+8+len(id))
	k = append(k, prefix...)
	k = store.AppendNewestFirst(k, updated)
	return append(k, id...)
}

// summaryValue is the value of an index entry: everything a list page shows, so
// that listing reads only the index. Layout: version byte 1, uvarint
// message_count, varint last_updated (Unix ns), then the user id.
func summaryValue(count int64, updated int64, user string) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(user))
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(count))
	b = binary.AppendVarint(b, updated)
	return append(b, user...)
}

var errBadIndex = errors.New("conversation: malformed index entry")

// parseIndex decodes an index entry whose key starts with a prefix of length n.
func parseIndex(key, value []byte, n int) (Summary, error) {
	if len(key) < n+8 || len(value) < 1 || value[0] != 1 {
		return Summary{}, errBadIndex
	}
	v := value[1:]
	count, k := binary.Uvarint(v)
	if k <= 0 {
		return Summary{}, errBadIndex
	}
	v = v[k:]
	updated, k := binary.Varint(v)
	if k <= 0 {
		return Summary{}, errBadIndex
	}
	return Summary{
		ID:           string(key[n+8:]),
		MessageCount: int64(count),
		LastUpdated:  time.Unix(0, updated).UTC(),
		UserID:       string(v[k:]),
	}, nil
}
