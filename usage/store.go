package usage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/store"
)

// The storage layout; the package owns every bucket named usage/*. Key
// components are store.AppendString / store.AppendUint64 encoded.
var (
	// bucketRecords: str(tenant) u64(day) u64(unix nanos) u64(instance)
	// u64(seq) -> storedRecord (JSON). day is the UTC day number of the
	// record's time (days since 1970-01-01), so that a tenant's records of a
	// day are one prefix and in time order; instance (random per Service)
	// and seq make the key unique across replicas.
	bucketRecords = []byte("usage/records")
	// bucketTenants: str(tenant) -> "" for every tenant with records, so
	// that the purger visits each tenant's oldest records without walking
	// the others.
	bucketTenants = []byte("usage/tenants")
)

// storedRecord is a Record as stored; tenant and time are in the key.
type storedRecord struct {
	User         string `json:"user,omitempty"`
	Kind         Kind   `json:"kind"`
	Alias        string `json:"alias"`
	Backend      string `json:"backend,omitempty"`
	Status       int    `json:"status"`
	Error        string `json:"error,omitempty"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	UsageMissing bool   `json:"usage_missing,omitempty"`
}

// tenantPrefix is the prefix of every record key of tenant.
func tenantPrefix(tenant string) []byte { return store.AppendString(nil, tenant) }

// dayPrefix is the prefix of tenant's records of day.
func dayPrefix(tenant string, day int64) []byte {
	return store.AppendUint64(tenantPrefix(tenant), uint64(day))
}

// recordKey is the key of p written by the Service with instance.
func recordKey(p *pending, instance uint64) []byte {
	t := p.rec.Time
	if t.Unix() < 0 {
		t = time.Unix(0, 0) // keys hold times from 1970 on
	}
	// One allocation: the tenant (2 bytes of terminator, more for each NUL
	// byte) and four integers.
	k := store.AppendString(make([]byte, 0, len(p.rec.Tenant)+8+4*8), p.rec.Tenant)
	k = store.AppendUint64(k, uint64(clock.Day(t)))
	k = store.AppendUint64(k, uint64(t.UnixNano()))
	k = store.AppendUint64(k, instance)
	return store.AppendUint64(k, p.seq)
}

// keyTime reads the day and the time of a record key after its tenant
// component, rest.
func keyTime(rest []byte) (day int64, unixNano int64, err error) {
	d, rest, err := store.ReadUint64(rest)
	if err != nil {
		return 0, 0, err
	}
	n, _, err := store.ReadUint64(rest)
	return int64(d), int64(n), err
}

// write stores batch in one transaction: the records and their tenants. Keys
// and values are built before the transaction, whose callback may run more
// than once and then writes the same bytes again.
func (s *Service) write(ctx context.Context, batch []pending) error {
	type kv struct{ k, v []byte }
	kvs := make([]kv, len(batch))
	var tenants [][]byte
	last := ""
	for i := range batch {
		p := &batch[i]
		r := &p.rec
		v, err := json.Marshal(storedRecord{User: r.User, Kind: r.Kind, Alias: r.Alias, Backend: r.Backend,
			Status: r.Status, Error: r.Error, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
			UsageMissing: r.UsageMissing})
		if err != nil {
			return fmt.Errorf("usage: encode record: %w", err)
		}
		kvs[i] = kv{recordKey(p, s.instance), v}
		if i == 0 || r.Tenant != last {
			// Runs of one tenant are common; a repeat is a harmless Put.
			tenants, last = append(tenants, tenantPrefix(r.Tenant)), r.Tenant
		}
	}
	err := s.st.Update(ctx, func(tx store.Tx) error {
		for _, t := range tenants {
			if err := tx.Put(bucketTenants, t, []byte{}); err != nil {
				return err
			}
		}
		for _, e := range kvs {
			if err := tx.Put(bucketRecords, e.k, e.v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("usage: write %d records: %w", len(batch), err)
	}
	return nil
}
