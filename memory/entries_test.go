package memory_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/memory"
)

func TestPutEntryValidation(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		user string
		body any
		want testkit.Error
	}{
		{"ok", "alice", map[string]any{"key": "k", "value": "v", "visibility": "private"}, testkit.Error{}},
		{"ok public scope", "alice", map[string]any{"key": "k", "value": "v", "visibility": "public", "scope_id": "team"}, testkit.Error{}},
		{"no key", "alice", map[string]any{"value": "v", "visibility": "private"}, testkit.WantError(errcat.MissingField, "body.key")},
		{"null key", "alice", map[string]any{"key": nil, "value": "v", "visibility": "private"}, testkit.WantError(errcat.MissingField, "body.key")},
		{"empty key", "alice", map[string]any{"key": "", "value": "v", "visibility": "private"}, testkit.WantError(errcat.InvalidField, "body.key")},
		{"key not string", "alice", map[string]any{"key": 3, "value": "v", "visibility": "private"}, testkit.WantError(errcat.InvalidField, "body.key")},
		{"no value", "alice", map[string]any{"key": "k", "visibility": "private"}, testkit.WantError(errcat.MissingField, "body.value")},
		{"empty value", "alice", map[string]any{"key": "k", "value": "", "visibility": "private"}, testkit.WantError(errcat.InvalidField, "body.value")},
		{"value not string", "alice", map[string]any{"key": "k", "value": []int{1}, "visibility": "private"}, testkit.WantError(errcat.InvalidField, "body.value")},
		{"no visibility", "alice", map[string]any{"key": "k", "value": "v"}, testkit.WantError(errcat.MissingField, "body.visibility")},
		{"bad visibility", "alice", map[string]any{"key": "k", "value": "v", "visibility": "shared"}, testkit.WantError(errcat.InvalidField, "body.visibility")},
		{"long scope", "alice", map[string]any{"key": "k", "value": "v", "visibility": "public", "scope_id": strings.Repeat("s", 257)}, testkit.WantError(errcat.InvalidField, "body.scope_id")},
		{"unknown field", "alice", map[string]any{"key": "k", "value": "v", "visibility": "private", "ttl": 3}, testkit.WantError(errcat.InvalidField, "body.ttl")},
		{"user_id in body", "alice", map[string]any{"key": "k", "value": "v", "visibility": "private", "user_id": "bob"}, testkit.WantError(errcat.InvalidField, "body.user_id")},
		{"not json", "alice", "{", testkit.WantError(errcat.InvalidJSON, "")},
		{"no user", "", map[string]any{"key": "k", "value": "v", "visibility": "private"}, testkit.WantError(errcat.MissingField, "headers.gw-user-id")},
	}
	for _, tc := range tests {
		e.failsIn(t, tc.name, testkit.Call{Method: "POST", Target: "/v1/memory", User: tc.user, Body: tc.body}, tc.want)
	}
}

func TestPutEntryAnswer(t *testing.T) {
	e := newEnv(t)
	got := e.OK(testkit.Call{Method: "POST", Target: "/v1/memory", User: "alice", Body: map[string]any{"key": "k", "value": "v1", "visibility": "private"}})
	created := t0.Format(time.RFC3339Nano)
	testkit.Diff(t, "first write", map[string]any{"key": "k", "value": "v1", "visibility": "private", "scope_id": "default",
		"created_at": created, "updated_at": created}, got)
	e.clk.Advance(time.Minute)
	got = e.OK(testkit.Call{Method: "POST", Target: "/v1/memory", User: "alice", Body: map[string]any{"key": "k", "value": "v2", "visibility": "private"}})
	testkit.Diff(t, "upsert", map[string]any{"key": "k", "value": "v2", "visibility": "private", "scope_id": "default",
		"created_at": created, "updated_at": t0.Add(time.Minute).Format(time.RFC3339Nano)}, got)
	testkit.Diff(t, "list", []string{"k=v2/private"}, e.list("", "alice", "visibility=private"))
}

// usage returns the usage answer of a bucket.
func (e *env) usage(user, vis, scope string) map[string]any {
	e.T.Helper()
	q := url.Values{"visibility": {vis}}
	if scope != "" {
		q.Set("scope_id", scope)
	}
	return e.OK(testkit.Call{Method: "GET", Target: "/v1/memory/usage?" + q.Encode(), User: user}).(map[string]any)
}

func usageOf(used, entries int) map[string]any {
	return map[string]any{"used_bytes": float64(used), "cap_bytes": float64(memory.BucketCapBytes), "entries": float64(entries)}
}

func TestBucketCapBoundary(t *testing.T) {
	const cap = memory.BucketCapBytes
	put := func(key, value string) testkit.Call {
		return testkit.Call{Method: "POST", Target: "/v1/memory", User: "alice", Body: map[string]any{"key": key, "value": value, "visibility": "private"}}
	}
	full := testkit.WantError(errcat.MemoryBucketFull, "value")
	steps := []struct {
		name      string
		q         testkit.Call
		want      testkit.Error
		wantUsage map[string]any
		wantList  []string
	}{
		{"one byte over the cap in one entry", put("a", repeat(cap)), full, usageOf(0, 0), []string{}},
		{"exactly the cap", put("a", repeat(cap-1)), testkit.Error{}, usageOf(cap, 1), []string{"a=" + repeat(cap-1) + "/private"}},
		{"any new entry overflows", put("b", "x"), full, usageOf(cap, 1), []string{"a=" + repeat(cap-1) + "/private"}},
		{"upsert that grows by one byte keeps the old value", put("a", repeat(cap)), full, usageOf(cap, 1), []string{"a=" + repeat(cap-1) + "/private"}},
		{"upsert that shrinks", put("a", repeat(cap-11)), testkit.Error{}, usageOf(cap-10, 1), []string{"a=" + repeat(cap-11) + "/private"}},
		{"new entry up to the cap again", put("b", repeat(9)), testkit.Error{}, usageOf(cap, 2), []string{"a=" + repeat(cap-11) + "/private", "b=" + repeat(9) + "/private"}},
		{"upsert to same size", put("b", strings.Repeat("w", 9)), testkit.Error{}, usageOf(cap, 2), []string{"a=" + repeat(cap-11) + "/private", "b=" + strings.Repeat("w", 9) + "/private"}},
		{"upsert that grows", put("b", repeat(10)), full, usageOf(cap, 2), []string{"a=" + repeat(cap-11) + "/private", "b=" + strings.Repeat("w", 9) + "/private"}},
	}
	e := newEnv(t)
	for _, s := range steps {
		e.Run(t, s.name, func(t *testing.T) {
			e.Fails(s.q, s.want)
			testkit.Diff(t, "usage", s.wantUsage, e.usage("alice", "private", ""))
			testkit.Diff(t, "entries", s.wantList, e.list("", "alice", "visibility=private"))
		})
	}
}

func TestBucketCapCountsUTF8Bytes(t *testing.T) {
	e := newEnv(t)
	// "é" is 2 bytes: key 2 + value 2*8190 + 2 = 16384.
	v := strings.Repeat("é", 8190) + "xx"
	e.remember("", "alice", "kk", v, "private", "")
	testkit.Diff(t, "usage", usageOf(memory.BucketCapBytes, 1), e.usage("alice", "private", ""))
	e.Fails(testkit.Call{Method: "POST", Target: "/v1/memory", User: "alice", Body: map[string]any{"key": "kk", "value": v + "x", "visibility": "private"}},
		testkit.WantError(errcat.MemoryBucketFull, "value"))
	e.Fails(testkit.Call{Method: "POST", Target: "/v1/memory", User: "alice", Body: map[string]any{"key": "k", "value": "é", "visibility": "private"}},
		testkit.WantError(errcat.MemoryBucketFull, "value"))
}

func TestBucketsAreSeparate(t *testing.T) {
	e := newEnv(t)
	big := repeat(memory.BucketCapBytes - 1)
	// Filling alice's private default bucket leaves every other bucket empty.
	e.remember("", "alice", "a", big, "private", "")
	for _, q := range []testkit.Call{
		{User: "bob", Body: map[string]any{"key": "a", "value": big, "visibility": "private"}},
		{User: "alice", Body: map[string]any{"key": "a", "value": big, "visibility": "public"}},
		{User: "alice", Body: map[string]any{"key": "a", "value": big, "visibility": "private", "scope_id": "team"}},
		{User: "alice", Tenant: "other", Body: map[string]any{"key": "a", "value": big, "visibility": "private"}},
	} {
		q.Method, q.Target = "POST", "/v1/memory"
		e.OK(q)
	}
}

func TestPrivateIsolation(t *testing.T) {
	e := newEnv(t)
	e.remember("", "alice", "secret", "42", "private", "")
	testkit.Diff(t, "bob's private list", []string{}, e.list("", "bob", "visibility=private"))
	testkit.Diff(t, "bob's list", []string{}, e.list("", "bob", ""))
	testkit.Diff(t, "bob's usage", usageOf(0, 0), e.usage("bob", "private", ""))
	testkit.Diff(t, "bob's delete", map[string]any{"deleted": false}, e.OK(testkit.Call{Method: "DELETE", Target: "/v1/memory?visibility=private&key=secret", User: "bob"}))
	testkit.Diff(t, "alice's list", []string{"secret=42/private"}, e.list("", "alice", "visibility=private"))
}

func TestPublicSharingAndTenantIsolation(t *testing.T) {
	e := newEnv(t)
	e.remember("", "alice", "wifi", "guest", "public", "office")
	testkit.Diff(t, "bob in the scope", []string{"wifi=guest/public"},
		e.list("", "bob", "visibility=public&scope_id=office"))
	testkit.Diff(t, "bob in the default scope", []string{},
		e.list("", "bob", "visibility=public"))
	testkit.Diff(t, "other tenant", []string{},
		e.list("other", "alice", "visibility=public&scope_id=office"))
	testkit.Diff(t, "other tenant's delete", map[string]any{"deleted": false},
		e.OK(testkit.Call{Method: "DELETE", Target: "/v1/memory?visibility=public&key=wifi&scope_id=office", User: "alice", Tenant: "other"}))
	testkit.Diff(t, "bob's usage", usageOf(len("wifi")+len("guest"), 1), e.usage("bob", "public", "office"))
	testkit.Diff(t, "bob deletes", map[string]any{"deleted": true},
		e.OK(testkit.Call{Method: "DELETE", Target: "/v1/memory?visibility=public&key=wifi&scope_id=office", User: "bob"}))
	testkit.Diff(t, "alice after the delete", []string{},
		e.list("", "alice", "visibility=public&scope_id=office"))
	testkit.Diff(t, "usage after the delete", usageOf(0, 0), e.usage("alice", "public", "office"))
}

func TestListWithoutVisibility(t *testing.T) {
	e := newEnv(t)
	e.remember("", "alice", "z", "1", "private", "")
	e.remember("", "alice", "b", "2", "public", "")
	e.remember("", "alice", "a", "3", "private", "")
	e.remember("", "alice", "a", "4", "public", "")
	e.remember("", "alice", "c", "5", "private", "other")
	testkit.Diff(t, "list", []string{"a=3/private", "z=1/private", "a=4/public", "b=2/public"},
		e.list("", "alice", ""))
	testkit.Diff(t, "list of scope other", []string{"c=5/private"},
		e.list("", "alice", "scope_id=other"))
}

func TestQueryValidation(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		method, path string
		user         string
		want         testkit.Error
	}{
		{"GET", "/v1/memory?visibility=team", "alice", testkit.WantError(errcat.InvalidField, "query.visibility")},
		{"GET", "/v1/memory?scope_id=" + strings.Repeat("s", 257), "alice", testkit.WantError(errcat.InvalidField, "query.scope_id")},
		{"GET", "/v1/memory", "", testkit.WantError(errcat.MissingField, "headers.gw-user-id")},
		{"GET", "/v1/memory/usage", "alice", testkit.WantError(errcat.MissingField, "query.visibility")},
		{"GET", "/v1/memory/usage?visibility=", "alice", testkit.WantError(errcat.MissingField, "query.visibility")},
		{"GET", "/v1/memory/usage?visibility=all", "alice", testkit.WantError(errcat.InvalidField, "query.visibility")},
		{"GET", "/v1/memory/usage?visibility=private", "", testkit.WantError(errcat.MissingField, "headers.gw-user-id")},
		{"DELETE", "/v1/memory?key=k", "alice", testkit.WantError(errcat.MissingField, "query.visibility")},
		{"DELETE", "/v1/memory?visibility=private", "alice", testkit.WantError(errcat.MissingField, "query.key")},
		{"DELETE", "/v1/memory?visibility=private&key=", "alice", testkit.WantError(errcat.InvalidField, "query.key")},
		{"DELETE", "/v1/memory?visibility=x&key=k", "alice", testkit.WantError(errcat.InvalidField, "query.visibility")},
		{"DELETE", "/v1/memory?visibility=private&key=k", "", testkit.WantError(errcat.MissingField, "headers.gw-user-id")},
		{"DELETE", "/v1/memory?visibility=private&key=k", "alice", testkit.Error{}},
	}
	for _, tc := range tests {
		e.failsIn(t, tc.method+" "+tc.path, testkit.Call{Method: tc.method, Target: tc.path, User: tc.user}, tc.want)
	}
}

func TestDeleteEntryUpdatesUsage(t *testing.T) {
	e := newEnv(t)
	for _, kv := range [][2]string{{"a", "12345"}, {"bb", "1"}} {
		e.remember("", "alice", kv[0], kv[1], "private", "")
	}
	testkit.Diff(t, "usage", usageOf(9, 2), e.usage("alice", "private", ""))
	testkit.Diff(t, "delete", map[string]any{"deleted": true}, e.OK(testkit.Call{Method: "DELETE", Target: "/v1/memory?visibility=private&key=a", User: "alice"}))
	testkit.Diff(t, "usage after delete", usageOf(3, 1), e.usage("alice", "private", ""))
	testkit.Diff(t, "delete again", map[string]any{"deleted": false}, e.OK(testkit.Call{Method: "DELETE", Target: "/v1/memory?visibility=private&key=a", User: "alice"}))
	testkit.Diff(t, "delete last", map[string]any{"deleted": true}, e.OK(testkit.Call{Method: "DELETE", Target: "/v1/memory?visibility=private&key=bb", User: "alice"}))
	testkit.Diff(t, "usage when empty", usageOf(0, 0), e.usage("alice", "private", ""))
}

func TestKeysWithOddBytes(t *testing.T) {
	e := newEnv(t)
	// Keys that are prefixes of one another or hold 0x00 stay distinct.
	for _, k := range []string{"a", "a\x00", "a\x00b", "ab"} {
		e.remember("", "alice", k, "v", "private", "")
	}
	testkit.Diff(t, "list", []string{"a=v/private", "a\x00=v/private", "a\x00b=v/private", "ab=v/private"},
		e.list("", "alice", "visibility=private"))
	e.OK(testkit.Call{Method: "DELETE", Target: "/v1/memory?visibility=private&key=" + url.QueryEscape("a\x00"), User: "alice"})
	testkit.Diff(t, "list after delete", []string{"a=v/private", "a\x00b=v/private", "ab=v/private"},
		e.list("", "alice", "visibility=private"))
	// User "a" and user "a\x00..." do not see each other's buckets.
	testkit.Diff(t, "user prefix", []string{}, e.list("", "alic", ""))
}

func TestMemoryStorageError(t *testing.T) {
	e := newEnv(t)
	e.remember("", "alice", "k", "old", "private", "")
	e.failStorage(
		testkit.Call{Method: "POST", Target: "/v1/memory", User: "alice", Body: map[string]any{"key": "k", "value": "new", "visibility": "private"}},
		testkit.Call{Method: "POST", Target: "/v1/memory", User: "alice", Body: map[string]any{"key": "k2", "value": "new", "visibility": "private"}},
		testkit.Call{Method: "GET", Target: "/v1/memory", User: "alice"},
		testkit.Call{Method: "GET", Target: "/v1/memory/usage?visibility=private", User: "alice"},
		testkit.Call{Method: "DELETE", Target: "/v1/memory?visibility=private&key=k", User: "alice"},
	)
	testkit.Diff(t, "entries after failures", []string{"k=old/private"}, e.list("", "alice", ""))
	testkit.Diff(t, "usage after failures", usageOf(4, 1), e.usage("alice", "private", ""))
}

func TestRestartKeepsEverything(t *testing.T) {
	e := newEnv(t)
	e.remember("", "alice", "k", "v", "private", "")
	e.prompt("", "alice", "tenant", "T1", "")
	e.prompt("", "alice", "tenant", "T2", "")
	e.OK(testkit.Call{Method: "PUT", Target: "/v1/system-prompts/tenant/current/1", User: "alice"})

	r := newEnvOver(t, e.st, e.clk)
	testkit.Diff(t, "entries", []string{"k=v/private"}, r.list("", "alice", ""))
	testkit.Diff(t, "usage", usageOf(2, 1), r.usage("alice", "private", ""))
	testkit.Diff(t, "current prompt", "T1", testkit.Field(r.OK(testkit.Call{Method: "GET", Target: "/v1/system-prompts/tenant", User: "alice"}), "content"))
	testkit.Diff(t, "next version", float64(3), testkit.Field(r.OK(testkit.Call{Method: "PUT", Target: "/v1/system-prompts/tenant", User: "alice", Body: map[string]any{"content": "T3"}}), "n"))
}

// TestUsageMatchesEntries checks the usage counter against the entries after
// concurrent random upserts and deletes, and that the cap always held.
func TestUsageMatchesEntries(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(g), 1))
			for range 40 {
				key := fmt.Sprintf("k%d", rnd.IntN(12))
				q := testkit.Call{Method: "DELETE", Target: "/v1/memory?visibility=public&key=" + key, User: fmt.Sprintf("user%d", g)}
				if rnd.IntN(4) != 0 {
					q.Method, q.Target = "POST", "/v1/memory"
					q.Body = map[string]any{"key": key, "value": repeat(1 + rnd.IntN(4000)), "visibility": "public"}
				}
				r, err := q.Request().Build()
				if err != nil {
					t.Error(err)
					return
				}
				w := httptest.NewRecorder()
				e.H.ServeHTTP(w, r)
				if w.Code != http.StatusOK && w.Code != http.StatusConflict {
					t.Errorf("%s: %d %s", r.Method, w.Code, w.Body)
				}
			}
		}()
	}
	wg.Wait()
	list := e.OK(testkit.Call{Method: "GET", Target: "/v1/memory?visibility=public", User: "alice"})
	used, n := 0, 0
	for _, d := range testkit.Field(list, "data").([]any) {
		used += len(testkit.Field(d, "key").(string)) + len(testkit.Field(d, "value").(string))
		n++
	}
	if used > memory.BucketCapBytes {
		t.Errorf("bucket holds %d bytes, over the cap", used)
	}
	testkit.Diff(t, "usage", usageOf(used, n), e.usage("alice", "public", ""))
}
