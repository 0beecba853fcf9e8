package usage_test

import (
	"errors"
	"testing"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/usage"
)

// seed are the records the list tests read: acme's over four days (the
// first outside the default 30 days), and one of globex.
var seed = []usage.Record{
	{Time: t0.Add(-2 * time.Hour), Tenant: "acme", User: "alice", Kind: usage.KindChat, Alias: "lm-4-scout", Backend: "local",
		Status: 200, InputTokens: 10, OutputTokens: 5},
	{Time: t0.Add(-time.Hour), Tenant: "acme", User: "alice", Kind: usage.KindChat, Alias: "lm-4-scout-cloudA", Backend: "cloudA",
		Status: 200, InputTokens: 20, OutputTokens: 7},
	{Time: t0.Add(-30 * time.Minute), Tenant: "acme", User: "bob", Kind: usage.KindEmbeddings, Alias: "lm-embed", Backend: "local",
		Status: 200, InputTokens: 8},
	{Time: time.Date(2025, 3, 9, 9, 0, 0, 0, time.UTC), Tenant: "acme", User: "bob", Kind: usage.KindChat, Alias: "lm-4-scout", Backend: "cloudA",
		Status: 200, InputTokens: 100, OutputTokens: 50},
	{Time: time.Date(2025, 3, 9, 23, 59, 59, 999999999, time.UTC), Tenant: "acme", Kind: usage.KindChat, Alias: "lm-4-scout",
		Status: 503, Error: "upstream_unavailable"},
	{Time: time.Date(2025, 3, 8, 8, 0, 0, 0, time.UTC), Tenant: "acme", User: "alice", Kind: usage.KindImage, Alias: "lm-image", Backend: "cloudA",
		Status: 200, UsageMissing: true},
	{Time: time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC), Tenant: "acme", User: "alice", Kind: usage.KindChat, Alias: "lm-4-scout", Backend: "local",
		Status: 200, InputTokens: 1000, OutputTokens: 1000},
	{Time: t0.Add(-3 * time.Hour), Tenant: "globex", User: "carol", Kind: usage.KindChat, Alias: "lm-4-scout", Backend: "local",
		Status: 200, InputTokens: 3, OutputTokens: 4},
}

// totals is a group's totals as the answer has them: requests, failed,
// without usage, input and output tokens.
type totals [5]float64

// item is a list item of keys (a key to nil for a null user) and t.
func item(keys map[string]any, t totals) map[string]any {
	m := map[string]any{"requests": t[0], "failed_requests": t[1], "requests_without_usage": t[2],
		"input_tokens": t[3], "output_tokens": t[4], "total_tokens": t[3] + t[4]}
	for k, v := range keys {
		m[k] = v
	}
	return m
}

// k makes the keys of an item from pairs.
func k(pairs ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(pairs); i += 2 {
		m[pairs[i].(string)] = pairs[i+1]
	}
	return m
}

// The seed's groups by user of acme over the last 30 days, which several
// listings answer.
var (
	noUser = item(k("user", nil), totals{1, 1, 0, 0, 0})
	alice  = item(k("user", "alice"), totals{3, 0, 1, 30, 12})
	bob    = item(k("user", "bob"), totals{2, 0, 0, 108, 50})
)

// listCase is a GET /v1/usage and the items it answers.
type listCase struct {
	name  string
	q     testkit.Request
	items []map[string]any
}

func (e *env) runList(t *testing.T, cases []listCase) {
	t.Helper()
	for _, tc := range cases {
		e.Run(t, tc.name, func(t *testing.T) {
			got := testkit.Data(e.OK(tc.q))
			want := make([]any, len(tc.items))
			for i, it := range tc.items {
				want[i] = it
			}
			testkit.Diff(t, "data", want, got)
		})
	}
}

func TestListGrouping(t *testing.T) {
	e := newEnv(t, usage.Config{})
	e.record(seed...)
	all := totals{6, 1, 1, 138, 62} // the tenant's records of the last 30 days
	e.runList(t, []listCase{
		{"default is by day", get(acmeAdmin, "", ""), []map[string]any{
			item(k("day", "2025-03-08"), totals{1, 0, 1, 0, 0}),
			item(k("day", "2025-03-09"), totals{2, 1, 0, 100, 50}),
			item(k("day", "2025-03-10"), totals{3, 0, 0, 38, 12}),
		}},
		{"alias", get(acmeAdmin, "", "group_by=alias"), []map[string]any{
			item(k("alias", "lm-4-scout"), totals{3, 1, 0, 110, 55}),
			item(k("alias", "lm-4-scout-cloudA"), totals{1, 0, 0, 20, 7}),
			item(k("alias", "lm-embed"), totals{1, 0, 0, 8, 0}),
			item(k("alias", "lm-image"), totals{1, 0, 1, 0, 0}),
		}},
		{"user, none first as null", get(acmeAdmin, "", "group_by=user"), []map[string]any{noUser, alice, bob}},
		{"backend", get(acmeAdmin, "", "group_by=backend"), []map[string]any{
			item(k("backend", ""), totals{1, 1, 0, 0, 0}),
			item(k("backend", "cloudA"), totals{3, 0, 1, 120, 57}),
			item(k("backend", "local"), totals{2, 0, 0, 18, 5}),
		}},
		{"kind", get(acmeAdmin, "", "group_by=kind"), []map[string]any{
			item(k("kind", "chat"), totals{4, 1, 0, 130, 62}),
			item(k("kind", "embeddings"), totals{1, 0, 0, 8, 0}),
			item(k("kind", "image"), totals{1, 0, 1, 0, 0}),
		}},
		{"day and alias", get(acmeAdmin, "", "group_by=day,alias"), []map[string]any{
			item(k("day", "2025-03-08", "alias", "lm-image"), totals{1, 0, 1, 0, 0}),
			item(k("day", "2025-03-09", "alias", "lm-4-scout"), totals{2, 1, 0, 100, 50}),
			item(k("day", "2025-03-10", "alias", "lm-4-scout"), totals{1, 0, 0, 10, 5}),
			item(k("day", "2025-03-10", "alias", "lm-4-scout-cloudA"), totals{1, 0, 0, 20, 7}),
			item(k("day", "2025-03-10", "alias", "lm-embed"), totals{1, 0, 0, 8, 0}),
		}},
		{"user then day, spaces allowed", get(acmeAdmin, "", "group_by=user,%20day"), []map[string]any{
			item(k("user", nil, "day", "2025-03-09"), totals{1, 1, 0, 0, 0}),
			item(k("user", "alice", "day", "2025-03-08"), totals{1, 0, 1, 0, 0}),
			item(k("user", "alice", "day", "2025-03-10"), totals{2, 0, 0, 30, 12}),
			item(k("user", "bob", "day", "2025-03-09"), totals{1, 0, 0, 100, 50}),
			item(k("user", "bob", "day", "2025-03-10"), totals{1, 0, 0, 8, 0}),
		}},
		{"alias, user and backend", get(acmeAdmin, "", "group_by=alias,user,backend&alias=lm-4-scout"), []map[string]any{
			item(k("alias", "lm-4-scout", "user", nil, "backend", ""), totals{1, 1, 0, 0, 0}),
			item(k("alias", "lm-4-scout", "user", "alice", "backend", "local"), totals{1, 0, 0, 10, 5}),
			item(k("alias", "lm-4-scout", "user", "bob", "backend", "cloudA"), totals{1, 0, 0, 100, 50}),
		}},
		{"no grouping: one total", get(acmeAdmin, "", "group_by="), []map[string]any{item(nil, all)}},
		{"alias filter", get(acmeAdmin, "", "group_by=&alias=lm-4-scout"), []map[string]any{item(nil, totals{3, 1, 0, 110, 55})}},
		{"user filter", get(acmeAdmin, "", "group_by=&user=bob"), []map[string]any{item(nil, totals{2, 0, 0, 108, 50})}},
		{"kind filter", get(acmeAdmin, "", "group_by=&kind=image"), []map[string]any{item(nil, totals{1, 0, 1, 0, 0})}},
		{"filters together", get(acmeAdmin, "", "group_by=&user=alice&alias=lm-4-scout&kind=chat"), []map[string]any{item(nil, totals{1, 0, 0, 10, 5})}},
		{"a filter that matches nothing", get(acmeAdmin, "", "alias=lm-unknown"), []map[string]any{}},
	})
}

func TestListRanges(t *testing.T) {
	e := newEnv(t, usage.Config{})
	e.record(seed...)
	total := func(q string, n, failed, in, out float64) listCase {
		items := []map[string]any{}
		if n > 0 {
			items = append(items, item(nil, totals{n, failed, 0, in, out}))
		}
		return listCase{q, get(acmeAdmin, "", "group_by=&kind=chat&"+q), items}
	}
	e.runList(t, []listCase{
		// A date to is the end of its day.
		total("from=2025-03-09&to=2025-03-09", 2, 1, 100, 50),
		// from is included, to excluded.
		total("from=2025-03-09T09:00:00Z&to=2025-03-10T10:00:00Z", 2, 1, 100, 50),
		total("from=2025-03-09T09:00:00.000000001Z&to=2025-03-10T10:00:00.000000001Z", 2, 1, 10, 5),
		total("from=2025-03-09T10:00:00%2B01:00&to=2025-03-09T10:00:01%2B01:00", 1, 0, 100, 50),
		total("from=2025-03-10", 2, 0, 30, 12),
		// Beyond the default 30 days.
		total("from=2025-01-01", 5, 1, 1130, 1062),
		// Without from, 30 days before to: from 2025-02-07.
		total("to=2025-03-08", 0, 0, 0, 0),
		total("to=2025-03-09T23:59:59.999999999Z", 1, 0, 100, 50),
		total("from=1970-01-01&to=2025-02-01T00:00:00.000000001Z", 1, 0, 1000, 1000),
		total("from=2025-03-11&to=2200-01-01", 0, 0, 0, 0),
	})
}

func TestListVisibility(t *testing.T) {
	e := newEnv(t, usage.Config{})
	e.record(seed...)
	e.runList(t, []listCase{
		{"tenant admin without GW-User-Id: the tenant", get(acmeAdmin, "", "group_by=user"), []map[string]any{noUser, alice, bob}},
		{"tenant admin with GW-User-Id: that user", get(acmeAdmin, "alice", "group_by=user"), []map[string]any{alice}},
		{"member: its own user", get(acmeMember, "bob", "group_by=user"), []map[string]any{bob}},
		{"member naming itself", get(acmeMember, "bob", "group_by=user&user=bob"), []map[string]any{bob}},
		{"member naming another user: nothing", get(acmeMember, "bob", "group_by=user&user=alice"), []map[string]any{}},
		{"a user without records", get(acmeMember, "dave", ""), []map[string]any{}},
		{"another tenant", get(globexAdmin, "", "group_by=user"), []map[string]any{
			item(k("user", "carol"), totals{1, 0, 0, 3, 4}),
		}},
		{"another tenant's member, same user name", get(testkit.Member(globexTenant), "alice", ""), []map[string]any{}},
	})
	e.Run(t, "member without GW-User-Id", func(t *testing.T) {
		e.Fails(get(acmeMember, "", ""), testkit.WantError(errcat.MissingField, "headers.gw-user-id"))
	})
}

func TestListPages(t *testing.T) {
	e := newEnv(t, usage.Config{})
	e.record(seed...)
	page := func(q string) (data []any, limit, offset float64, more bool) {
		list := e.OK(get(acmeAdmin, "", "group_by=alias&"+q))
		return testkit.Data(list), testkit.Field(list, "limit").(float64), testkit.Field(list, "offset").(float64),
			testkit.Field(list, "has_more").(bool)
	}
	aliases := func(data []any) []string {
		var out []string
		for _, d := range data {
			out = append(out, testkit.Field(d, "alias").(string))
		}
		return out
	}
	for _, tc := range []struct {
		q             string
		want          []string
		limit, offset float64
		more          bool
	}{
		{"", []string{"lm-4-scout", "lm-4-scout-cloudA", "lm-embed", "lm-image"}, 50, 0, false},
		{"limit=2", []string{"lm-4-scout", "lm-4-scout-cloudA"}, 2, 0, true},
		{"limit=2&offset=2", []string{"lm-embed", "lm-image"}, 2, 2, false},
		{"limit=3&offset=2", []string{"lm-embed", "lm-image"}, 3, 2, false},
		{"limit=1&offset=2", []string{"lm-embed"}, 1, 2, true},
		{"offset=4", nil, 50, 4, false},
		{"offset=100&limit=500", nil, 500, 100, false},
	} {
		data, limit, offset, more := page(tc.q)
		testkit.Diff(t, tc.q+" aliases", tc.want, aliases(data))
		if data == nil {
			t.Errorf("%s: data is not an array", tc.q)
		}
		if limit != tc.limit || offset != tc.offset || more != tc.more {
			t.Errorf("%s: limit %v offset %v has_more %v, want %v %v %v", tc.q, limit, offset, more, tc.limit, tc.offset, tc.more)
		}
	}
}

// TestListAnswer pins the bytes of an answer: the list's members, the
// group's keys in their order and a null user.
func TestListAnswer(t *testing.T) {
	e := newEnv(t, usage.Config{})
	e.record(seed...)
	w := testkit.Serve(t, e.H, get(acmeAdmin, "", "group_by=user,day&limit=1"))
	want := `{"object":"list","data":[{"day":"2025-03-09","user":null,"requests":1,"failed_requests":1,` +
		`"requests_without_usage":0,"input_tokens":0,"output_tokens":0,"total_tokens":0}],"limit":1,"offset":0,"has_more":true}` + "\n"
	if w.Code != 200 || w.Body.String() != want {
		t.Errorf("answer %d %s\nwant %s", w.Code, w.Body, want)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestListBadParameters(t *testing.T) {
	e := newEnv(t, usage.Config{})
	for _, tc := range []struct{ query, param string }{
		{"from=yesterday", "query.from"},
		{"from=", "query.from"},
		{"from=2025-03-01T12:00:00", "query.from"}, // no zone
		{"to=2025-13-01", "query.to"},
		{"from=1969-12-31", "query.from"},
		{"to=2200-01-01T00:00:00.000000001Z", "query.to"},
		{"from=2025-03-11", "query.from"}, // after the default to, now
		{"from=2025-03-05&to=2025-03-04", "query.from"},
		{"from=2025-03-05T00:00:00Z&to=2025-03-05T00:00:00Z", "query.from"},
		{"group_by=model", "query.group_by"},
		{"group_by=day,day", "query.group_by"},
		{"group_by=day,", "query.group_by"},
		{"group_by=DAY", "query.group_by"},
		{"kind=audio", "query.kind"},
		{"kind=", "query.kind"},
		{"limit=0", "query.limit"},
		{"limit=501", "query.limit"},
		{"offset=-1", "query.offset"},
	} {
		e.Run(t, tc.query, func(t *testing.T) {
			e.Fails(get(acmeAdmin, "", tc.query), testkit.WantError(errcat.InvalidField, tc.param))
		})
	}
}

func TestListStoreFails(t *testing.T) {
	e := newEnv(t, usage.Config{})
	e.record(seed...)
	e.st.FailNext(errors.New("disk on fire"))
	e.Fails(get(acmeAdmin, "", ""), testkit.WantError(errcat.StorageError, ""))
}
