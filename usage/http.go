package usage

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// DefaultRange is the range of GET /v1/usage without from: the 30 days
// before to.
const DefaultRange = 30 * 24 * time.Hour

// The times from and to may name: keys hold nanoseconds since 1970, which an
// int64 holds until 2262.
var (
	minTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// listInput is what a GET /v1/usage asks for.
type listInput struct {
	q    Query
	none bool // a member asked for another user's records: there are none for it
}

// List serves GET /v1/usage (scope usage:read; see the package doc): the
// totals of the caller's records grouped as asked, as a paged list.
func (s *Service) List(w http.ResponseWriter, r *http.Request) {
	httpx.HandleList(w, r, s.resolve, s.page)
}

// resolve reads who asks and the query parameters of a GET /v1/usage.
func (s *Service) resolve(r *http.Request) (listInput, error) {
	c, err := httpx.CallerOf(r, httpx.UserOrAdminRead, true)
	if err != nil {
		return listInput{}, err
	}
	q, err := parseQuery(r.URL.Query(), s.clock.Now())
	if err != nil {
		return listInput{}, err
	}
	q.Tenant = c.Tenant.ID
	in := listInput{q: q}
	if c.User != "" {
		// The view of a caller with GW-User-Id is that user's records; a
		// user filter only narrows it.
		in.none = q.User != "" && q.User != c.User
		in.q.User = c.User
	}
	return in, nil
}

// page returns the page p of the totals in asks for.
func (s *Service) page(ctx context.Context, in listInput, p httpx.Page) ([]Group, bool, error) {
	if in.none {
		return []Group{}, false, nil
	}
	groups, err := s.Totals(ctx, in.q)
	if err != nil {
		return nil, false, errcat.Storage(err)
	}
	if p.Offset >= len(groups) {
		return []Group{}, false, nil
	}
	end := min(len(groups), p.Offset+p.Limit)
	return groups[p.Offset:end], end < len(groups), nil
}

// parseQuery reads from, to, group_by, alias, user and kind (see the
// package doc); now is the default of to.
func parseQuery(v url.Values, now time.Time) (Query, error) {
	q := Query{To: now, GroupBy: []GroupKey{ByDay}}
	var err error
	if v.Has("to") {
		if q.To, err = parseTime(v.Get("to"), "to", true); err != nil {
			return Query{}, err
		}
	}
	q.From = q.To.Add(-DefaultRange)
	if v.Has("from") {
		if q.From, err = parseTime(v.Get("from"), "from", false); err != nil {
			return Query{}, err
		}
	}
	if !q.From.Before(q.To) {
		return Query{}, errcat.New(errcat.InvalidField, "query.from", "from must be before to.")
	}
	if v.Has("group_by") {
		if q.GroupBy, err = parseGroupBy(v.Get("group_by")); err != nil {
			return Query{}, err
		}
	}
	q.Alias, q.User = v.Get("alias"), v.Get("user")
	if v.Has("kind") {
		switch k := Kind(v.Get("kind")); k {
		case KindChat, KindEmbeddings, KindImage:
			q.Kind = k
		default:
			return Query{}, errcat.New(errcat.InvalidField, "query.kind", "kind must be chat, embeddings or image.")
		}
	}
	return q, nil
}

// parseTime reads the time of parameter name: an RFC 3339 timestamp, or a
// date YYYY-MM-DD, which means 00:00 UTC of that day, or for to (end) the
// end of that day, so that from=D1&to=D2 covers both days whole.
func parseTime(s, name string, end bool) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	date := err != nil
	if date {
		if t, err = time.Parse(time.DateOnly, s); err != nil {
			return time.Time{}, errcat.Newf(errcat.InvalidField, "query."+name,
				"%s must be an RFC 3339 timestamp (2025-03-01T12:00:00Z) or a date (2025-03-01).", name)
		}
	}
	if t.Before(minTime) || t.After(maxTime) {
		return time.Time{}, errcat.Newf(errcat.InvalidField, "query."+name, "%s must be from 1970-01-01 to 2200-01-01.", name)
	}
	if date && end {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// parseGroupBy reads group_by: a comma-separated list of distinct keys;
// empty means one group of every record.
func parseGroupBy(s string) ([]GroupKey, error) {
	if s == "" {
		return nil, nil
	}
	var by []GroupKey
	for part := range strings.SplitSeq(s, ",") {
		k := GroupKey(strings.TrimSpace(part))
		if !slices.Contains(groupKeys[:], k) || slices.Contains(by, k) {
			return nil, errcat.New(errcat.InvalidField, "query.group_by",
				"group_by must be a comma-separated list of distinct keys among day, alias, user, backend and kind.")
		}
		by = append(by, k)
	}
	return by, nil
}
