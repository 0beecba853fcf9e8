package usage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/store"
)

// GroupKey names what Totals groups records by.
type GroupKey string

// The keys records can be grouped by.
const (
	ByDay     GroupKey = "day"     // the UTC day of the record's time
	ByAlias   GroupKey = "alias"   // the public model alias
	ByUser    GroupKey = "user"    // the GW-User-Id (none is a group of its own)
	ByBackend GroupKey = "backend" // the provider that answered
	ByKind    GroupKey = "kind"    // chat, embeddings, image
)

// groupKeys are the GroupKeys in the order a Group's JSON lists them.
var groupKeys = [...]GroupKey{ByDay, ByAlias, ByUser, ByBackend, ByKind}

// Query says which records Totals adds up and how it groups them.
type Query struct {
	// Tenant is the tenant whose records are read. Required.
	Tenant string
	// From and To bound the records' times: From included, To excluded.
	// Times before 1970 count as 1970.
	From, To time.Time
	// GroupBy lists the keys of the groups, which are sorted by them in this
	// order (each ascending); nil or empty makes one group of every record.
	GroupBy []GroupKey
	// Alias, User and Kind, when not "", keep only the records with that
	// alias, GW-User-Id or kind.
	Alias, User string
	Kind        Kind
}

// Group is the totals of the records of one group: those whose keys in
// Query.GroupBy are the group's.
type Group struct {
	// Day (YYYY-MM-DD, UTC), Alias, User, Backend and Kind are the group's
	// keys; only those of Query.GroupBy are set and answered.
	Day                  string
	Alias, User, Backend string
	Kind                 Kind
	// Requests counts the records; FailedRequests those that ended with an
	// error code, RequestsWithoutUsage those with an answer that reported no
	// usage (their tokens are not counted).
	Requests, FailedRequests, RequestsWithoutUsage int64
	// InputTokens and OutputTokens add up the records' tokens; TotalTokens is
	// their sum.
	InputTokens, OutputTokens, TotalTokens int64

	by []GroupKey
}

// MarshalJSON answers the group's keys (those it was grouped by, in the
// order day, alias, user, backend, kind; a user of records without
// GW-User-Id as null) and its totals.
func (g Group) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for _, k := range groupKeys {
		if !slices.Contains(g.by, k) {
			continue
		}
		var v string
		switch k {
		case ByDay:
			v = g.Day
		case ByAlias:
			v = g.Alias
		case ByUser:
			v = g.User
		case ByBackend:
			v = g.Backend
		case ByKind:
			v = string(g.Kind)
		}
		b = append(strconv.AppendQuote(b, string(k)), ':')
		if k == ByUser && v == "" {
			b = append(b, "null,"...)
			continue
		}
		q, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		b = append(append(b, q...), ',')
	}
	for _, f := range [...]struct {
		name string
		n    int64
	}{
		{"requests", g.Requests}, {"failed_requests", g.FailedRequests},
		{"requests_without_usage", g.RequestsWithoutUsage}, {"input_tokens", g.InputTokens},
		{"output_tokens", g.OutputTokens}, {"total_tokens", g.TotalTokens},
	} {
		b = append(strconv.AppendQuote(b, f.name), ':')
		b = append(strconv.AppendInt(b, f.n, 10), ',')
	}
	b[len(b)-1] = '}'
	return b, nil
}

// groupID identifies a group: the keys it is not grouped by are zero.
type groupID struct {
	day                  int64
	alias, user, backend string
	kind                 Kind
}

// Totals adds up the tenant's records that q selects, grouped as q asks, in
// one read transaction: the records of each day of the range are one key
// prefix, and the days without records before the tenant's first and after
// its last are not visited. Groups come sorted by q.GroupBy; there is no
// group without records. A store failure is returned wrapped.
func (s *Service) Totals(ctx context.Context, q Query) ([]Group, error) {
	epoch := time.Unix(0, 0)
	from, to := q.From, q.To
	if from.Before(epoch) {
		from = epoch
	}
	if !from.Before(to) {
		return nil, nil
	}
	lo, hi := from.UnixNano(), to.UnixNano()
	prefix := tenantPrefix(q.Tenant)
	var groups map[groupID]*Group
	err := s.st.View(ctx, func(tx store.Tx) error {
		groups = map[groupID]*Group{} // the callback may run more than once
		first, last, ok, err := dayBounds(tx, prefix)
		if err != nil || !ok {
			return err
		}
		for day := max(clock.Day(from), first); day <= min(clock.Day(to.Add(-1)), last); day++ {
			err := tx.Scan(bucketRecords, dayPrefix(q.Tenant, day), false, func(k, v []byte) (bool, error) {
				_, at, err := keyTime(k[len(prefix):])
				switch {
				case err != nil:
					return false, fmt.Errorf("record key: %w", err)
				case at < lo:
					return true, nil
				case at >= hi:
					return false, nil // the day's keys are in time order
				}
				var r storedRecord
				if err := json.Unmarshal(v, &r); err != nil {
					return false, fmt.Errorf("record: %w", err)
				}
				if q.selects(&r) {
					q.add(groups, day, &r)
				}
				return true, nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("usage.Totals: %w", err)
	}
	out := make([]Group, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, q.compare)
	return out, nil
}

// dayBounds returns the days of the first and the last record under prefix
// (a tenant's); ok is false when there is none.
func dayBounds(tx store.Tx, prefix []byte) (first, last int64, ok bool, err error) {
	for _, reverse := range []bool{false, true} {
		err = tx.Scan(bucketRecords, prefix, reverse, func(k, _ []byte) (bool, error) {
			day, _, err := keyTime(k[len(prefix):])
			if err != nil {
				return false, fmt.Errorf("record key: %w", err)
			}
			if reverse {
				last = day
			} else {
				first = day
			}
			ok = true
			return false, nil
		})
		if err != nil || !ok {
			return 0, 0, false, err
		}
	}
	return first, last, true, nil
}

// selects reports whether q's filters keep r.
func (q *Query) selects(r *storedRecord) bool {
	return (q.Alias == "" || r.Alias == q.Alias) && (q.User == "" || r.User == q.User) &&
		(q.Kind == "" || r.Kind == q.Kind)
}

// add counts r, of day, in its group.
func (q *Query) add(groups map[groupID]*Group, day int64, r *storedRecord) {
	var id groupID
	for _, k := range q.GroupBy {
		switch k {
		case ByDay:
			id.day = day
		case ByAlias:
			id.alias = r.Alias
		case ByUser:
			id.user = r.User
		case ByBackend:
			id.backend = r.Backend
		case ByKind:
			id.kind = r.Kind
		}
	}
	g := groups[id]
	if g == nil {
		g = &Group{Alias: id.alias, User: id.user, Backend: id.backend, Kind: id.kind, by: q.GroupBy}
		if slices.Contains(q.GroupBy, ByDay) {
			g.Day = clock.DayStart(day).Format(time.DateOnly)
		}
		groups[id] = g
	}
	g.Requests++
	if r.Error != "" {
		g.FailedRequests++
	}
	if r.UsageMissing {
		g.RequestsWithoutUsage++
	}
	g.InputTokens += r.InputTokens
	g.OutputTokens += r.OutputTokens
	g.TotalTokens += r.InputTokens + r.OutputTokens
}

// compare orders groups by q.GroupBy, each key ascending (days are
// YYYY-MM-DD, so their text order is their time order).
func (q *Query) compare(a, b Group) int {
	for _, k := range q.GroupBy {
		var c int
		switch k {
		case ByDay:
			c = cmp.Compare(a.Day, b.Day)
		case ByAlias:
			c = cmp.Compare(a.Alias, b.Alias)
		case ByUser:
			c = cmp.Compare(a.User, b.User)
		case ByBackend:
			c = cmp.Compare(a.Backend, b.Backend)
		case ByKind:
			c = cmp.Compare(a.Kind, b.Kind)
		}
		if c != 0 {
			return c
		}
	}
	return 0
}
