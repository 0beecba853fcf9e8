package quota

import (
	"bytes"
	"slices"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/store"
)

// bucketCounters holds one record per (day, tenant, alias) with a budget:
//
//	u64(day) str(tenant) str(alias) -> record (JSON)
//
// The day comes first so that the counters of past days are one key range at
// the start of the bucket, deleted in one transaction (deletePast). The
// package owns every bucket named quota/*.
var bucketCounters = []byte("quota/counters")

// signBit makes the day number's unsigned encoding sort as the signed number
// does (a clock before 1970 still gives ordered keys).
const signBit = 1 << 63

// record is one counter as stored.
type record struct {
	Requests int64  `json:"requests"`        // requests admitted that day
	Tokens   int64  `json:"tokens"`          // tokens charged by ended tickets
	Holds    []hold `json:"holds,omitempty"` // reservations of tickets not yet ended
}

// hold is the reservation of one ticket.
type hold struct {
	ID      string `json:"id"`      // the ticket's id
	Tokens  int64  `json:"tokens"`  // tokens reserved
	Expires int64  `json:"expires"` // unix nanoseconds: the hold reserves nothing from then on
}

// dayPrefix is the first key component of day's counters.
func dayPrefix(day int64) []byte {
	return store.AppendUint64(nil, uint64(day)^signBit)
}

// counterKey is the key of tenant's counter for alias on day.
func counterKey(day int64, tenant, alias string) []byte {
	k := store.AppendString(dayPrefix(day), tenant)
	return store.AppendString(k, alias)
}

// readRecord returns the counter at key, the zero record when there is none;
// found says whether there was one.
func readRecord(tx store.Tx, key []byte) (rec record, found bool, err error) {
	found, err = store.GetJSON(tx, bucketCounters, key, &rec)
	return rec, found, err
}

// dropExpired removes the holds whose expiry is at or before now (unix
// nanoseconds): their tickets were never ended, their replica presumably died,
// and their tokens go back to the budget.
func (r *record) dropExpired(now int64) {
	r.Holds = slices.DeleteFunc(r.Holds, func(h hold) bool { return h.Expires <= now })
}

// reserved is the sum of the holds' tokens.
func (r *record) reserved() int64 {
	var n int64
	for _, h := range r.Holds {
		n += h.Tokens
	}
	return n
}

// end removes the hold of ticket id and charges used tokens, or reports
// false when there is no such hold (the ticket ended already, or its hold
// expired and was dropped).
func (r *record) end(id string, used int64) bool {
	i := slices.IndexFunc(r.Holds, func(h hold) bool { return h.ID == id })
	if i < 0 {
		return false
	}
	r.Holds = slices.Delete(r.Holds, i, i+1)
	r.Tokens += used
	return true
}

// fits reports whether one more request reserving reserve tokens stays within
// q; expired holds must have been dropped.
func (r *record) fits(q auth.Quota, reserve int64) bool {
	if q.RequestsPerDay > 0 && r.Requests >= q.RequestsPerDay {
		return false
	}
	if q.TokensPerDay > 0 {
		// A spent budget admits nothing, not even a zero reservation; subtract
		// rather than add so that a huge reserve cannot overflow.
		left := q.TokensPerDay - r.Tokens - r.reserved()
		if left <= 0 || reserve > left {
			return false
		}
	}
	return true
}

// deletePast deletes the counters of the days before day. They are the keys
// before day's first key, so the scan stops at the first key of day or later
// and never reads the current day's counters.
func deletePast(tx store.Tx, day int64) error {
	first := dayPrefix(day)
	var keys [][]byte // assigned afresh: the transaction may run again
	err := tx.Scan(bucketCounters, nil, false, func(k, _ []byte) (bool, error) {
		if bytes.Compare(k, first) >= 0 {
			return false, nil
		}
		keys = append(keys, bytes.Clone(k))
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Delete(bucketCounters, k); err != nil {
			return err
		}
	}
	return nil
}
