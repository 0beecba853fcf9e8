package responses_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/responses"
	"github.com/chatgw/gateway/store"
	"github.com/google/go-cmp/cmp"
)

// outputIDs returns the ids of the output items of a response object.
func outputIDs(r map[string]any) []string {
	var ids []string
	for _, it := range r["output"].([]any) {
		ids = append(ids, it.(map[string]any)["id"].(string))
	}
	return ids
}

// TestPreviousResponseChain: a response continues from the stored input and
// output items of its chain, oldest first, without the earlier
// instructions; GET answers the stored response as it was answered, and
// input_items its own input items only.
func TestPreviousResponseChain(t *testing.T) {
	e := newEnv(t)
	e.up.Add(testkit.JSON(testkit.Completion(`{"role":"assistant","content":"Paris."}`, "stop")),
		testkit.JSON(testkit.Completion(`{"role":"assistant","content":"About 2 million."}`, "stop")),
		testkit.JSON(testkit.Completion(`{"role":"assistant","content":"Yes."}`, "stop")))
	r1 := e.create(t, call{body: `{"model":"lm-4-scout","instructions":"Be brief.","input":"Capital of France?"}`})
	r2 := e.create(t, call{body: `{"model":"lm-4-scout","instructions":"Answer in English.","previous_response_id":"` + r1["id"].(string) + `",
		"input":[{"role":"user","content":"Population?"}]}`})
	w := e.serve(t, call{body: `{"model":"lm-4-scout","previous_response_id":"` + r2["id"].(string) + `","input":"Sure?","stream":true}`})
	if w.Code != http.StatusOK {
		t.Fatalf("third turn: %d %s", w.Code, w.Body)
	}
	testkit.Golden(t, "chain_upstream.golden", e.up.Last(t), *update)

	got := e.serve(t, call{method: "GET", path: "/v1/responses/" + r2["id"].(string)})
	var stored map[string]any
	testkit.Decode(t, got, http.StatusOK, &stored)
	if diff := cmp.Diff(r2, stored); diff != "" {
		t.Errorf("GET mismatch (-answered +stored):\n%s", diff)
	}
	validate(t, "Response", got.Body.String())
	if stored["previous_response_id"] != r1["id"] {
		t.Errorf("previous_response_id %v, want %v", stored["previous_response_id"], r1["id"])
	}

	list := e.serve(t, call{method: "GET", path: "/v1/responses/" + r2["id"].(string) + "/input_items"})
	testkit.Golden(t, "input_items.golden", testkit.Indent(t, list), *update)
	validate(t, "ResponseItemList", list.Body.String())
}

// TestStreamedResponseStored: a streamed response is stored whole, as
// response.completed carried it.
func TestStreamedResponseStored(t *testing.T) {
	e := newEnv(t)
	e.up.Add(testkit.Stream(testkit.Transcript(testkit.Chunk(`{"content":"Hel"}`, ""), testkit.Chunk(`{"content":"lo"}`, "stop"))))
	w := e.serve(t, call{body: `{"model":"lm-4-scout","input":"hi","stream":true}`})
	evs := validateStream(t, w.Body.String())
	var done struct {
		Response map[string]any `json:"response"`
	}
	if err := json.Unmarshal([]byte(evs[len(evs)-1].Data), &done); err != nil || done.Response["status"] != "completed" {
		t.Fatalf("last event %s: want response.completed", evs[len(evs)-1].Data)
	}
	got := e.serve(t, call{method: "GET", path: "/v1/responses/" + done.Response["id"].(string)})
	var stored map[string]any
	testkit.Decode(t, got, http.StatusOK, &stored)
	if diff := cmp.Diff(done.Response, stored); diff != "" {
		t.Errorf("stored response mismatch (-streamed +stored):\n%s", diff)
	}
}

// TestItemReferenceToolRoundTrip: a function call over two turns as the
// Vercel AI SDK sends it with store on: the earlier items as
// item_reference items, the tool's answer as a function_call_output. The
// upstream gets the user message, the assistant's tool call and the tool
// message as chat completions has them.
func TestItemReferenceToolRoundTrip(t *testing.T) {
	e := newEnv(t)
	e.up.Add(testkit.JSON(testkit.Completion(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_w1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`, "tool_calls")),
		testkit.JSON(testkit.Completion(`{"role":"assistant","content":"It is sunny in Paris."}`, "stop")))
	tools := `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":false}]`
	r1 := e.create(t, call{body: `{"model":"lm-4-scout","input":[{"role":"user","content":[{"type":"input_text","text":"Weather in Paris?"}]}],` + tools + `}`})
	out := r1["output"].([]any)
	call1 := out[0].(map[string]any)
	if call1["type"] != "function_call" || call1["call_id"] != "call_w1" {
		t.Fatalf("first turn output %v, want a function_call", out)
	}
	items := e.serve(t, call{method: "GET", path: "/v1/responses/" + r1["id"].(string) + "/input_items"})
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	testkit.Decode(t, items, http.StatusOK, &list)
	second := `{"model":"lm-4-scout","input":[{"type":"item_reference","id":"` + list.Data[0].ID + `"},{"type":"item_reference","id":"` + call1["id"].(string) + `"},` +
		`{"type":"function_call_output","call_id":"call_w1","output":"{\"sky\":\"sunny\"}"}],` + tools + `}`
	r2 := e.create(t, call{body: second})
	testkit.Golden(t, "item_reference_upstream.golden", e.up.Last(t), *update)
	if text := r2["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]; text != "It is sunny in Paris." {
		t.Errorf("second turn text %v", text)
	}
}

// TestScoping: a stored response, its items and its chain are found only by
// its tenant and its user (none when it was stored without GW-User-Id);
// every other caller gets 404 response_not_found, as for an unknown id.
func TestScoping(t *testing.T) {
	e := newEnv(t)
	r := e.create(t, call{body: `{"model":"lm-4-scout","input":"hi"}`, user: "u1"})
	id, msgID := r["id"].(string), outputIDs(r)[0]
	if w := e.serve(t, call{method: "GET", path: "/v1/responses/" + id, user: "u1"}); w.Code != http.StatusOK {
		t.Fatalf("owner's GET: %d %s", w.Code, w.Body)
	}
	for _, who := range []call{{user: "u2"}, {}, {tenant: "other", user: "u1"}} {
		for _, c := range []call{
			{method: "GET", path: "/v1/responses/" + id},
			{method: "GET", path: "/v1/responses/" + id + "/input_items"},
			{method: "DELETE", path: "/v1/responses/" + id},
		} {
			c.user, c.tenant = who.user, who.tenant
			testkit.CheckError(t, e.serve(t, c), testkit.WantError(errcat.ResponseNotFound, "response_id"))
		}
		c := call{body: `{"model":"lm-4-scout","input":"more","previous_response_id":"` + id + `"}`, user: who.user, tenant: who.tenant}
		testkit.CheckError(t, e.serve(t, c), testkit.WantError(errcat.ResponseNotFound, "previous_response_id"))
		c.body = `{"model":"lm-4-scout","input":[{"type":"item_reference","id":"` + msgID + `"}]}`
		testkit.CheckError(t, e.serve(t, c), testkit.WantError(errcat.ResponseNotFound, "input[0].id"))
	}
	testkit.CheckError(t, e.serve(t, call{method: "GET", path: "/v1/responses/" + strings.Repeat("x", 300), user: "u1"}),
		testkit.WantError(errcat.ResponseNotFound, "response_id"))
	for _, q := range []struct{ query, param string }{{"?stream=true", "query.stream"}, {"?starting_after=3", "query.starting_after"}, {"?include[]=x", "query.include"}} {
		testkit.CheckError(t, e.serve(t, call{method: "GET", path: "/v1/responses/" + id + q.query, user: "u1"}), testkit.WantError(errcat.InvalidField, q.param))
	}
	if w := e.serve(t, call{method: "GET", path: "/v1/responses/" + id + "?stream=false", user: "u1"}); w.Code != http.StatusOK {
		t.Errorf("GET ?stream=false: %d %s", w.Code, w.Body)
	}
}

// TestDelete: DELETE answers OpenAI's deletion object; the response and its
// items are gone (404 for GET, DELETE and item_reference); a chain through
// it stops there.
func TestDelete(t *testing.T) {
	e := newEnv(t)
	r1 := e.create(t, call{body: `{"model":"lm-4-scout","input":"first"}`})
	r2 := e.create(t, call{body: `{"model":"lm-4-scout","input":"second","previous_response_id":"` + r1["id"].(string) + `"}`})
	path := "/v1/responses/" + r1["id"].(string)
	var del map[string]any
	testkit.Decode(t, e.serve(t, call{method: "DELETE", path: path}), http.StatusOK, &del)
	if diff := cmp.Diff(map[string]any{"id": r1["id"], "object": "response", "deleted": true}, del); diff != "" {
		t.Errorf("DELETE answer mismatch (-want +got):\n%s", diff)
	}
	testkit.CheckError(t, e.serve(t, call{method: "GET", path: path}), testkit.WantError(errcat.ResponseNotFound, "response_id"))
	testkit.CheckError(t, e.serve(t, call{method: "DELETE", path: path}), testkit.WantError(errcat.ResponseNotFound, "response_id"))
	testkit.CheckError(t, e.serve(t, call{body: `{"model":"lm-4-scout","input":[{"type":"item_reference","id":"` + outputIDs(r1)[0] + `"}]}`}),
		testkit.WantError(errcat.ResponseNotFound, "input[0].id"))
	e.create(t, call{body: `{"model":"lm-4-scout","input":"third","previous_response_id":"` + r2["id"].(string) + `"}`})
	var sent struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	json.Unmarshal([]byte(e.up.Last(t)), &sent)
	if len(sent.Messages) != 3 || sent.Messages[0].Content != "second" {
		t.Errorf("messages after the deletion %+v, want second, its answer, third", sent.Messages)
	}
}

// TestInputItemsPaging: input_items pages as OpenAI documents it: newest
// first by default, limit (1 to 100, default 20), order, after.
func TestInputItemsPaging(t *testing.T) {
	e := newEnv(t)
	r := e.create(t, call{body: `{"model":"lm-4-scout","input":[{"role":"user","content":"a","id":"m1"},{"role":"user","content":"b","id":"m2"},
		{"role":"user","content":"c","id":"m3"},{"role":"user","content":"d","id":"m4"},{"role":"user","content":"e","id":"m5"}]}`})
	path := "/v1/responses/" + r["id"].(string) + "/input_items"
	type list struct {
		Data    []struct{ ID string } `json:"data"`
		FirstID string                `json:"first_id"`
		LastID  string                `json:"last_id"`
		HasMore bool                  `json:"has_more"`
		Object  string                `json:"object"`
	}
	ids := func(l list) string {
		var s []string
		for _, d := range l.Data {
			s = append(s, d.ID)
		}
		return strings.Join(s, ",") + " " + l.FirstID + "-" + l.LastID + " " + map[bool]string{true: "more", false: "end"}[l.HasMore]
	}
	for _, tc := range []struct{ query, want string }{
		{"", "m5,m4,m3,m2,m1 m5-m1 end"},
		{"?limit=2", "m5,m4 m5-m4 more"},
		{"?limit=2&after=m4", "m3,m2 m3-m2 more"},
		{"?order=asc&after=m3", "m4,m5 m4-m5 end"},
		{"?order=asc&limit=5", "m1,m2,m3,m4,m5 m1-m5 end"},
		{"?after=m1", " - end"},
	} {
		w := e.serve(t, call{method: "GET", path: path + tc.query})
		var l list
		testkit.Decode(t, w, http.StatusOK, &l)
		if got := ids(l); got != tc.want || l.Object != "list" {
			t.Errorf("%s: %s %q, want %s", tc.query, l.Object, got, tc.want)
		}
		validate(t, "ResponseItemList", w.Body.String())
	}
	for _, tc := range []struct{ query, param string }{
		{"?limit=0", "query.limit"}, {"?limit=101", "query.limit"}, {"?limit=x", "query.limit"},
		{"?order=up", "query.order"}, {"?after=nope", "query.after"}, {"?include[]=x", "query.include"},
	} {
		testkit.CheckError(t, e.serve(t, call{method: "GET", path: path + tc.query}), testkit.WantError(errcat.InvalidField, tc.param))
	}
}

// countKeys counts the keys of the resp/... buckets.
func countKeys(t *testing.T, st store.Store) int {
	t.Helper()
	n := 0
	err := st.View(context.Background(), func(tx store.Tx) error {
		n = 0
		for _, b := range []string{"resp/responses", "resp/items"} {
			if err := tx.Scan([]byte(b), nil, false, func(_, _ []byte) (bool, error) { n++; return true, nil }); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStoreFalse: store false keeps nothing, and the response says so.
func TestStoreFalse(t *testing.T) {
	e := newEnv(t)
	r := e.create(t, call{body: `{"model":"lm-4-scout","input":"hi","store":false}`})
	if r["store"] != false {
		t.Errorf("store %v, want false", r["store"])
	}
	e.up.Add(testkit.JSON(testkit.Completion(`{"role":"assistant","content":"Hi"}`, "stop")),
		testkit.Stream(testkit.Transcript(testkit.Chunk(`{"content":"Hi"}`, "stop"))))
	w := e.serve(t, call{body: `{"model":"lm-4-scout","input":"hi","store":false,"stream":true}`})
	validateStream(t, w.Body.String())
	if n := countKeys(t, e.st); n != 0 {
		t.Errorf("%d keys stored, want none", n)
	}
	testkit.CheckError(t, e.serve(t, call{method: "GET", path: "/v1/responses/" + r["id"].(string)}), testkit.WantError(errcat.ResponseNotFound, "response_id"))
}

// TestStoreFailure: a store that cannot write answers 500 storage_error
// (JSON), or ends the stream with response.failed and an error event
// storage_error; nothing is stored.
func TestStoreFailure(t *testing.T) {
	e := newEnv(t)
	e.st.Cut.Store(true)
	w := e.serve(t, call{body: `{"model":"lm-4-scout","input":"hi"}`})
	testkit.CheckError(t, w, testkit.WantError(errcat.StorageError, ""))
	e.up.Add(testkit.Stream(testkit.Transcript(testkit.Chunk(`{"content":"Hi"}`, "stop"))))
	w = e.serve(t, call{body: `{"model":"lm-4-scout","input":"hi","stream":true}`})
	evs := validateStream(t, w.Body.String())
	if n := len(evs); n < 2 || evs[n-2].Type != "response.failed" || evs[n-1].Type != "error" || !strings.Contains(evs[n-1].Data, `"code":"storage_error"`) ||
		!strings.Contains(evs[n-2].Data, `"status":"failed","completed_at":null`) {
		t.Errorf("stream %s: want response.failed (not completed), then error storage_error", w.Body)
	}
	e.st.Cut.Store(false)
	if n := countKeys(t, e.st); n != 0 {
		t.Errorf("%d keys stored, want none", n)
	}
}

// TestChainBound: a chain longer than MaxChain responses answers 400
// invalid_field previous_response_id instead of being cut silently.
func TestChainBound(t *testing.T) {
	e := newEnv(t, func(c *responses.Config) { c.MaxChain = 2 })
	prev := ""
	for i := range 3 {
		body := `{"model":"lm-4-scout","input":"turn"`
		if prev != "" {
			body += `,"previous_response_id":"` + prev + `"`
		}
		r := e.create(t, call{body: body + `}`})
		if i < 2 {
			prev = r["id"].(string)
			continue
		}
		w := e.serve(t, call{body: `{"model":"lm-4-scout","input":"again","previous_response_id":"` + r["id"].(string) + `"}`})
		testkit.CheckError(t, w, testkit.WantError(errcat.InvalidField, "previous_response_id"))
	}
}
