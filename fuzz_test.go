package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
)

// The fuzz targets of this file send arbitrary bodies, query strings and header
// values to the gateway's request-taking routes and check the project rule: bad
// input gets a catalogued error envelope with the catalog's status and type and
// a sensible param, never a panic, a 5xx or an uncatalogued code, and a failing
// request changes nothing stored.
//
// For every answer they check:
//   - the status is 2xx or 4xx; a 4xx is the envelope
//     {"error":{"type","code","message","param"},"gw_code"} of a catalogued
//     code; missing_field and invalid_field name a param (a location such as
//     body.x, query.x, headers.x on the gateway's own schemas, the OpenAI
//     field name on the /v1 passthroughs; a headers.x param names a header the
//     request sent); a code whose catalog row names a param carries exactly it;
//   - no 5xx at all: every model backend (local, cloudA, cloudB) is the same
//     upstreamtest fake, which answers every call at once and normally, so a
//     storage or internal error is a defect and an upstream_* code (or
//     upstream_bad_request) means the gateway sent something no backend could
//     take; an answer slower than slowAnswer is a hang;
//   - every JSON body sent upstream is one object with a string model and
//     neither a top-level user_id nor attachments;
//   - a 2xx JSON answer is valid JSON, a stream ends with data: [DONE] and
//     not with gw.error;
//   - the stored conversations "keep" (of u1) and "theirs" (of u2) are
//     unchanged by a failing request (and by any request but a successful
//     chat of their owner, which only appends), and a failing request commits
//     no store write at all.
//
// Each input runs in a tenant of its own, with its own token: what a tenant
// holds (conversations, memory, prompts, configuration, quotas, confirm
// tokens, images, /a1 sessions, indices and runs) is fresh for every input,
// so a failure reproduces from its input alone unless tenants leak into each
// other, itself a failure to look for. A gateway serves up to fuzzTenants
// inputs, because gateway.New costs more than most inputs (it builds the API
// docs); one that saw a failure serves no further input, and FUZZFRESH=1 in
// the environment gives every input a gateway of its own. The seeds
// (and the regression inputs in testdata/fuzz) run as unit tests in the
// default go test; with -fuzz the corpus also gets fieldVariants of every
// seed. Every route of the gateway's table has a row of seeds in fuzzRoutes
// (TestFuzzRoutesCoverTheRouteTable). Fuzz with, for example:
//
//	go test -run '^$' -fuzz '^FuzzRoutes$' -fuzztime 60s -fuzzminimizetime 5s .
//	go test -run '^$' -fuzz '^FuzzC1ChatStored$' -fuzztime 60s -fuzzminimizetime 5s .
//
// FUZZLOG=1 in the environment sends the gateway's log lines to stderr.

// fuzzRoute is one route the fuzz targets send to.
type fuzzRoute struct {
	method, path string
	// own: a schema of the gateway's own (/c1, memory, prompts, config, tools),
	// whose missing_field and invalid_field params are locations (body.x,
	// query.x, headers.x); elsewhere (the /v1 passthroughs) they are OpenAI
	// field names.
	own bool
	// anthropic: a route of Anthropic's Messages API, which answers errors in
	// Anthropic's shape and streams Anthropic's events (package anthropic).
	anthropic bool
	// responses: a route of OpenAI's Responses API, which streams the
	// Responses events and names the Responses API's fields in its params
	// (package responses).
	responses bool
	// header receives the fuzzed header value, when it is not empty.
	header string
	// pathParam: the fuzzed query string is path-escaped into the last path
	// segment instead of being the query.
	pathParam bool
	// multipart: the body is sent as multipart/form-data with fuzzBoundary.
	multipart bool
	// seeds are bodies (or, for GET routes, query strings) of the corpus.
	seeds []string

	// The fields below serve the /a1 rows (zero on the older ones).

	// suffix follows the fuzzed path segment of a pathParam route; in the
	// segment, the placeholders of a1Placeholders stand for the ids the setup
	// created.
	suffix string
	// segs: on a pathParam route that takes a body, the segment seeds (seeds
	// are then bodies): each body with segs[0], each segment with seeds[0].
	segs []string
	// idParam is a path parameter that invalid_field may name instead of a
	// location (the index id of a RAG write; docs/decisions.md "/a1 RAG").
	idParam string
	// a1 says what the input's gateway holds besides the conversations.
	a1 a1Need
	// mutable returns the prefixes of the a1State keys a successful request
	// may change, given the path segment (placeholders replaced) and the user.
	mutable func(seg, user string) []string
}

// a1Need is what a1Setup stores before an /a1 input.
type a1Need uint8

const (
	// needRAG: index "docs" of two documents ("intro", "guide").
	needRAG a1Need = 1 << iota
	// needSessions: sessions of agent helper: "@old" (u1, archived by a
	// compaction), its live successor "@sess" (u1, 3 messages,
	// compact_keep_last_n 1), "@usess" (u2, empty).
	needSessions
	// needRuns: finished runs "@run" (u1) and "@urun" (u2).
	needRuns
	// needImages: a generated image "@img" (of the tenant; images have no
	// owner).
	needImages
)

// a1Placeholders are replaced in the fuzzed path segment of an /a1 row.
var a1Placeholders = []string{"@sess", "@old", "@usess", "@run", "@urun", "@img"}

// a1Agents are the agent files of the fuzz targets' WithAgentsDir.
var a1Agents = map[string]string{
	"helper.json":    `{"name":"helper","description":"Helps.","model":"lm-4-scout-local","system_prompt":"Be brief.","tools":["current_time"]}`,
	"librarian.json": `{"name":"librarian","model":"lm-4-scout","system_prompt":"Look it up.","tools":["rag_search","agent_call"],"rag_index":"docs","max_tool_rounds":2}`,
}

// a1Repo is on the tenant's coding_agent_repos.
const a1Repo = "https://github.com/acme/app"

func mutableAlways(prefixes ...string) func(string, string) []string {
	return func(string, string) []string { return prefixes }
}

// mutableRAG: a write creates its index (the list changes) and may change
// the documents of "docs" when it names it.
func mutableRAG(seg, _ string) []string {
	if seg == "docs" {
		return []string{"rag/"}
	}
	return []string{"rag/indices"}
}

// mutableSessions: a session write changes the caller's sessions only.
func mutableSessions(_, user string) []string { return []string{"sess/" + user + "/"} }

const fuzzBoundary = "fuzzboundary"

// slowAnswer is the longest a request may take: the fake backend answers at
// once, so a slower answer is a hang.
const slowAnswer = 10 * time.Second

// fuzzRoutes are indexed by the fuzz input's route byte (modulo their count).
var fuzzRoutes = []fuzzRoute{
	{method: "POST", path: "/v1/chat/completions", header: "GW-Cloud-Consent", seeds: []string{
		`{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"lm-4-scout-local","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"lm-reasoner","max_tokens":5,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"x"}]}`,
		`{"model":"lm-vision","messages":[{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}}]}]}`,
		`{"model":"lm-4-scout","messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{}}}]}`,
		`{"model":"lm-4-scout","messages":[{"role":"user","content":"summarise"}],"attachments":[{"kind":"document","doc_name":"plan.txt","content":"step 1"},{"kind":"image","url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}]}`,
		`{"model":"lm-4-scout-cloudB","temperature":0.5,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}],"x_vendor":{"k":[1,2.50,null]}}`,
	}},
	{method: "POST", path: "/c1/chat", own: true, header: "X-Conversation-Id", seeds: []string{
		`{"message":"hi"}`,
		`{"conversation_id":"keep","message":"next","stream":false}`,
		`{"conversation_id":"c1","message":"one","system_prompt":"sys","model":"lm-4-scout-local"}`,
		`{"conversation_id":"c1","message":"three","max_tokens":50,"temperature":0.5,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"auto","response_format":{"type":"json_object"}}`,
		`{"message":"hi","images":[{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==","detail":"low"}],"provider":"cloudA"}`,
		`{"message":[{"type":"text","text":"hi"}],"keep_last_turns":0,"ephemeral":true,"stream":false}`,
		`{"conversation_id":"keep","message":"summarise","stream":false,"attachments":[{"kind":"document","doc_name":"plan.txt","content":"step 1"}]}`,
	}},
	{method: "POST", path: "/v1/embeddings", seeds: []string{
		`{"model":"lm-embed","input":"a"}`,
		`{"model":"lm-embed","input":["a","b"]}`,
		`{"model":"lm-embed","input":[1,2,3],"encoding_format":"float"}`,
		`{"model":"lm-embed","input":[[1,2],[3]]}`,
	}},
	{method: "POST", path: "/v1/images/generations", seeds: []string{
		`{"prompt":"a cat"}`,
		`{"model":"lm-image","prompt":"a cat","size":"256x256","n":2,"ttl_hours":3,"response_format":"b64_json","user":"u-1"}`,
		`{"prompt":"p","ttl_hours":168}`,
	}},
	{method: "POST", path: "/v1/audio/transcriptions", multipart: true, seeds: []string{
		"--fuzzboundary\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nlm-transcribe\r\n--fuzzboundary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp3\"\r\nContent-Type: audio/mpeg\r\n\r\nID3\x00\x01\r\n--fuzzboundary--\r\n",
	}},
	{method: "POST", path: "/v1/tools/execute", own: true, header: "GW-User-Id", seeds: []string{
		`{"inspect":true}`,
		`{"name":"current_time","arguments":{"timezone":"Europe/Paris"}}`,
		`{"name":"current_time","arguments":"{\"timezone\":\"UTC\"}"}`,
		`{"name":"memory_remember","arguments":{"key":"k","value":"v","visibility":"private"}}`,
		`{"name":"memory_remember","arguments":{"key":"k","value":"v","visibility":"public"}}`,
		`{"name":"memory_forget","arguments":{"key":"name","visibility":"private"}}`,
	}},
	{method: "POST", path: "/v1/memory", own: true, header: "GW-User-Id", seeds: []string{
		`{"key":"k","value":"v","visibility":"private"}`,
		`{"key":"k","value":"v","visibility":"public","scope_id":"team"}`,
	}},
	{method: "PUT", path: "/v1/system-prompts/tenant", own: true, header: "GW-User-Id", seeds: []string{
		`{"content":"Be kind."}`,
	}},
	{method: "PUT", path: "/v1/system-prompts/scope", own: true, header: "GW-User-Id", seeds: []string{
		`{"content":"Team rules.","scope_id":"team"}`,
		`{"content":"Default rules."}`,
	}},
	{method: "PUT", path: "/v1/system-prompts/user", own: true, header: "GW-User-Id", seeds: []string{
		`{"content":"Call me Ada."}`,
	}},
	{method: "PUT", path: "/v1/tenant/config", own: true, seeds: []string{
		`{"key":"default_model","value":"lm-4-scout-local"}`,
		`{"key":"image_gen_rate_per_hour","value":50}`,
		`{"key":"compact_keep_last_n","value":null}`,
		`{"key":"image_max_ttl_hours","value":720}`,
	}},
	{method: "GET", path: "/c1/conversations", own: true, header: "GW-User-Id", seeds: []string{
		"limit=1&offset=0", "limit=500", "offset=3", "limit=0",
	}},
	{method: "GET", path: "/v1/memory", own: true, header: "GW-User-Id", seeds: []string{
		"visibility=private", "visibility=public&scope_id=team", "",
	}},
	{method: "GET", path: "/v1/memory/usage", own: true, header: "GW-User-Id", seeds: []string{
		"visibility=private", "visibility=public&scope_id=default",
	}},
	{method: "DELETE", path: "/v1/memory", own: true, header: "GW-User-Id", seeds: []string{
		"visibility=private&key=name", "visibility=public&key=k&scope_id=team",
	}},
	{method: "GET", path: "/v1/system-prompts/scope/versions", own: true, header: "GW-User-Id", seeds: []string{
		"scope_id=team", "",
	}},
	{method: "GET", path: "/c1/conversations/", own: true, pathParam: true, header: "GW-User-Id", seeds: []string{
		"keep", "theirs", "nope",
	}},
	{method: "GET", path: "/v1/system-prompts/scope", own: true, header: "GW-User-Id", seeds: []string{
		"scope_id=team", "",
	}},
	{method: "GET", path: "/v1/system-prompts/user", own: true, header: "GW-User-Id", seeds: []string{""}},
	{method: "DELETE", path: "/v1/system-prompts/scope", own: true, header: "GW-User-Id", seeds: []string{
		"scope_id=team", "",
	}},
	{method: "DELETE", path: "/v1/system-prompts/user", own: true, header: "GW-User-Id", seeds: []string{""}},
	{method: "DELETE", path: "/c1/conversations/", own: true, pathParam: true, header: "GW-User-Id", seeds: []string{
		"keep", "theirs", "nope",
	}},
	{method: "GET", path: "/v1/tenant/config", own: true, seeds: []string{""}},
	{method: "PUT", path: "/v1/system-prompts/user/current/", own: true, pathParam: true, seeds: []string{
		"1", "2", "0", "x",
	}},
	{method: "DELETE", path: "/v1/system-prompts/user/v/", own: true, pathParam: true, seeds: []string{
		"1", "2", "18446744073709551616",
	}},

	// Public: no bearer needed (the fuzz targets send one anyway).
	{method: "GET", path: "/", seeds: []string{""}},
	{method: "GET", path: "/healthz", seeds: []string{""}},
	{method: "GET", path: "/readyz", seeds: []string{""}},
	{method: "GET", path: "/errors", seeds: []string{""}},
	{method: "GET", path: "/docs/", pathParam: true, seeds: []string{"errors", "errors/", "nope", "api/", "api", "api/swagger-ui.css", "api/../errors"}},
	{method: "GET", path: "/openapi.json", seeds: []string{""}},
	{method: "GET", path: "/openapi", seeds: []string{""}},
	{method: "GET", path: "/redoc", seeds: []string{""}},
	{method: "GET", path: "/playground", seeds: []string{""}},

	// The rest of /v1.
	{method: "GET", path: "/v1/models", seeds: []string{""}},
	{method: "GET", path: "/v1/info", seeds: []string{""}},
	{method: "POST", path: "/v1/audio/translations", multipart: true, seeds: []string{
		"--fuzzboundary\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nlm-transcribe\r\n--fuzzboundary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp3\"\r\nContent-Type: audio/mpeg\r\n\r\nID3\x00\x01\r\n--fuzzboundary--\r\n",
	}},
	{method: "GET", path: "/v1/usage", own: true, header: "GW-User-Id", seeds: []string{
		"", "group_by=alias,user&from=2025-03-01", "group_by=&kind=chat&alias=lm-4-scout&user=u1",
		"from=2025-03-02&to=2025-03-01", "from=x", "to=2025-03-01T12:00:00%2B02:00", "group_by=day,day", "kind=audio",
		"limit=1&offset=1", "limit=0",
	}},
	{method: "GET", path: "/v1/images", a1: needImages, seeds: []string{"", "limit=1&offset=0", "limit=0"}},
	{method: "GET", path: "/v1/images/", pathParam: true, a1: needImages, seeds: []string{"@img", "img_nope"}},
	{method: "GET", path: "/v1/images/", suffix: "/content", pathParam: true, a1: needImages, seeds: []string{"@img", "img_nope"}},
	{method: "DELETE", path: "/v1/images/", pathParam: true, a1: needImages, mutable: mutableAlways("images/"),
		seeds: []string{"@img", "img_nope"}},

	// /a1 agents.
	{method: "GET", path: "/a1/agents", own: true, seeds: []string{""}},
	{method: "POST", path: "/a1/agents/helper/chat", own: true, header: "GW-Caller-Depth", seeds: []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"system","content":"sys"},{"role":"user","content":"what time is it?"}],"stream":true}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":false}`,
		`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"current_time","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"noon"}]}`,
	}},
	{method: "POST", path: "/a1/agents/", suffix: "/chat", own: true, pathParam: true, a1: needRAG,
		segs: []string{"librarian", "helper", "nope", "a/b"},
		seeds: []string{
			`{"messages":[{"role":"user","content":"look up the guide"}],"stream":true}`,
			`{"messages":[{"role":"user","content":"hi"}]}`,
		}},
	{method: "POST", path: "/a1/agents/helper/sessions", own: true, header: "GW-User-Id", a1: needSessions,
		mutable: mutableSessions, seeds: []string{
			`{}`, `{"compact_keep_last_n":2}`, `{"compact_keep_last_n":200}`, `{"compact_keep_last_n":null}`, ``,
		}},
	{method: "POST", path: "/a1/agents/helper/sessions/", suffix: "/messages", own: true, pathParam: true, header: "GW-User-Id",
		a1: needSessions, mutable: mutableSessions,
		segs: []string{"@sess", "@old", "@usess", "sess_0000", "@sess/x"},
		seeds: []string{
			`{"message":"hi"}`,
			`{"message":"hi","stream":true}`,
			`{"message":[{"type":"text","text":"hi"}],"stream":false}`,
		}},
	{method: "POST", path: "/a1/agents/helper/sessions/", suffix: "/compact", own: true, pathParam: true, header: "GW-User-Id",
		a1: needSessions, mutable: mutableSessions,
		segs:  []string{"@sess", "@old", "@usess", "sess_", "@sess\x00"},
		seeds: []string{``, `{}`}},
	{method: "POST", path: "/a1/agents/librarian/sessions/", suffix: "/messages", own: true, pathParam: true,
		a1: needSessions | needRAG, mutable: mutableSessions,
		segs:  []string{"@sess", "@usess"},
		seeds: []string{`{"message":"what does the guide say?"}`}},

	{method: "GET", path: "/a1/agents/helper/sessions", own: true, header: "GW-User-Id", a1: needSessions, seeds: []string{
		"", "limit=1&offset=0", "limit=500", "limit=0",
	}},
	{method: "GET", path: "/a1/agents/helper/sessions/", own: true, pathParam: true, header: "GW-User-Id", a1: needSessions,
		seeds: []string{"@sess", "@old", "@usess", "sess_0000"}},
	{method: "GET", path: "/a1/agents/helper/sessions/", suffix: "/lineage", own: true, pathParam: true, header: "GW-User-Id",
		a1: needSessions, seeds: []string{"@sess", "@old", "@usess"}},

	// /a1 RAG.
	{method: "GET", path: "/a1/rag/indices", own: true, a1: needRAG, seeds: []string{""}},
	{method: "GET", path: "/a1/rag/indices/docs/documents", own: true, a1: needRAG, seeds: []string{
		"", "limit=1&offset=1", "limit=0",
	}},
	{method: "POST", path: "/a1/rag/indices/", suffix: "/documents", own: true, pathParam: true, idParam: "id",
		a1: needRAG, mutable: mutableRAG,
		segs: []string{"docs", "fresh", "a:b.c_d-e", "-bad", "x y", strings.Repeat("i", 129)},
		seeds: []string{
			`{"documents":[{"doc_id":"intro","text":"Hello world."}]}`,
			`{"documents":[{"doc_id":"a","text":"alpha beta\n\ngamma","metadata":{"lang":"en","tags":["x"]}},{"doc_id":"b","text":"delta"}]}`,
			`{"documents":[{"doc_id":"guide","text":"new guide","metadata":null}]}`,
			`{"documents":[{"doc_id":"a","text":"one"},{"doc_id":"a","text":"two"}]}`,
		}},
	{method: "POST", path: "/a1/rag/indices/", suffix: "/documents/append", own: true, pathParam: true, idParam: "id",
		a1: needRAG, mutable: mutableRAG,
		segs: []string{"docs", "fresh", "0", "Docs"},
		seeds: []string{
			`{"documents":[{"doc_id":"extra","text":"More words about the guide."}]}`,
			`{"documents":[{"doc_id":"intro","text":"Replaced intro.","metadata":{"v":2}}]}`,
			`{"documents":[{"doc_id":"c","text":"\u00e9t\u00e9 caf\u00e9"},{"doc_id":"d","text":"  x  "}]}`,
		}},
	{method: "GET", path: "/a1/rag/indices/docs/search", own: true, a1: needRAG, seeds: []string{
		"q=guide", "q=hello+world&k=1", "q=guide&k=50", "q=%C3%A9t%C3%A9&k=5", "q=", "k=2", "q=x&k=0", "q=x&k=51", "q=x&k=1e1",
	}},
	{method: "GET", path: "/a1/rag/indices/docs/documents/", own: true, pathParam: true, a1: needRAG, seeds: []string{
		"intro", "guide", "nope", "..",
	}},
	{method: "DELETE", path: "/a1/rag/indices/docs/documents/", own: true, pathParam: true, a1: needRAG,
		mutable: mutableAlways("rag/"), seeds: []string{
			"intro", "nope",
		}},

	// /a1 runs.
	{method: "GET", path: "/a1/runtimes", own: true, seeds: []string{""}},
	{method: "POST", path: "/a1/runs", own: true, header: "GW-User-Id", a1: needRuns, mutable: mutableAlways("runs/list"), seeds: []string{
		`{"runtime":"coding-agent","repo":"https://github.com/acme/app","work_item":"issue-1"}`,
		`{"runtime":"coding-agent","repo":"HTTPS://GitHub.com:443/Acme/App.git/","work_item":"PR #7: fix"}`,
		`{"runtime":"chat","repo":"https://github.com/acme/app","work_item":"x"}`,
		`{"runtime":"coding-agent","repo":"https://github.com/other/app","work_item":"x"}`,
		`{"runtime":"coding-agent","repo":"https://github.com/acme/app","work_item":"setup-1"}`,
	}},
	{method: "GET", path: "/a1/runs", own: true, header: "GW-User-Id", a1: needRuns, seeds: []string{
		"limit=1&offset=0", "limit=500", "offset=1", "limit=0", "limit=501", "offset=-1", "limit=x",
	}},
	{method: "GET", path: "/a1/runs/", own: true, pathParam: true, header: "GW-User-Id", a1: needRuns, seeds: []string{
		"@run", "@urun", "run_00000000000000000000000000000000", "x",
	}},
	{method: "POST", path: "/a1/runs/", suffix: "/cancel", own: true, pathParam: true, header: "GW-User-Id", a1: needRuns,
		segs:  []string{"@run", "@urun", "run_", "@run.."},
		seeds: []string{``, `{}`}},

	// Rows are appended, so that the route byte of the inputs under
	// testdata/fuzz keeps naming the route it named.
	{method: "GET", path: "/v1/models/", pathParam: true, seeds: []string{"lm-4-scout", "lm-transcribe", "nope", "lm-4-scout/x"}},
	{method: "POST", path: "/v1/messages", anthropic: true, header: "GW-Cloud-Consent", seeds: []string{
		`{"model":"lm-4-scout","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"lm-4-scout-local","max_tokens":64,"stream":true,"system":"be brief","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
		`{"model":"lm-vision","max_tokens":64,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}},{"type":"text","text":"what?"}]}]}`,
		`{"model":"lm-4-scout","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"}],"is_error":false},{"type":"text","text":"and?"}]}],"tools":[{"name":"get_weather","description":"d","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`,
		`{"model":"lm-reasoner","max_tokens":5,"temperature":0.5,"top_p":0.9,"stop_sequences":["END"],"metadata":{"user_id":"u"},"thinking":{"type":"disabled"},"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}},"messages":[{"role":"user","content":"x"}]}`,
	}},
	{method: "POST", path: "/v1/messages/count_tokens", anthropic: true, seeds: []string{
		`{"model":"lm-4-scout","system":[{"type":"text","text":"be brief"}],"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`,
		`{"model":"lm-vision","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}}]}]}`,
	}},
	{method: "POST", path: "/v1/responses", responses: true, header: "GW-User-Id", seeds: []string{
		`{"model":"lm-4-scout","input":"hi"}`,
		`{"model":"lm-4-scout-local","stream":true,"instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"store":false}`,
		`{"model":"lm-vision","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==","detail":"auto"},{"type":"input_text","text":"what?"}]}]}`,
		`{"model":"lm-4-scout","stream":true,"input":[{"role":"user","content":"q"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_1","output":"sunny"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"},"strict":true}],"tool_choice":"auto","parallel_tool_calls":false}`,
		`{"model":"lm-reasoner","max_output_tokens":5,"temperature":0.5,"top_p":0.9,"metadata":{"k":"v"},"text":{"format":{"type":"json_schema","name":"o","schema":{"type":"object"}}},"input":"x","previous_response_id":"resp_nope"}`,
		`{"model":"lm-4-scout","input":[{"type":"item_reference","id":"msg_nope"}],"tools":[{"type":"web_search"}],"background":true}`,
	}},
	{method: "GET", path: "/v1/responses/", responses: true, pathParam: true, seeds: []string{"resp_nope", "resp_/x", ""}},
	{method: "GET", path: "/v1/responses/", suffix: "/input_items", responses: true, pathParam: true, seeds: []string{"resp_nope"}},
	{method: "DELETE", path: "/v1/responses/", responses: true, pathParam: true, seeds: []string{"resp_nope", "resp_0000"}},
}

// fuzzTenants is how many inputs one gateway serves, each in a tenant of
// its own.
const fuzzTenants = 64

// fuzzHarness is what the inputs of one fuzz worker share: the fake backend,
// the upstream router over it (so connections are reused), the tokens of the
// tenants, and the gateway of the inputs.
type fuzzHarness struct {
	catalog  *upstream.Catalog
	backends upstream.Backends
	router   *upstream.Router
	tokens   *auth.Catalog
	agents   string // the WithAgentsDir of every gateway: a1Agents
	coding   string // the WithCodingAgentCommand: a harmless program
	perGW    int    // inputs a gateway serves: fuzzTenants, or 1 with FUZZFRESH

	// The gateway of the next inputs (nil: none yet) and its store; used
	// counts the tenants it gave out.
	g    *gateway.Gateway
	st   *watchStore
	used int

	mu  sync.Mutex
	bad []string // JSON bodies sent upstream that break the forwarding rules
}

// fuzzToken is the bearer token of tenant i's admin (tenant "acme-<i>").
func fuzzToken(i int) string { return fmt.Sprintf("admin-%02d", i) }

func newFuzzHarness(f *testing.F) *fuzzHarness {
	f.Helper()
	h := &fuzzHarness{}
	fake := upstreamtest.NewHandler(upstreamtest.Config{DiscardCalls: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			b, _ := io.ReadAll(r.Body)
			if msg := checkForwarded(b); msg != "" {
				h.mu.Lock()
				h.bad = append(h.bad, msg)
				h.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		fake.ServeHTTP(w, r)
	}))
	f.Cleanup(func() { fake.Close(); srv.CloseClientConnections(); srv.Close() })
	cat, err := upstream.DefaultCatalog()
	if err != nil {
		f.Fatal(err)
	}
	h.catalog = cat
	h.backends = upstream.Backends{LocalURL: srv.URL + "/v1", CloudAURL: srv.URL + "/v1", CloudBURL: srv.URL + "/v1"}
	h.router, err = upstream.NewRouter(cat, h.backends, upstream.WithLogger(fuzzLogger()))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.router.Close() })
	var tenants []*auth.Tenant
	tokens := map[string]auth.StaticToken{}
	for i := range fuzzTenants {
		id := fmt.Sprintf("acme-%02d", i)
		tenants = append(tenants, &auth.Tenant{
			ID:       id,
			Settings: auth.Settings{CloudDocConsent: true, CodingAgentRepos: []string{a1Repo}},
			Quotas:   map[string]auth.Quota{"lm-4-scout-cloudB": {RequestsPerDay: 1000}},
		})
		tokens[fuzzToken(i)] = auth.StaticToken{Tenant: id, Role: auth.RoleTenantAdmin}
	}
	h.tokens = auth.MustStatic(tenants, tokens)
	h.perGW = fuzzTenants
	if os.Getenv("FUZZFRESH") != "" {
		h.perGW = 1
	}
	f.Cleanup(h.retire)
	h.agents = f.TempDir()
	for name, content := range a1Agents {
		if err := os.WriteFile(filepath.Join(h.agents, name), []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	h.coding = "/bin/true"
	if _, err := os.Stat(h.coding); err != nil {
		h.coding = "true" // looked up in PATH
	}
	return h
}

// checkForwarded says what is wrong with a JSON body the gateway sent
// upstream: it must be one JSON object with a string model, and hold neither a
// top-level user_id nor attachments (converted before forwarding).
func checkForwarded(b []byte) string {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil || top == nil {
		return fmt.Sprintf("not a JSON object (%v): %q", err, b)
	}
	var model string
	if json.Unmarshal(top["model"], &model) != nil || model == "" {
		return fmt.Sprintf("no string model: %q", b)
	}
	for _, k := range []string{"user_id", "attachments"} {
		if _, ok := top[k]; ok {
			return fmt.Sprintf("forwards %s: %q", k, b)
		}
	}
	return ""
}

// badForwarded returns the number of bad bodies sent upstream so far, and
// the last one.
func (h *fuzzHarness) badForwarded() (int, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.bad) == 0 {
		return 0, ""
	}
	return len(h.bad), h.bad[len(h.bad)-1]
}

// fuzzGateway is one input's view of the gateway: its store, and the token
// of the input's tenant.
type fuzzGateway struct {
	g     *gateway.Gateway
	st    *watchStore
	token string
	// ids are the ids a1Setup created, by placeholder (a1Placeholders).
	ids map[string]string
	// need is what a1Setup stored.
	need a1Need
}

// newGateway returns the gateway of an input, in a tenant no other input
// used, with two stored conversations: "keep" of u1 and "theirs" of u2, each
// one turn with a system prompt. When the input ends, its runs are waited
// for, so that no background write falls into the next input; the gateway
// is retired after a failure.
func (h *fuzzHarness) newGateway(t *testing.T) *fuzzGateway {
	t.Helper()
	if h.g == nil || h.used == h.perGW {
		h.retire()
		h.st = &watchStore{Store: memstore.New()}
		g, err := gateway.New(
			gateway.WithStore(h.st),
			gateway.WithTokenCatalog(h.tokens),
			gateway.WithCatalog(h.catalog),
			gateway.WithBackends(h.backends),
			gateway.WithUpstream(h.router),
			gateway.WithClock(clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))),
			gateway.WithLogger(fuzzLogger()),
			gateway.WithRateLimit(1e9, 1e9),
			gateway.WithBodyLimit(64<<10),
			gateway.WithAgentsDir(h.agents),
			gateway.WithCodingAgentCommand(h.coding),
		)
		if err != nil {
			t.Fatal(err)
		}
		h.g = g
	}
	fg := &fuzzGateway{g: h.g, st: h.st, token: fuzzToken(h.used)}
	h.used++
	t.Cleanup(func() {
		if !fg.settle() {
			t.Errorf("runs of the input still queued or running after %v", slowAnswer)
		}
		if t.Failed() {
			h.retire()
		}
	})
	for _, c := range []struct{ user, id string }{{"u1", "keep"}, {"u2", "theirs"}} {
		body := `{"conversation_id":"` + c.id + `","message":"first","system_prompt":"sys","stream":false}`
		if rec := fg.serve("POST", "/c1/chat", c.user, nil, []byte(body)); rec.Code != 200 {
			t.Fatalf("seeding conversation %s: %d %s", c.id, rec.Code, rec.Body)
		}
	}
	return fg
}

// retire closes the harness's gateway, if any: the next input gets a new
// one.
func (h *fuzzHarness) retire() {
	if h.g != nil {
		h.g.Close()
	}
	h.g, h.st, h.used = nil, nil, 0
}

// settle waits, up to slowAnswer, until no run of the input's tenant is
// queued or running, and reports whether none is.
func (fg *fuzzGateway) settle() bool {
	for deadline := time.Now().Add(slowAnswer); ; time.Sleep(time.Millisecond) {
		rec := fg.serve("GET", "/a1/runs?limit=500", "", nil, nil)
		var l struct {
			Data []struct {
				Status string `json:"status"`
			} `json:"data"`
		}
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &l) != nil {
			return false
		}
		busy := false
		for _, r := range l.Data {
			busy = busy || r.Status == "queued" || r.Status == "running"
		}
		if !busy {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// serve sends one request as the tenant admin of the input, with GW-User-Id
// user unless hdr overrides it.
func (fg *fuzzGateway) serve(method, target, user string, hdr http.Header, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, bytes.NewReader(body))
	r.Header = requestHeader(fg.token, user, hdr)
	w := httptest.NewRecorder()
	fg.g.ServeHTTP(w, r)
	return w
}

// requestHeader is the header of a request with token as user (none when
// ""), with hdr overriding the defaults.
func requestHeader(token, user string, hdr http.Header) http.Header {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	h.Set("Content-Type", "application/json")
	if user != "" {
		h.Set("GW-User-Id", user)
	}
	for k, vs := range hdr {
		h[k] = vs
	}
	return h
}

// conversation returns GET /c1/conversations/{id} as user, or "" when it
// answers 404 conversation_not_found (it was deleted).
func (fg *fuzzGateway) conversation(t *testing.T, id, user string) string {
	t.Helper()
	rec := fg.serve("GET", "/c1/conversations/"+id, user, nil, nil)
	if rec.Code == http.StatusNotFound && strings.Contains(rec.Body.String(), `"conversation_not_found"`) {
		return ""
	}
	if rec.Code != 200 {
		t.Fatalf("GET /c1/conversations/%s: %d %s", id, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// snapshot is what the stored conversations look like.
type snapshot struct{ keep, theirs string }

func (fg *fuzzGateway) snapshot(t *testing.T) snapshot {
	t.Helper()
	return snapshot{keep: fg.conversation(t, "keep", "u1"), theirs: fg.conversation(t, "theirs", "u2")}
}

// a1Setup stores what need asks for (see a1Need), through the API, and notes
// the ids it created in fg.ids. It waits for the runs to finish, so that no
// background write follows.
func (fg *fuzzGateway) a1Setup(t *testing.T, need a1Need) {
	t.Helper()
	fg.need = need
	fg.ids = map[string]string{}
	do := func(method, target, user, body string, want int) map[string]any {
		t.Helper()
		rec := fg.serve(method, target, user, nil, []byte(body))
		if rec.Code != want {
			t.Fatalf("setup: %s %s: %d %s", method, target, rec.Code, rec.Body)
		}
		var v map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("setup: %s %s: %v", method, target, err)
		}
		return v
	}
	if need&needRAG != 0 {
		do("POST", "/a1/rag/indices/docs/documents", "", `{"documents":[`+
			`{"doc_id":"intro","text":"Hello world. This is the intro.","metadata":{"lang":"en"}},`+
			`{"doc_id":"guide","text":"The guide explains the gateway.\n\nIt has two parts."}]}`, 200)
	}
	if need&needSessions != 0 {
		base := "/a1/agents/helper/sessions"
		old := do("POST", base, "u1", `{"compact_keep_last_n":1}`, 201)["id"].(string)
		do("POST", base+"/"+old+"/messages", "u1", `{"message":"one"}`, 200)
		sess := do("POST", base+"/"+old+"/compact", "u1", ``, 200)["id"].(string)
		do("POST", base+"/"+sess+"/messages", "u1", `{"message":"two"}`, 200)
		fg.ids["@old"], fg.ids["@sess"] = old, sess
		fg.ids["@usess"] = do("POST", base, "u2", `{}`, 201)["id"].(string)
	}
	if need&needImages != 0 {
		img := do("POST", "/v1/images/generations", "u1", `{"prompt":"a cat"}`, 200)
		data, _ := img["data"].([]any)
		if len(data) != 1 {
			t.Fatalf("setup: generated %v", img)
		}
		fg.ids["@img"] = data[0].(map[string]any)["id"].(string)
	}
	if need&needRuns != 0 {
		for _, r := range []struct{ ph, user string }{{"@run", "u1"}, {"@urun", "u2"}} {
			body := `{"runtime":"coding-agent","repo":"` + a1Repo + `","work_item":"setup-` + r.user + `"}`
			id := do("POST", "/a1/runs", r.user, body, 201)["id"].(string)
			fg.ids[r.ph] = id
			for deadline := time.Now().Add(slowAnswer); ; time.Sleep(time.Millisecond) {
				st := do("GET", "/a1/runs/"+id, r.user, "", 200)["status"]
				if st != "queued" && st != "running" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("setup: run %s still %v", id, st)
				}
			}
		}
	}
}

// a1Segment is the fuzzed path segment seg with the placeholders replaced by
// the ids a1Setup created.
func (fg *fuzzGateway) a1Segment(seg string) string {
	for _, ph := range a1Placeholders {
		if id, ok := fg.ids[ph]; ok {
			seg = strings.ReplaceAll(seg, ph, id)
		}
	}
	return seg
}

// a1State is what a1Setup stored, as read back through the API: a key
// ("rag/...", "sess/<user>/...", "runs/...") for each answer.
func (fg *fuzzGateway) a1State(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	get := func(key, target, user string) []byte {
		t.Helper()
		rec := fg.serve("GET", target, user, nil, nil)
		if rec.Code != 200 {
			t.Fatalf("GET %s: %d %s", target, rec.Code, rec.Body)
		}
		out[key] = rec.Body.String()
		return rec.Body.Bytes()
	}
	if fg.need&needRAG != 0 {
		get("rag/indices", "/a1/rag/indices", "")
		var docs struct {
			Data []struct {
				DocID string `json:"doc_id"`
			}
		}
		json.Unmarshal(get("rag/docs", "/a1/rag/indices/docs/documents", ""), &docs)
		for _, d := range docs.Data {
			get("rag/docs/"+d.DocID, "/a1/rag/indices/docs/documents/"+url.PathEscape(d.DocID), "")
		}
	}
	if fg.need&needSessions != 0 {
		base := "/a1/agents/helper/sessions"
		for _, s := range []struct{ ph, user string }{{"@old", "u1"}, {"@sess", "u1"}, {"@usess", "u2"}} {
			id := fg.ids[s.ph]
			get("sess/"+s.user+"/"+id, base+"/"+id, s.user)
			get("sess/"+s.user+"/"+id+"/lineage", base+"/"+id+"/lineage", s.user)
		}
		get("sess/u1/list", base+"?limit=500", "u1")
		get("sess/u2/list", base+"?limit=500", "u2")
	}
	if fg.need&needImages != 0 {
		var images struct {
			Data []struct {
				ID string `json:"id"`
			}
		}
		json.Unmarshal(get("images/list", "/v1/images?limit=100", ""), &images)
		for _, img := range images.Data {
			get("images/"+img.ID, "/v1/images/"+url.PathEscape(img.ID), "")
			get("images/"+img.ID+"/content", "/v1/images/"+url.PathEscape(img.ID)+"/content", "")
		}
	}
	if fg.need&needRuns != 0 {
		get("runs/list", "/a1/runs?limit=500", "")
		for _, ph := range []string{"@run", "@urun"} {
			get("runs/"+fg.ids[ph], "/a1/runs/"+fg.ids[ph], "")
		}
	}
	return out
}

// checkA1State checks the /a1 state after a request: unchanged when it failed;
// when it succeeded, only keys under the prefixes of mutable may change.
func checkA1State(t *testing.T, failed bool, mutable []string, before, after map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if !failed && hasAnyPrefix(k, mutable...) {
			continue
		}
		if diff := cmp.Diff(before[k], after[k]); diff != "" {
			t.Errorf("stored %s changed (-before +after):\n%s", k, diff)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok && (failed || !hasAnyPrefix(k, mutable...)) {
			t.Errorf("stored %s appeared: %s", k, after[k])
		}
	}
}

// checkRAGWrite checks a successful document write of body to index id (a
// full replace when replace): every document of the body reads back as sent,
// a replace leaves exactly them, and the index's document_count is the
// number of documents listed.
func (fg *fuzzGateway) checkRAGWrite(t *testing.T, id string, replace bool, body, answer []byte) {
	t.Helper()
	var req struct {
		Documents []struct {
			DocID    string          `json:"doc_id"`
			Text     string          `json:"text"`
			Metadata json.RawMessage `json:"metadata"`
		} `json:"documents"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("an accepted write does not decode: %v", err)
	}
	base := "/a1/rag/indices/" + url.PathEscape(id) + "/documents"
	rec := fg.serve("GET", base, "", nil, nil)
	if rec.Code != 200 {
		t.Fatalf("GET %s after a write: %d %s", base, rec.Code, rec.Body)
	}
	var list struct {
		Data []struct {
			DocID string `json:"doc_id"`
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Index struct {
			DocumentCount int `json:"document_count"`
		} `json:"index"`
	}
	if err := json.Unmarshal(answer, &res); err != nil {
		t.Fatalf("write answer: %v: %s", err, answer)
	}
	if res.Index.DocumentCount != len(list.Data) {
		t.Errorf("write answered document_count %d, the index lists %d documents", res.Index.DocumentCount, len(list.Data))
	}
	listed := map[string]bool{}
	for _, d := range list.Data {
		listed[d.DocID] = true
	}
	if replace && len(listed) != len(req.Documents) {
		t.Errorf("a full replace of %d documents left %d", len(req.Documents), len(listed))
	}
	for _, d := range req.Documents {
		rec := fg.serve("GET", base+"/"+url.PathEscape(d.DocID), "", nil, nil)
		if rec.Code != 200 {
			t.Errorf("written document %q does not read back: %d %s", d.DocID, rec.Code, rec.Body)
			continue
		}
		var got struct {
			Text     string          `json:"text"`
			Metadata json.RawMessage `json:"metadata"`
		}
		json.Unmarshal(rec.Body.Bytes(), &got)
		if want := strings.ToValidUTF8(d.Text, "\uFFFD"); got.Text != want {
			t.Errorf("document %q reads back %q, written %q", d.DocID, got.Text, want)
		}
		var want bytes.Buffer
		if len(d.Metadata) > 0 && string(d.Metadata) != "null" {
			json.Compact(&want, d.Metadata)
		}
		if !bytes.Equal(want.Bytes(), got.Metadata) && !(want.Len() == 0 && len(got.Metadata) == 0) {
			t.Errorf("document %q metadata reads back %s, written %s", d.DocID, got.Metadata, d.Metadata)
		}
	}
}

// addA1Seeds adds the seeds of an /a1 pathParam row that takes a body.
func addA1Seeds(f *testing.F, i int, rt fuzzRoute) {
	for _, s := range rt.seeds {
		for _, b := range fuzzVariants(s) {
			f.Add(uint8(i), rt.segs[0], "", []byte(b))
		}
		if fuzzing() {
			for _, b := range fieldVariants(s) {
				f.Add(uint8(i), rt.segs[0], "", b)
			}
		}
	}
	for _, seg := range rt.segs[1:] {
		f.Add(uint8(i), seg, "", []byte(rt.seeds[0]))
	}
}

func FuzzRoutes(f *testing.F) {
	only := os.Getenv("FUZZROUTES") // with -fuzz: seed only the rows whose path starts with it
	for i, rt := range fuzzRoutes {
		if only != "" && fuzzing() && !strings.HasPrefix(rt.path, only) {
			continue
		}
		if len(rt.segs) > 0 {
			addA1Seeds(f, i, rt)
			continue
		}
		for _, s := range rt.seeds {
			if rt.method == "GET" || rt.method == "DELETE" || rt.pathParam {
				f.Add(uint8(i), s, "", []byte(nil))
				continue
			}
			for _, b := range fuzzVariants(s) {
				f.Add(uint8(i), "", "", []byte(b))
			}
			if fuzzing() && !rt.multipart {
				for _, b := range fieldVariants(s) {
					f.Add(uint8(i), "", "", b)
				}
			}
		}
	}
	h := newFuzzHarness(f)
	f.Fuzz(func(t *testing.T, route uint8, query, header string, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		target := rt.path
		if rt.pathParam {
			if query == "" {
				return
			}
			target += url.PathEscape(query) + rt.suffix
		} else if query != "" {
			target += "?" + query
		}
		if !validTarget(target) {
			return
		}
		hdr := http.Header{}
		if rt.multipart {
			hdr.Set("Content-Type", "multipart/form-data; boundary="+fuzzBoundary)
		}
		if header != "" && rt.header != "" {
			v, ok := wireHeaderValue(header)
			if !ok {
				return
			}
			hdr.Set(rt.header, v)
		}
		fg := h.newGateway(t)
		var seg string
		if rt.a1 != 0 || strings.HasPrefix(rt.path, "/a1/") {
			fg.a1Setup(t, rt.a1)
			if rt.pathParam {
				seg = fg.a1Segment(query)
				target = rt.path + url.PathEscape(seg) + rt.suffix
			}
		}
		before := fg.snapshot(t)
		a1Before := fg.a1State(t)
		commits := fg.st.commits()
		nbad, _ := h.badForwarded()
		start := time.Now()
		rec := fg.serve(rt.method, target, "u1", hdr, body)
		if n, last := h.badForwarded(); n > nbad {
			t.Errorf("%s %s sent upstream a body that is %s", rt.method, target, last)
		}
		if d := time.Since(start); d > slowAnswer {
			t.Errorf("%s %s took %v", rt.method, target, d)
		}
		failed := checkAnswer(t, rt, requestHeader(fg.token, "u1", hdr), rec)
		user := "u1"
		if rt.header == "GW-User-Id" && hdr.Get("GW-User-Id") != "" {
			user = hdr.Get("GW-User-Id")
		}
		after := fg.snapshot(t)
		u, _ := url.Parse(target) // validTarget parsed it
		checkStored(t, rt.method, u.Path, user, failed, before, after)
		if n := fg.st.commits() - commits; failed && n > 0 {
			t.Errorf("a failing request committed %d store writes", n)
		}
		var mutable []string
		if rt.mutable != nil {
			mutable = rt.mutable(seg, user)
		}
		checkA1State(t, failed, mutable, a1Before, fg.a1State(t))
		if !failed && rt.idParam != "" {
			fg.checkRAGWrite(t, seg, !strings.HasSuffix(rt.suffix, "/append"), body, rec.Body.Bytes())
		}
	})
}

// FuzzC1ChatStored fuzzes POST /c1/chat (body, conversation-id header, and
// GW-User-Id, u1 when empty) with the conversations "keep" (of u1) and
// "theirs" (of u2) stored: a failing request leaves both as they were and
// commits nothing; a successful one only appends to the caller's own, and an
// acknowledged turn reads back from GET /c1/conversations/{id}.
func FuzzC1ChatStored(f *testing.F) {
	for _, s := range []string{
		`{"conversation_id":"keep","message":"next","stream":false}`,
		`{"conversation_id":"keep","message":"next"}`,
		`{"conversation_id":"keep","message":"next","system_prompt":"late","keep_last_turns":0}`,
		`{"conversation_id":"keep","message":[{"type":"text","text":"hi"}],"ephemeral":true}`,
		`{"conversation_id":"keep","message":"hi","images":[{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}]}`,
		`{"conversation_id":"keep","message":"hi","max_tokens":0}`,
		`{"conversation_id":"keep","message":"x","model":"lm-4-scout","attachments":[{"kind":"document","doc_name":"a","content":"b"}]}`,
		`{"conversation_id":"theirs","message":"steal","stream":false}`,
		`{"message":"hi","stream":false}`,
	} {
		for _, b := range fuzzVariants(s) {
			f.Add([]byte(b), "", false, "")
		}
		if fuzzing() {
			for _, b := range fieldVariants(s) {
				f.Add(b, "", false, "")
			}
		}
	}
	f.Add([]byte(`{"message":"next","stream":false}`), "keep", false, "")
	f.Add([]byte(`{"message":"next"}`), "keep", true, "")
	f.Add([]byte(`{"message":"next","conversation_id":"keep"}`), "theirs", true, "")
	f.Add([]byte(`{"message":"next","stream":false}`), "theirs", false, "u2")
	f.Add([]byte(`{"message":"next","stream":false,"conversation_id":"new"}`), "", false, "zoë")
	rt := fuzzRoutes[1]
	h := newFuzzHarness(f)
	f.Fuzz(func(t *testing.T, body []byte, convID string, gwHeader bool, user string) {
		hdr := http.Header{}
		if convID != "" {
			v, ok := wireHeaderValue(convID)
			if !ok {
				return
			}
			name := "X-Conversation-Id"
			if gwHeader {
				name = "Gw-Conversation-Id"
			}
			hdr.Set(name, v)
		}
		if user == "" {
			user = "u1"
		} else if v, ok := wireHeaderValue(user); ok {
			user = v
		} else {
			return
		}
		fg := h.newGateway(t)
		before := fg.snapshot(t)
		commits := fg.st.commits()
		nbad, _ := h.badForwarded()
		start := time.Now()
		rec := fg.serve("POST", "/c1/chat", user, hdr, body)
		if n, last := h.badForwarded(); n > nbad {
			t.Errorf("POST /c1/chat sent upstream a body that is %s", last)
		}
		if d := time.Since(start); d > slowAnswer {
			t.Errorf("POST /c1/chat took %v", d)
		}
		failed := checkAnswer(t, rt, requestHeader(fg.token, user, hdr), rec)
		after := fg.snapshot(t)
		checkStored(t, "POST", "/c1/chat", user, failed, before, after)
		if n := fg.st.commits() - commits; failed && n > 0 {
			t.Errorf("a failing request committed %d store writes", n)
		}
		var q struct{ Ephemeral *bool }
		json.Unmarshal(body, &q) // the gateway accepted it: it is valid
		if id := rec.Header().Get("Gw-Conversation-Id"); !failed && (q.Ephemeral == nil || !*q.Ephemeral) {
			// Read back as the caller.
			if strings.Contains(id, "/") {
				return // not addressable by GET /c1/conversations/{id} (see the report)
			}
			got := fg.serve("GET", "/c1/conversations/"+url.PathEscape(id), user, nil, nil)
			if got.Code != 200 {
				t.Fatalf("acknowledged turn of conversation %q does not read back: %d %s", id, got.Code, got.Body)
			}
			if msgs := messagesOf(t, got.Body.String()); len(msgs) < 2 || !bytes.Contains(msgs[len(msgs)-1], []byte(`"assistant"`)) {
				t.Errorf("conversation %q does not end with the reply: %s", id, got.Body)
			}
		}
	})
}

// fuzzVariants returns s and some cuts of it: after the first colon, after the
// first opening bracket, at the middle, and without its last byte.
func fuzzVariants(s string) []string {
	out := []string{s}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		out = append(out, s[:i+1])
	}
	if i := strings.IndexByte(s, '['); i >= 0 {
		out = append(out, s[:i+1])
	}
	if len(s) > 1 {
		out = append(out, s[:len(s)/2], s[:len(s)-1])
	}
	return out
}

// fuzzing reports whether the test binary runs with -fuzz: then the seeds
// include fieldVariants, too many for the default go test.
func fuzzing() bool {
	fl := flag.Lookup("test.fuzz")
	return fl != nil && fl.Value.String() != ""
}

// edgeValues replace one value at a time in fieldVariants.
var edgeValues = []string{`null`, `""`, `"x"`, `0`, `-1`, `1.5`, `1e400`, `4294967296`, `true`,
	`[]`, `{}`, `[null]`, `"\ud800"`, `"user_id"`}

// fieldVariants returns the JSON document s with, in turn, each value at any
// depth replaced by each of edgeValues, and each member removed.
func fieldVariants(s string) [][]byte {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return nil
	}
	var out [][]byte
	var walk func(v any, set func(any), del func())
	walk = func(v any, set func(any), del func()) {
		for _, e := range edgeValues {
			set(json.RawMessage(e))
			if b, err := json.Marshal(doc); err == nil {
				out = append(out, b)
			}
		}
		set(v)
		if del != nil {
			del()
			if b, err := json.Marshal(doc); err == nil {
				out = append(out, b)
			}
			set(v)
		}
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k], func(x any) { v[k] = x }, func() { delete(v, k) })
			}
		case []any:
			for i, c := range v {
				walk(c, func(x any) { v[i] = x }, nil)
			}
		}
	}
	if m, ok := doc.(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			walk(m[k], func(x any) { m[k] = x }, func() { delete(m, k) })
		}
	}
	return out
}

// validTarget reports whether target can be sent on a request line.
func validTarget(target string) bool {
	for i := 0; i < len(target); i++ {
		if c := target[i]; c <= ' ' || c == 0x7f || c == '#' {
			return false
		}
	}
	_, err := url.ParseRequestURI(target)
	return err == nil
}

// wireHeaderValue returns v as a server would receive it (without leading and
// trailing blanks), or false when it cannot be sent in a header.
func wireHeaderValue(v string) (string, bool) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return "", false
		}
	}
	v = strings.Trim(v, " \t")
	return v, v != ""
}

// checkAnswer checks one answer against the error rules and reports whether
// the request failed (an error status, or a stream ended by gw.error).
func checkAnswer(t *testing.T, rt fuzzRoute, sent http.Header, rec *httptest.ResponseRecorder) (failed bool) {
	t.Helper()
	body := rec.Body.Bytes()
	ct := rec.Header().Get("Content-Type")
	if rec.Header().Get("X-Request-Id") == "" {
		t.Errorf("no x-request-id")
	}
	switch {
	case rt.path == "/docs/" && rec.Code == http.StatusFound:
		// /docs/ leads to the API reference, /docs/api/, by a Location
		// relative to the request (the gateway may be mounted
		// under a prefix).
		if loc := rec.Header().Get("Location"); loc != "api/" {
			t.Fatalf("%s %s answered 302 to %q, want the relative api/", rt.method, rt.path, loc)
		}
		return false
	case rec.Code >= 500 || rec.Code < 200 || (rec.Code >= 300 && rec.Code < 400):
		t.Fatalf("%s %s answered %d: %s", rt.method, rt.path, rec.Code, body)
	case rec.Code >= 400:
		if rt.anthropic {
			body = anthropicEnvelope(t, body)
		}
		if rt.responses {
			body = responsesEnvelope(t, body)
		}
		checkEnvelope(t, rt, sent, rec.Code, ct, body)
		return true
	case len(body) == 0:
		t.Fatalf("%s %s answered %d with an empty body", rt.method, rt.path, rec.Code)
	case rt.anthropic && strings.HasPrefix(ct, "text/event-stream"):
		if bytes.Contains(body, []byte("event: error\n")) {
			t.Errorf("%s %s: stream ended by an error event: %s", rt.method, rt.path, body)
			return true
		}
		if !bytes.HasSuffix(body, []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")) {
			t.Errorf("%s %s: stream does not end with message_stop: %q", rt.method, rt.path, body)
		}
	case rt.responses && strings.HasPrefix(ct, "text/event-stream"):
		if bytes.Contains(body, []byte("event: error\n")) {
			t.Errorf("%s %s: stream ended by an error event: %s", rt.method, rt.path, body)
			return true
		}
		if !bytes.Contains(body, []byte("event: response.completed\n")) && !bytes.Contains(body, []byte("event: response.incomplete\n")) {
			t.Errorf("%s %s: stream does not end with response.completed: %q", rt.method, rt.path, body)
		}
	case strings.HasPrefix(ct, "text/event-stream"):
		if bytes.Contains(body, []byte("event: gw.error")) {
			t.Errorf("%s %s: stream ended by gw.error: %s", rt.method, rt.path, body)
			return true
		}
		if !bytes.HasSuffix(body, []byte("data: [DONE]\n\n")) {
			t.Errorf("%s %s: stream does not end with data: [DONE]: %q", rt.method, rt.path, body)
		}
	case strings.HasPrefix(ct, "application/json"):
		if !json.Valid(body) {
			t.Errorf("%s %s answered %d with invalid JSON: %q", rt.method, rt.path, rec.Code, body)
		}
	}
	return false
}

// anthropicEnvelope checks that body is Anthropic's error shape
// ({"type":"error","error":{"type","message","code","param"}}, extra fields
// at the top level) and returns it as the gateway's envelope for
// checkEnvelope, with the image params that package anthropic renames
// (messages[].content[].source) given back the catalog's name.
func anthropicEnvelope(t *testing.T, body []byte) []byte {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("error body is not a JSON object: %v: %q", err, body)
	}
	if string(top["type"]) != `"error"` {
		t.Errorf("Anthropic error body without \"type\":\"error\": %s", body)
	}
	var e map[string]any
	if err := json.Unmarshal(top["error"], &e); err != nil {
		t.Fatalf("error is not an object: %s", body)
	}
	code, _ := e["code"].(string)
	if e["param"] == "messages[].content[].source" {
		if tp := errcat.Lookup(errcat.Code(code)).TypicalParam; tp != nil {
			e["param"] = *tp
		}
	}
	out := map[string]any{"error": e, "gw_code": code}
	for k, v := range top {
		if k != "type" && k != "error" {
			out[k] = v
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// responsesParams are the params package responses names for the Responses
// API's fields where the catalog's row names the chat-completions field.
var responsesParams = map[string]bool{
	"input[].content[].image_url": true, "input[].arguments": true, "max_output_tokens": true, "input": true,
	"previous_response_id": true,
}

// responsesEnvelope returns body, the gateway's envelope, with the params
// that package responses renames (and response_not_found's
// previous_response_id and input[N].id) given back the catalog's name, for
// checkEnvelope.
func responsesEnvelope(t *testing.T, body []byte) []byte {
	t.Helper()
	var top map[string]any
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("error body is not a JSON object: %v: %q", err, body)
	}
	e, _ := top["error"].(map[string]any)
	code, _ := e["code"].(string)
	p, _ := e["param"].(string)
	tp := errcat.Lookup(errcat.Code(code)).TypicalParam
	if tp != nil && (responsesParams[p] || (code == string(errcat.ResponseNotFound) && strings.HasPrefix(p, "input["))) {
		e["param"] = *tp
	}
	b, err := json.Marshal(top)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkEnvelope checks an error answer: the envelope's shape, a catalogued code
// with its status and type, and a param where the rules say.
func checkEnvelope(t *testing.T, rt fuzzRoute, sent http.Header, status int, ct string, body []byte) {
	t.Helper()
	if ct != "application/json" {
		t.Errorf("error Content-Type = %q", ct)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("error body is not a JSON object: %v: %q", err, body)
	}
	for k := range top {
		switch k {
		case "error", "gw_code", "available_fallbacks", "required_consents":
		case "successor_session_id": // of an archived session (docs/decisions.md "/a1 agents and sessions")
			if errcat.Code(jsonString(top["error"], "code")) != errcat.SessionCompactConflict {
				t.Errorf("successor_session_id on another code than session_compact_conflict: %s", body)
			}
		default:
			t.Errorf("unexpected top-level field %q in %s", k, body)
		}
	}
	var e map[string]json.RawMessage
	if err := json.Unmarshal(top["error"], &e); err != nil {
		t.Fatalf("error is not an object: %s", body)
	}
	if diff := cmp.Diff([]string{"code", "doc_url", "message", "param", "type"}, sortedKeys(e)); diff != "" {
		t.Errorf("error keys mismatch (-want +got):\n%s\n%s", diff, body)
	}
	var env struct {
		Error struct {
			Type    string  `json:"type"`
			Code    string  `json:"code"`
			Message string  `json:"message"`
			Param   *string `json:"param"`
		} `json:"error"`
		GWCode string `json:"gw_code"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("error envelope: %v: %s", err, body)
	}
	code := errcat.Code(env.Error.Code)
	if !errcat.Known(code) {
		t.Fatalf("code %q is not in the catalog: %s", code, body)
	}
	entry := errcat.Lookup(code)
	got := []any{status, env.Error.Type, env.GWCode}
	want := []any{entry.HTTPStatus, string(entry.Type), env.Error.Code}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status, type, gw_code of %s mismatch (-want +got):\n%s", code, diff)
	}
	if env.Error.Message == "" {
		t.Errorf("empty message: %s", body)
	}
	if u := jsonString(top["error"], "doc_url"); u != errcat.DocURL(code) {
		t.Errorf("doc_url %q, want %q: %s", u, errcat.DocURL(code), body)
	}
	switch code {
	case errcat.UpstreamBadRequest, errcat.UpstreamError, errcat.UpstreamTimeout, errcat.UpstreamUnavailable:
		t.Errorf("%s %s: the fake backend answers every call, yet %s: %s", rt.method, rt.path, code, body)
	case errcat.CloudConsentRequired:
		if _, ok := top["required_consents"]; !ok {
			t.Errorf("cloud_consent_required without required_consents: %s", body)
		}
	case errcat.CloudBDailyQuotaExhausted:
		if _, ok := top["available_fallbacks"]; !ok {
			t.Errorf("cloudB_daily_quota_exhausted without available_fallbacks: %s", body)
		}
	}
	p := env.Error.Param
	if p != nil && *p == "" {
		t.Errorf("empty param: %s", body)
	}
	switch code {
	case errcat.InvalidField, errcat.MissingField:
		switch {
		case p == nil:
			t.Errorf("%s without param: %s", code, body)
		case *p == "body.user_id" || *p == "query.user_id":
		case rt.idParam != "" && *p == rt.idParam:
			// A path parameter that could not have been written (docs/decisions.md "/a1 RAG").
		case code == errcat.InvalidField && strings.HasPrefix(*p, "headers.") && sent.Get(strings.TrimPrefix(*p, "headers.")) == "":
			t.Errorf("invalid_field %q names a header the request did not send: %s", *p, body)
		case rt.own && !hasAnyPrefix(*p, "body.", "query.", "headers.") && *p != "level":
			t.Errorf("%s on %s: param %q is not a location (body., query., headers.): %s", code, rt.path, *p, body)
		case !rt.own && strings.HasPrefix(*p, "body."):
			t.Errorf("%s on the passthrough %s: param %q should be the OpenAI field name: %s", code, rt.path, *p, body)
		}
	case errcat.InvalidJSON:
		if p != nil {
			t.Errorf("invalid_json with param %q: %s", *p, body)
		}
	case errcat.ContentBlocked:
	default:
		if tp := entry.TypicalParam; tp != nil && (p == nil || *p != *tp) {
			t.Errorf("%s: param = %v, want %q: %s", code, deref(p), *tp, body)
		}
	}
}

// checkStored checks the stored conversations "keep" (of u1) and "theirs"
// (of u2) after a request of user to method and path (decoded): unchanged
// when it failed or is neither a chat nor a delete of the conversation; when
// a chat succeeded, the other user's is unchanged and the caller's lost
// nothing (its old messages are a prefix); when the owner's DELETE of it
// succeeded, it is gone.
func checkStored(t *testing.T, method, path, user string, failed bool, before, after snapshot) {
	t.Helper()
	for _, c := range []struct{ id, owner, before, after string }{
		{"keep", "u1", before.keep, after.keep},
		{"theirs", "u2", before.theirs, after.theirs},
	} {
		switch {
		case !failed && user == c.owner && method == "DELETE" && path == "/c1/conversations/"+c.id:
			if c.after != "" {
				t.Errorf("conversation %s of %s still reads back after its DELETE succeeded: %s", c.id, c.owner, c.after)
			}
			continue
		case failed || path != "/c1/chat" || user != c.owner:
			if diff := cmp.Diff(c.before, c.after); diff != "" {
				t.Errorf("stored conversation of %s changed (-before +after):\n%s", c.owner, diff)
			}
			continue
		}
		old, cur := messagesOf(t, c.before), messagesOf(t, c.after)
		if len(cur) < len(old) {
			t.Fatalf("conversation of %s lost messages: %d -> %d", c.owner, len(old), len(cur))
		}
		if diff := cmp.Diff(old, cur[:len(old)]); diff != "" {
			t.Errorf("stored messages of %s changed (-before +after):\n%s", c.owner, diff)
		}
	}
}

func messagesOf(t *testing.T, conv string) []json.RawMessage {
	t.Helper()
	var c struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(conv), &c); err != nil {
		t.Fatalf("conversation: %v: %s", err, conv)
	}
	return c.Messages
}

func sortedKeys(m map[string]json.RawMessage) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// jsonString returns the string member name of the JSON object raw, or "".
func jsonString(raw json.RawMessage, name string) string {
	var m map[string]json.RawMessage
	var v string
	json.Unmarshal(raw, &m)
	json.Unmarshal(m[name], &v)
	return v
}

func deref(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// watchStore counts the transactions of requests that committed writes.
type watchStore struct {
	store.Store
	mu sync.Mutex
	n  int
}

func (s *watchStore) commits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *watchStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	return s.watch(ctx, s.Store.Update, fn)
}

func (s *watchStore) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return s.watch(ctx, s.Store.Batch, fn)
}

func (s *watchStore) watch(ctx context.Context, run func(context.Context, func(store.Tx) error) error, fn func(store.Tx) error) error {
	if httpx.InfoFrom(ctx).RequestID == "" {
		// Not a request's: the purgers' leases, the usage writer and the
		// runs' heartbeats commit on their own schedule, which may fall
		// during any request.
		return run(ctx, fn)
	}
	var wrote bool // of the last run of fn, the one that commits
	err := run(ctx, func(tx store.Tx) error {
		wrote = false
		return fn(&watchTx{Tx: tx, wrote: &wrote})
	})
	if err == nil && wrote {
		s.mu.Lock()
		s.n++
		s.mu.Unlock()
	}
	return err
}

// watchTx notes a successful Put or Delete.
type watchTx struct {
	store.Tx
	wrote *bool
}

func (t *watchTx) Put(bucket, key, value []byte) error {
	err := t.Tx.Put(bucket, key, value)
	if err == nil {
		*t.wrote = true
	}
	return err
}

func (t *watchTx) Delete(bucket, key []byte) error {
	err := t.Tx.Delete(bucket, key)
	if err == nil {
		*t.wrote = true
	}
	return err
}

func fuzzLogger() *slog.Logger {
	if os.Getenv("FUZZLOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}
