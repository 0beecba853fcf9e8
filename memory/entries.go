package memory

import (
	"context"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
)

// Entry is a memory entry as the API shows it.
type Entry struct {
	Key        string    `json:"key"`
	Value      string    `json:"value"`
	Visibility string    `json:"visibility"`
	ScopeID    string    `json:"scope_id"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Usage is the answer of GET /v1/memory/usage.
type Usage struct {
	UsedBytes int `json:"used_bytes"`
	CapBytes  int `json:"cap_bytes"`
	Entries   int `json:"entries"`
}

// entryRecord is the stored value of an entry.
type entryRecord struct {
	Value     string    `json:"value"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// usageRecord is the stored usage counter of a bucket.
type usageRecord struct {
	UsedBytes int `json:"used_bytes"`
	Entries   int `json:"entries"`
}

// entrySize is what an entry counts against its bucket's cap.
func entrySize(key, value string) int { return len(key) + len(value) }

// readUsage returns the usage record of bucket b; the zero record when b is
// empty.
func readUsage(tx store.Tx, b bucketKey) (usageRecord, error) {
	var u usageRecord
	_, err := store.GetJSON(tx, bucketUsage, b.prefix(), &u)
	return u, err
}

// readEntry returns the record of key in bucket b, or nil when there is none.
func readEntry(tx store.Tx, b bucketKey, key string) (*entryRecord, error) {
	var rec entryRecord
	if ok, err := store.GetJSON(tx, bucketEntries, b.entryKey(key), &rec); !ok {
		return nil, err
	}
	return &rec, nil
}

// entry is rec as the API shows it, as key of bucket b.
func (rec entryRecord) entry(b bucketKey, key string) Entry {
	return Entry{Key: key, Value: rec.Value, Visibility: b.visibility, ScopeID: b.scope,
		CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt}
}

// errBucketFull is memory_bucket_full for a write that would make the bucket
// hold want bytes.
func errBucketFull(used, want int) *errcat.Error {
	return errcat.Newf(errcat.MemoryBucketFull, "value",
		"The memory bucket would hold %d bytes, over its cap of %d (%d used); delete entries or shorten the value.",
		want, BucketCapBytes, used)
}

// fits returns memory_bucket_full when writing key=value into the bucket would
// push it over its cap. It reads the usage counter and the old entry, never the
// whole bucket.
func fits(tx store.Tx, b bucketKey, key, value string) (usageRecord, *entryRecord, error) {
	u, err := readUsage(tx, b)
	if err != nil {
		return u, nil, err
	}
	old, err := readEntry(tx, b, key)
	if err != nil {
		return u, nil, err
	}
	want := u.UsedBytes + entrySize(key, value)
	if old != nil {
		want -= entrySize(key, old.Value)
	}
	if want > BucketCapBytes {
		return u, nil, errBucketFull(u.UsedBytes, want)
	}
	return u, old, nil
}

// putEntry upserts key=value into bucket b, updating the usage counter in the
// same transaction; an overflow is memory_bucket_full and leaves the old value.
func (s *Service) putEntry(ctx context.Context, b bucketKey, key, value string) (Entry, error) {
	now := s.clk.Now().UTC()
	res, err := store.UpdateValue(ctx, s.st, func(tx store.Tx) (Entry, error) {
		return writeEntry(tx, b, key, value, now)
	})
	return res, errcat.FromStore(err)
}

// writeEntry is putEntry's write in tx, at now.
func writeEntry(tx store.Tx, b bucketKey, key, value string, now time.Time) (Entry, error) {
	u, old, err := fits(tx, b, key, value)
	if err != nil {
		return Entry{}, err
	}
	rec := entryRecord{Value: value, CreatedAt: now, UpdatedAt: now}
	u.UsedBytes += entrySize(key, value)
	if old != nil {
		u.UsedBytes -= entrySize(key, old.Value)
		rec.CreatedAt = old.CreatedAt
	} else {
		u.Entries++
	}
	if err := store.PutJSON(tx, bucketEntries, b.entryKey(key), rec); err != nil {
		return Entry{}, err
	}
	if err := store.PutJSON(tx, bucketUsage, b.prefix(), u); err != nil {
		return Entry{}, err
	}
	return rec.entry(b, key), nil
}

// deleteEntry removes key from bucket b and reports whether it existed.
func (s *Service) deleteEntry(ctx context.Context, b bucketKey, key string) (bool, error) {
	res, err := store.UpdateValue(ctx, s.st, func(tx store.Tx) (bool, error) {
		old, err := readEntry(tx, b, key)
		if err != nil || old == nil {
			return false, err
		}
		u, err := readUsage(tx, b)
		if err != nil {
			return false, err
		}
		u.UsedBytes -= entrySize(key, old.Value)
		u.Entries--
		if err := tx.Delete(bucketEntries, b.entryKey(key)); err != nil {
			return false, err
		}
		if u.Entries <= 0 {
			return true, tx.Delete(bucketUsage, b.prefix())
		}
		return true, store.PutJSON(tx, bucketUsage, b.prefix(), u)
	})
	return res, errcat.FromStore(err)
}

// scanEntries appends the entries of bucket b, sorted by key, to dst. An empty
// bucket (no usage record) is not scanned.
func scanEntries(tx store.Tx, b bucketKey, dst []Entry) ([]Entry, error) {
	if tx.Get(bucketUsage, b.prefix()) == nil {
		return dst, nil
	}
	p := b.prefix()
	err := store.ScanJSON(tx, bucketEntries, p, false, func(k []byte, rec entryRecord) (bool, error) {
		key, _, err := store.ReadString(k[len(p):])
		if err != nil {
			return false, err
		}
		dst = append(dst, rec.entry(b, key))
		return true, nil
	})
	return dst, err
}

// listEntries returns the entries of the buckets bs, in that order, each
// sorted by key, read in one transaction.
func (s *Service) listEntries(ctx context.Context, bs ...bucketKey) ([]Entry, error) {
	res, err := store.ViewValue(ctx, s.st, func(tx store.Tx) ([]Entry, error) {
		out := []Entry{}
		for _, b := range bs {
			var err error
			if out, err = scanEntries(tx, b, out); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
	return res, errcat.FromStore(err)
}

// usage returns the usage of bucket b.
func (s *Service) usage(ctx context.Context, b bucketKey) (Usage, error) {
	u, err := store.ViewValue(ctx, s.st, func(tx store.Tx) (usageRecord, error) { return readUsage(tx, b) })
	if err != nil {
		return Usage{}, errcat.FromStore(err)
	}
	return Usage{UsedBytes: u.UsedBytes, CapBytes: BucketCapBytes, Entries: u.Entries}, nil
}
