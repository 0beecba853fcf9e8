package e2e_test

// The /a1 family from the outside: agent files, agent chat and its tool loop,
// agent sessions (compaction, lineage), RAG indices and search, coding-agent
// runs and runtimes. Each check names the line of ../shared/spec/interface.md,
// ../shared/DECISIONS.md or docs/decisions.md it enforces.

import (
	"encoding/json"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// Extra tokens of the /a1 token file (a1TokenFile).
const (
	tokA1NoWrite = "acme-a1-nowrite-tok-0101" // member of acme, deny agents:write, rag:write, runs:write
	tokA1NoRead  = "acme-a1-noread-tok-00102" // member of acme, deny agents:read, rag:read, runs:read
)

// a1Repo is on acme's coding_agent_repos allowlist (a1TokenFile).
const a1Repo = "https://github.com/acme/app"

// a1TokenFile is the default token file plus acme's coding_agent_repos
// (DECISIONS 3 settings) and two tokens without the /a1 write or read scopes.
func a1TokenFile() string {
	f := defaultTokenFile()
	acme := f["tenants"].([]any)[0].(map[string]any)
	acme["settings"].(map[string]any)["coding_agent_repos"] = []string{a1Repo, "https://git.example.com/acme/tools.git"}
	f["tokens"] = append(f["tokens"].([]any),
		map[string]any{"token": tokA1NoWrite, "tenant": "acme", "role": "member", "deny": []string{"agents:write", "rag:write", "runs:write"}},
		map[string]any{"token": tokA1NoRead, "tenant": "acme", "role": "member", "deny": []string{"agents:read", "rag:read", "runs:read"}})
	return tokenFileJSON(f)
}

// a1Agents are the agent files of a1Start (DECISIONS 7 agent file format).
var a1Agents = map[string]string{
	"helper.json": `{"name":"helper","description":"Tells the time.","model":"lm-4-scout-local","system_prompt":"You are a helpful agent.","tools":["current_time"]}`,
	"plain.json":  `{"name":"plain","description":"Talks.","model":"lm-4-scout-local","system_prompt":"You are plain.","tools":[]}`,
	"caller.json": `{"name":"caller","description":"Asks other agents.","model":"lm-4-scout-local","system_prompt":"You delegate.","tools":["agent_call"]}`,
	"capped.json": `{"name":"capped","description":"One tool round at most.","model":"lm-4-scout-local","system_prompt":"x","tools":["current_time"],"max_tool_rounds":1}`,
	"cloudy.json": `{"name":"cloudy","description":"Uses a cloud alias.","model":"lm-4-scout-cloudA","system_prompt":"x"}`,
	"broken.json": `{"name":"broken","description":"Lists a tool that does not exist.","model":"lm-4-scout-local","system_prompt":"x","tools":["current_time","no_such_tool"]}`,
}

// a1Start starts gatewayd with the /a1 token file and the agents of a1Agents.
func a1Start(t *testing.T, mod func(s *setup)) *gw {
	t.Helper()
	dir := t.TempDir()
	for name, body := range a1Agents {
		writeFile(t, filepath.Join(dir, name), body)
	}
	return start(t, func(s *setup) {
		s.Tokens = a1TokenFile()
		s.Env["GATEWAY_AGENTS_DIR"] = dir
		if mod != nil {
			mod(s)
		}
	})
}

// a1Must fails the test unless r is a 2xx answer, and returns r.
func a1Must(t *testing.T, r *resp) *resp {
	t.Helper()
	if r.Status < 200 || r.Status > 299 {
		t.Fatalf("setup step failed: %s", r)
	}
	return r
}

// userChat is an agent chat body with one user message.
func userChat(content string) map[string]any {
	return map[string]any{"messages": []any{map[string]any{"role": "user", "content": content}}}
}

// a1Field returns field key of each object, as strings.
func a1Field(objs []map[string]any, key string) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, str(o[key]))
	}
	return out
}

// chatBodies returns the decoded bodies of the fake's chat calls, in order.
func chatBodies(t *testing.T, s *upstreamtest.Server) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, c := range s.Calls() {
		if strings.HasSuffix(c.Path, "/chat/completions") {
			var m map[string]any
			if err := json.Unmarshal(c.Body, &m); err != nil {
				t.Fatalf("upstream body is not JSON: %s", c.Body)
			}
			out = append(out, m)
		}
	}
	return out
}

func TestA1AgentFiles(t *testing.T) {
	t.Parallel()
	refusals := []struct{ name, content string }{
		{"not JSON", "name: mangled\nmodel: lm-4-scout\n"},
		{"truncated JSON", `{"name":"mangled","model":"lm-4-scout-local"`},
		{"empty file", ""},
	}
	for _, c := range refusals {
		t.Run("refuses to start: "+c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "plain.json"), a1Agents["plain.json"])
			writeFile(t, filepath.Join(dir, "mangled.json"), c.content)
			tokens := filepath.Join(t.TempDir(), "tokens.json")
			writeFile(t, tokens, a1TokenFile())
			code, out := runToExit(t, map[string]string{"GATEWAY_TOKENS_FILE": tokens, "GATEWAY_LOCAL_URL": "", "GATEWAY_AGENTS_DIR": dir})
			if code <= 0 {
				t.Errorf("gatewayd with an agent file that is not valid JSON (%s): exit %d, want a refusal to start (DECISIONS 7)\n%s", c.name, code, tail(out, 500))
				return
			}
			if !strings.Contains(out, "mangled.json") {
				t.Errorf("refusal does not name the agent file mangled.json (DECISIONS 7):\n%s", tail(out, 500))
			}
		})
	}
	t.Run("unregistered tool: starts with a warning, chat answers agent_tool_not_registered", func(t *testing.T) {
		t.Parallel()
		g := a1Start(t, nil)
		logs := g.stderr.String()
		if !strings.Contains(logs, "broken.json") || !strings.Contains(logs, "no_such_tool") {
			t.Errorf("no start-up warning naming broken.json and no_such_tool (DECISIONS 7):\n%s", tail(logs, 1000))
		}
		wantErr(t, g.post(t, "/a1/agents/broken/chat", tokMember, "", userChat("hi")), 400, "invalid_request_error", "agent_tool_not_registered", "tools",
			"spec Codes agent_tool_not_registered; DECISIONS 7")
		// a session message of that agent answers the same
		sid := str(a1Must(t, g.post(t, "/a1/agents/broken/sessions", tokMember, "alice", map[string]any{})).JSON()["id"])
		wantErr(t, g.post(t, "/a1/agents/broken/sessions/"+sid+"/messages", tokMember, "alice", map[string]any{"message": "hi"}), 400,
			"invalid_request_error", "agent_tool_not_registered", "tools", "spec Codes agent_tool_not_registered")
		if n := chatCalls(g.Local); n != 0 {
			t.Errorf("the broken agent reached the upstream %d times, want 0", n)
		}
	})
}

func TestA1Agents(t *testing.T) {
	t.Parallel()
	g := a1Start(t, nil)

	r := g.get(t, "/a1/agents", tokMember, "")
	if wantStatus(t, r, 200, "spec /a1/agents: GET /a1/agents") {
		wantJSON(t, r)
		data := listData(r)
		if got := a1Field(data, "name"); !slices.Equal(got, []string{"broken", "caller", "capped", "cloudy", "helper", "plain"}) || r.JSON()["object"] != "list" {
			t.Errorf("GET /a1/agents names %v (object %v), want [broken caller capped cloudy helper plain] sorted by name in a list (docs/decisions.md)", got, r.JSON()["object"])
		}
		for _, a := range data {
			if a["name"] == "helper" && (mustJSON(a["tools"]) != `["current_time"]` || a["model"] != "lm-4-scout-local" || a["description"] != "Tells the time.") {
				t.Errorf("helper listed as %v, want its tools, model and description", a)
			}
			if _, ok := a["system_prompt"]; ok {
				t.Errorf("GET /a1/agents shows the system prompt of %v (docs/decisions.md: not shown)", a["name"])
			}
		}
	}

	chat := userChat("hi")
	const ref = "spec Codes"
	runErrCases(t, g, errCases{
		{name: "unknown agent chat", method: "POST", path: "/a1/agents/ghost/chat", body: chat,
			status: 404, typ: "not_found_error", code: "agent_not_found", param: "name"},
		{name: "unknown agent session create", method: "POST", path: "/a1/agents/ghost/sessions", user: "alice", body: map[string]any{},
			status: 404, typ: "not_found_error", code: "agent_not_found", param: "name"},
		{name: "unknown agent session list", path: "/a1/agents/ghost/sessions", user: "alice",
			status: 404, typ: "not_found_error", code: "agent_not_found", param: "name"},
		{name: "caller depth 3", method: "POST", path: "/a1/agents/helper/chat", body: chat, hdr: H{"GW-Caller-Depth": "3"},
			status: 400, typ: "invalid_request_error", code: "recursion_depth_exceeded", param: "headers.gw-caller-depth", ref: "spec Limits: depth 3 is rejected"},
		{name: "caller depth 3, streamed: a JSON error", method: "POST", path: "/a1/agents/helper/chat", body: map[string]any{"messages": chat["messages"], "stream": true},
			hdr: H{"GW-Caller-Depth": "3"}, status: 400, typ: "invalid_request_error", code: "recursion_depth_exceeded", param: "headers.gw-caller-depth"},
		{name: "caller depth 3 on a session message", method: "POST", path: "/a1/agents/plain/sessions/sess_00000000000000000000000000000000/messages", user: "alice",
			body: map[string]any{"message": "hi"}, hdr: H{"GW-Caller-Depth": "3"},
			status: 400, typ: "invalid_request_error", code: "recursion_depth_exceeded", param: "headers.gw-caller-depth", ref: "docs/decisions.md: honoured on session messages"},
		{name: "compact_keep_last_n 0", method: "POST", path: "/a1/agents/plain/sessions", user: "alice", body: map[string]any{"compact_keep_last_n": 0},
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.compact_keep_last_n", ref: "spec Limits: compact_keep_last_n at most 200"},
		{name: "compact_keep_last_n 201", method: "POST", path: "/a1/agents/plain/sessions", user: "alice", body: map[string]any{"compact_keep_last_n": 201},
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.compact_keep_last_n", ref: "spec Limits: compact_keep_last_n at most 200"},
		{name: "session list limit 0", path: "/a1/agents/plain/sessions?limit=0", user: "alice",
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "query.limit", ref: "docs/decisions.md: the /c1/conversations limits"},
		{name: "caller depth 9", method: "POST", path: "/a1/agents/plain/chat", body: chat, hdr: H{"GW-Caller-Depth": "9"},
			status: 400, typ: "invalid_request_error", code: "recursion_depth_exceeded", param: "headers.gw-caller-depth"},
		{name: "caller depth not a number", method: "POST", path: "/a1/agents/plain/chat", body: chat, hdr: H{"GW-Caller-Depth": "two"},
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "headers.gw-caller-depth", ref: "docs/decisions.md agent chat"},
		{name: "agent lists an unregistered tool", method: "POST", path: "/a1/agents/broken/chat", body: chat,
			status: 400, typ: "invalid_request_error", code: "agent_tool_not_registered", param: "tools"},
		{name: "missing messages", method: "POST", path: "/a1/agents/plain/chat", body: map[string]any{},
			status: 400, typ: "invalid_request_error", code: "missing_field", param: "body.messages", ref: "DECISIONS 8.2"},
		{name: "agent model not in the tenant allowlist", method: "POST", path: "/a1/agents/cloudy/chat", token: tokTiny, body: chat,
			status: 400, typ: "invalid_request_error", code: "model_not_in_allowlist", param: "model", ref: "spec Codes model_not_in_allowlist; DECISIONS 8.2"},
		{name: "user_id in an agent chat body", method: "POST", path: "/a1/agents/plain/chat", body: map[string]any{"messages": chat["messages"], "user_id": "eve"},
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.user_id", ref: "spec End-user identity 2"},
		{name: "user_id in a session query", path: "/a1/agents/plain/sessions?user_id=eve", user: "alice",
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "query.user_id", ref: "spec End-user identity 2"},
		{name: "user_id in a run body", method: "POST", path: "/a1/runs", user: "alice", body: map[string]any{"runtime": "coding-agent", "repo": a1Repo, "work_item": "x", "user_id": "eve"},
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.user_id", ref: "spec End-user identity 2"},
		{name: "user_id in a RAG write", method: "POST", path: "/a1/rag/indices/kb/documents", body: map[string]any{"documents": []any{map[string]any{"doc_id": "a", "text": "x"}}, "user_id": "eve"},
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.user_id", ref: "spec End-user identity 2"},
		{name: "GET on the chat route", path: "/a1/agents/plain/chat",
			status: 405, typ: "invalid_request_error", code: "method_not_allowed", param: noParam, ref: "docs/decisions.md: unknown routes and methods"},
		{name: "DELETE a session", method: "DELETE", path: "/a1/agents/plain/sessions/sess_00000000000000000000000000000000", user: "alice",
			status: 405, typ: "invalid_request_error", code: "method_not_allowed", param: noParam, ref: "docs/decisions.md: unknown routes and methods"},
		{name: "GET an index", path: "/a1/rag/indices/kb",
			status: 404, typ: "not_found_error", code: "route_not_found", param: anyParam},
		{name: "DELETE a run", method: "DELETE", path: "/a1/runs/run_00000000000000000000000000000000", user: "alice",
			status: 405, typ: "invalid_request_error", code: "method_not_allowed", param: noParam, ref: "docs/decisions.md: unknown routes and methods"},
		{name: "chat without agents:write", method: "POST", path: "/a1/agents/plain/chat", token: tokA1NoWrite, body: chat},
		{name: "session create without agents:write", method: "POST", path: "/a1/agents/plain/sessions", token: tokA1NoWrite, user: "alice", body: map[string]any{}},
		{name: "agent list without agents:read", path: "/a1/agents", token: tokA1NoRead},
		{name: "session list without agents:read", path: "/a1/agents/plain/sessions", token: tokA1NoRead, user: "alice"},
		{name: "rag write without rag:write", method: "POST", path: "/a1/rag/indices/kb/documents", token: tokA1NoWrite,
			body: map[string]any{"documents": []any{map[string]any{"doc_id": "a", "text": "x"}}}},
		{name: "rag read without rag:read", path: "/a1/rag/indices", token: tokA1NoRead},
		{name: "run create without runs:write", method: "POST", path: "/a1/runs", token: tokA1NoWrite, user: "alice",
			body: map[string]any{"runtime": "coding-agent", "repo": a1Repo, "work_item": "ISSUE-1"}},
		{name: "runtimes without runs:read", path: "/a1/runtimes", token: tokA1NoRead},
		{name: "run list without runs:read", path: "/a1/runs", token: tokA1NoRead, user: "alice"},
	}.withDefaults(tokMember, "").with(403, "permission_error", "forbidden", noParam, ref+" forbidden; DECISIONS 3 scopes"))

	// below the depth limit the chat is answered
	r = g.do(t, "POST", "/a1/agents/helper/chat", tokMember, "", chat, H{"GW-Caller-Depth": "2"})
	if wantStatus(t, r, 200, "spec Limits: depth below 3 is served") {
		if ch := listOf(r.JSON()["choices"]); len(ch) == 0 || textOf(ch[0]["message"].(map[string]any)) != upstreamtest.DefaultContent {
			t.Errorf("agent chat answer %s, want the fake's content", truncate(string(r.Body), 300))
		}
	}
	// the scopes a restricted token keeps still work
	wantStatus(t, g.get(t, "/a1/agents", tokA1NoWrite, ""), 200, "DECISIONS 3: agents:read without agents:write")
	wantStatus(t, g.get(t, "/a1/rag/indices", tokA1NoWrite, ""), 200, "DECISIONS 3: rag:read without rag:write")
}

func TestA1AgentToolLoop(t *testing.T) {
	t.Parallel()
	callOf := func(id, name, args string) []byte {
		return []byte(`{"id":"chatcmpl-local","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,` +
			`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function",` +
			`"function":{"name":"` + name + `","arguments":` + strconv.Quote(args) + `}}]},"finish_reason":"tool_calls"}],` +
			`"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`)
	}
	chunk := func(choices string) string {
		return `{"id":"chatcmpl-local","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":` + choices + `}`
	}
	streamedCall := []string{
		chunk(`[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_s1","type":"function","function":{"name":"current_time","arguments":""}}]},"finish_reason":null}]`),
		chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":null}]`),
		chunk(`[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`),
	}
	g := a1Start(t, func(s *setup) {
		s.Local.Script = []upstreamtest.Reply{
			{Body: callOf("call_t1", "current_time", `{"timezone":"UTC"}`)}, {Content: "It is noon UTC."}, // JSON chat: one tool round, then the answer
			{Events: streamedCall}, {}, // streamed chat: a streamed tool round, then the default answer streamed
			{}, // stream without tools
			{Body: callOf("call_x", "memory_forget", `{"key":"k"}`)}, {Content: "answered without tools"}, // a tool the agent does not list
			{Body: callOf("call_c1", "current_time", "{}")}, {Content: "capped answer"}, // max_tool_rounds 1
		}
	})
	// toolResult finds the tool message answering call id in an upstream body.
	toolResult := func(body map[string]any, id string) (assistant, tool map[string]any) {
		for _, m := range messagesOf(body) {
			if m["role"] == "assistant" {
				for _, c := range listOf(m["tool_calls"]) {
					if c["id"] == id {
						assistant = m
					}
				}
			}
			if m["role"] == "tool" && m["tool_call_id"] == id {
				tool = m
			}
		}
		return assistant, tool
	}

	t.Run("JSON", func(t *testing.T) {
		r := g.post(t, "/a1/agents/helper/chat", tokMember, "", userChat("What time is it?"))
		if !wantStatus(t, r, 200, "DECISIONS 7: agent chat with a tool loop") {
			return
		}
		wantJSON(t, r)
		ch := listOf(r.JSON()["choices"])
		if r.JSON()["object"] != "chat.completion" || len(ch) == 0 || textOf(ch[0]["message"].(map[string]any)) != "It is noon UTC." {
			t.Errorf("agent chat answer %s, want the final round's content \"It is noon UTC.\"", truncate(string(r.Body), 400))
		}
		bodies := chatBodies(t, g.Local)
		if len(bodies) != 2 {
			t.Fatalf("upstream chat calls %d, want 2 (the tool round and the answer)", len(bodies))
		}
		first := bodies[0]
		if tl := listOf(first["tools"]); len(tl) != 1 || mustJSON(tl[0]["function"].(map[string]any)["name"]) != `"current_time"` {
			t.Errorf("first round offered tools %v, want the agent's current_time", first["tools"])
		}
		if ms := messagesOf(first); len(ms) < 2 || ms[0]["role"] != "system" || textOf(ms[0]) != "You are a helpful agent." || textOf(ms[len(ms)-1]) != "What time is it?" {
			t.Errorf("first round messages %s, want the agent's system prompt then the user message", mustJSON(ms))
		}
		asst, tool := toolResult(bodies[1], "call_t1")
		if asst == nil || tool == nil {
			t.Fatalf("second upstream call lacks the assistant tool call and the tool result of call_t1: %s", mustJSON(messagesOf(bodies[1])))
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(textOf(tool)), &res); err != nil || str(res["now"]) == "" || res["timezone"] != "UTC" {
			t.Errorf("tool result %q, want current_time's {now, unix, timezone:UTC}", textOf(tool))
		} else if ts, err := time.Parse(time.RFC3339, str(res["now"])); err != nil || time.Since(ts).Abs() > time.Minute {
			t.Errorf("current_time answered %v, want about now", res["now"])
		}
	})

	t.Run("stream", func(t *testing.T) {
		b := userChat("And now?")
		b["stream"] = true
		r := g.post(t, "/a1/agents/helper/chat", tokMember, "", b)
		if !wantStatus(t, r, 200, "DECISIONS 8.29: agent chat streaming") {
			return
		}
		checkStream(t, r, "chatcmpl-local", false)
		bodies := chatBodies(t, g.Local)
		if len(bodies) != 4 {
			t.Fatalf("upstream chat calls %d, want 4", len(bodies))
		}
		if bodies[2]["stream"] != true || bodies[3]["stream"] != true {
			t.Errorf("streamed agent chat sent stream %v and %v upstream, want true", bodies[2]["stream"], bodies[3]["stream"])
		}
		if asst, tool := toolResult(bodies[3], "call_s1"); asst == nil || tool == nil || !strings.Contains(textOf(tool), `"now"`) {
			t.Errorf("the round after a streamed tool call lacks its result: %s", mustJSON(messagesOf(bodies[3])))
		}
	})

	t.Run("stream without tools", func(t *testing.T) {
		b := userChat("Hello")
		b["stream"] = true
		r := g.post(t, "/a1/agents/plain/chat", tokMember, "bob", b)
		if wantStatus(t, r, 200, "DECISIONS 8.29") {
			checkStream(t, r, "chatcmpl-local", false)
		}
		if last := lastBody(t, g.Local, "/chat/completions"); last["tools"] != nil {
			t.Errorf("an agent without tools offered tools upstream: %v", last["tools"])
		}
	})

	// notices of the tool loop (docs/decisions.md tool loop; spec Events 2: GW-Notice on a JSON answer)
	notice := []struct {
		name, agent, notice, content, ref string
	}{
		{"call of a tool the agent does not list is stripped", "helper", "tool_call_stripped", "answered without tools", "docs/decisions.md: stripped, asked again without tools"},
		{"tool loop capped", "capped", "tool_loop_capped", "capped answer", "docs/decisions.md: after max_tool_rounds one more call without tools"},
	}
	for _, c := range notice {
		t.Run(c.name, func(t *testing.T) {
			before := len(chatBodies(t, g.Local))
			r := g.post(t, "/a1/agents/"+c.agent+"/chat", tokMember, "", userChat("go"))
			if !wantStatus(t, r, 200, c.ref) {
				return
			}
			if ch := listOf(r.JSON()["choices"]); len(ch) == 0 || textOf(ch[0]["message"].(map[string]any)) != c.content {
				t.Errorf("answer %s, want %q", truncate(string(r.Body), 300), c.content)
			}
			if !strings.Contains(r.Header.Get("GW-Notice"), c.notice) {
				t.Errorf("GW-Notice %q, want %s (spec Events 2) [%s]", r.Header.Get("GW-Notice"), c.notice, c.ref)
			}
			bodies := chatBodies(t, g.Local)[before:]
			if len(bodies) != 2 || bodies[1]["tools"] != nil {
				t.Errorf("%d upstream calls, the last with tools %v; want 2, the last without tools [%s]", len(bodies), bodies[len(bodies)-1]["tools"], c.ref)
			}
		})
	}
}

func TestA1Sessions(t *testing.T) {
	t.Parallel()
	g := a1Start(t, nil)
	base := "/a1/agents/plain/sessions"

	// create
	r := g.post(t, base, tokMember, "alice", map[string]any{"compact_keep_last_n": 2})
	if !wantStatus(t, r, 201, "docs/decisions.md: session create answers 201") {
		t.FailNow()
	}
	wantJSON(t, r)
	s := r.JSON()
	sid := str(s["id"])
	if !strings.HasPrefix(sid, "sess_") || s["agent_name"] != "plain" || s["status"] != "live" || s["compact_keep_last_n"] != 2.0 ||
		s["successor_session_id"] != nil || s["user_id"] != "alice" || mustJSON(s["messages"]) != "[]" {
		t.Errorf("created session %s, want {id sess_..., agent_name plain, status live, compact_keep_last_n 2, successor null, messages []} (spec Agent session)", r.Body)
	}
	bobSid := str(a1Must(t, g.post(t, base, tokMember, "bob", nil)).JSON()["id"])
	otherAgentSid := str(a1Must(t, g.post(t, "/a1/agents/helper/sessions", tokMember, "alice", map[string]any{})).JSON()["id"])

	// lists are per user; a tenant admin without GW-User-Id sees the tenant
	if ids := a1Field(listData(g.get(t, base, tokMember, "alice")), "id"); !slices.Equal(ids, []string{sid}) {
		t.Errorf("alice's sessions %v, want [%s] (spec End-user identity 6)", ids, sid)
	}
	if ids := a1Field(listData(g.get(t, base, tokMember, "bob")), "id"); !slices.Equal(ids, []string{bobSid}) {
		t.Errorf("bob's sessions %v, want [%s]", ids, bobSid)
	}
	if ids := a1Field(listData(g.get(t, base, tokAdmin, "")), "id"); !slices.Contains(ids, sid) || !slices.Contains(ids, bobSid) {
		t.Errorf("tenant-wide view %v, want both users' sessions (DECISIONS 8.18)", ids)
	}

	// compaction with too few messages
	sp := base + "/" + sid
	wantErr(t, g.post(t, sp+"/compact", tokMember, "alice", nil), 409, "conflict_error", "session_compact_conflict", "session_id",
		"spec States: N or fewer live messages (none)")
	// messages
	r = g.post(t, sp+"/messages", tokMember, "alice", map[string]any{"message": "first"})
	if wantStatus(t, r, 200, "DECISIONS 8.15 session message") {
		if r.Header.Get("GW-Session-Id") != sid {
			t.Errorf("session message GW-Session-Id %q, want %s (docs/decisions.md)", r.Header.Get("GW-Session-Id"), sid)
		}
		if ch := listOf(r.JSON()["choices"]); len(ch) == 0 || textOf(ch[0]["message"].(map[string]any)) != upstreamtest.DefaultContent {
			t.Errorf("session message answer %s", truncate(string(r.Body), 300))
		}
	}
	wantErr(t, g.post(t, sp+"/compact", tokMember, "alice", nil), 409, "conflict_error", "session_compact_conflict", "session_id",
		"spec States: 2 messages with compact_keep_last_n 2")
	a1Must(t, g.post(t, sp+"/messages", tokMember, "alice", map[string]any{"message": "second"}))
	up := messagesOf(lastBody(t, g.Local, "/chat/completions"))
	if got := mustJSON(a1Roles(up)); got != `["system:You are plain.","user:first","assistant:`+upstreamtest.DefaultContent+`","user:second"]` {
		t.Errorf("upstream messages of the second turn %s, want the prompt, the stored turn and the new message", got)
	}
	r = g.get(t, sp, tokMember, "alice")
	if wantStatus(t, r, 200, "GET session") {
		if got := r.JSON(); got["message_count"] != 4.0 || len(listOf(got["messages"])) != 4 {
			t.Errorf("session after two turns: message_count %v, %d messages, want 4", got["message_count"], len(listOf(got["messages"])))
		}
	}

	// errors of every session path
	other := map[string]any{"message": "x"}
	runErrCases(t, g, errCases{
		{name: "other user's session get", path: sp, user: "bob"},
		{name: "other user's session messages", method: "POST", path: sp + "/messages", user: "bob", body: other},
		{name: "other user's session compact", method: "POST", path: sp + "/compact", user: "bob"},
		{name: "other user's session lineage", path: sp + "/lineage", user: "bob"},
		{name: "unknown session", path: base + "/sess_00000000000000000000000000000000", user: "alice"},
		{name: "other tenant", path: sp, token: tokGlobex, user: "alice"},
		{name: "session of another agent: get", path: "/a1/agents/helper/sessions/" + sid, user: "alice",
			status: 400, typ: "invalid_request_error", code: "session_agent_mismatch", ref: "spec Codes session_agent_mismatch"},
		{name: "session of another agent: message", method: "POST", path: "/a1/agents/plain/sessions/" + otherAgentSid + "/messages", user: "alice", body: other,
			status: 400, typ: "invalid_request_error", code: "session_agent_mismatch"},
		{name: "session of another agent: compact", method: "POST", path: "/a1/agents/helper/sessions/" + sid + "/compact", user: "alice",
			status: 400, typ: "invalid_request_error", code: "session_agent_mismatch"},
		{name: "message missing", method: "POST", path: sp + "/messages", user: "alice", body: map[string]any{},
			status: 400, typ: "invalid_request_error", code: "missing_field", param: "body.message", ref: "DECISIONS 8.2"},
	}.withDefaults(tokMember, "").with(404, "not_found_error", "session_not_found", "session_id", "spec Codes session_not_found; End-user identity 6"))

	// GW-User-Id on every sessions path (DECISIONS 8.9); a tenant admin may read without it (8.18), never write
	var noUser errCases
	for _, c := range []struct{ method, path string }{
		{"POST", base}, {"GET", base}, {"GET", sp}, {"POST", sp + "/messages"}, {"POST", sp + "/compact"}, {"GET", sp + "/lineage"},
	} {
		var body any
		if c.method == "POST" {
			body = map[string]any{"message": "x"}
			if !strings.HasSuffix(c.path, "/messages") {
				body = map[string]any{}
			}
		}
		noUser = append(noUser, errCase{name: "member " + c.method + " " + strings.TrimPrefix(c.path, base), method: c.method, path: c.path, body: body})
		if c.method == "POST" {
			noUser = append(noUser, errCase{name: "admin " + c.method + " " + strings.TrimPrefix(c.path, base), method: c.method, path: c.path, body: body, token: tokAdmin})
		}
	}
	runErrCases(t, g, noUser.withDefaults(tokMember, "").with(400, "invalid_request_error", "missing_field", "headers.gw-user-id", "spec End-user identity 3; DECISIONS 8.9"))
	wantStatus(t, g.get(t, sp, tokAdmin, ""), 200, "DECISIONS 8.18: tenant admin reads a session without GW-User-Id")

	// compaction: archived + successor
	g.Local.Enqueue(upstreamtest.Reply{Content: "SUMMARY-OF-FIRST"})
	r = g.post(t, sp+"/compact", tokMember, "alice", nil)
	if !wantStatus(t, r, 200, "spec States: compaction with more than compact_keep_last_n messages") {
		t.FailNow()
	}
	succ := r.JSON()
	succID := str(succ["id"])
	if succID == "" || succID == sid || succ["status"] != "live" || succ["predecessor_session_id"] != sid || succ["summary"] != "SUMMARY-OF-FIRST" ||
		succ["compact_keep_last_n"] != 2.0 || succ["agent_name"] != "plain" {
		t.Errorf("compaction answered %s, want the live successor with the summary and predecessor %s (spec States; docs/decisions.md)", r.Body, sid)
	}
	if got := mustJSON(a1Roles(listOf(succ["messages"]))); got != `["user:second","assistant:`+upstreamtest.DefaultContent+`"]` {
		t.Errorf("successor messages %s, want the last 2 (spec States: the most recent N messages are kept)", got)
	}
	old := g.get(t, sp, tokMember, "alice").JSON()
	if old["status"] != "archived" || old["successor_session_id"] != succID {
		t.Errorf("compacted session status %v successor %v, want archived and %s (spec Agent session)", old["status"], old["successor_session_id"], succID)
	}
	// the summary goes upstream with the successor's next turn
	a1Must(t, g.post(t, base+"/"+succID+"/messages", tokMember, "alice", map[string]any{"message": "third"}))
	up = messagesOf(lastBody(t, g.Local, "/chat/completions"))
	if len(up) < 2 || up[1]["role"] != "system" || !strings.Contains(textOf(up[1]), "SUMMARY-OF-FIRST") || textOf(up[len(up)-1]) != "third" {
		t.Errorf("successor turn sent %s, want the prompt, then the summary as a system message (docs/decisions.md), then the kept turn and the message", mustJSON(a1Roles(up)))
	}
	// lineage, oldest first, from either end
	want := []any{
		map[string]any{"id": sid, "status": "archived", "successor_session_id": succID},
		map[string]any{"id": succID, "status": "live", "successor_session_id": nil},
	}
	for _, id := range []string{sid, succID} {
		r = g.get(t, base+"/"+id+"/lineage", tokMember, "alice")
		if wantStatus(t, r, 200, "DECISIONS 8.15 lineage") && mustJSON(r.JSON()["sessions"]) != mustJSON(want) {
			t.Errorf("lineage of %s: %s, want %s oldest first (DECISIONS 8.15)", id, r.Body, mustJSON(want))
		}
	}
	// the archived session is read-only
	wantErr(t, g.post(t, sp+"/compact", tokMember, "alice", nil), 409, "conflict_error", "session_compact_conflict", "session_id",
		"spec States: archived session compaction")
	r = g.post(t, sp+"/messages", tokMember, "alice", map[string]any{"message": "late"})
	if wantErr(t, r, 409, "conflict_error", "session_compact_conflict", "session_id", "docs/decisions.md: archived sessions are read-only") && r.JSON()["successor_session_id"] != succID {
		t.Errorf("message to an archived session: successor_session_id %v, want %s (docs/decisions.md)", r.JSON()["successor_session_id"], succID)
	}

	// a streamed session message is stored like a JSON one
	r = g.post(t, base+"/"+succID+"/messages", tokMember, "alice", map[string]any{"message": "streamed", "stream": true})
	if wantStatus(t, r, 200, "DECISIONS 8.29") {
		checkStream(t, r, "chatcmpl-local", false)
		if r.Header.Get("GW-Session-Id") != succID {
			t.Errorf("streamed session message GW-Session-Id %q, want %s", r.Header.Get("GW-Session-Id"), succID)
		}
	}
	if n := g.get(t, base+"/"+succID, tokMember, "alice").JSON()["message_count"]; n != 6.0 {
		t.Errorf("successor message_count %v after two more turns, want 6 (2 kept + 4)", n)
	}

	// sessions survive a restart
	before := g.get(t, base+"/"+succID, tokMember, "alice").Body
	g.Restart()
	if after := g.get(t, base+"/"+succID, tokMember, "alice").Body; string(after) != string(before) {
		t.Errorf("session after a restart:\n%s\nwant\n%s (DECISIONS 2: a restart loses nothing)", after, before)
	}
	if r := g.get(t, sp+"/lineage", tokMember, "alice"); mustJSON(r.JSON()["sessions"]) != mustJSON(want) {
		t.Errorf("lineage after a restart: %s", r.Body)
	}
}

// a1Roles renders messages as "role:text".
func a1Roles(ms []map[string]any) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, str(m["role"])+":"+textOf(m))
	}
	return out
}

func TestA1RAG(t *testing.T) {
	t.Parallel()
	g := a1Start(t, nil)
	docs := func(ds ...[2]string) map[string]any {
		var list []any
		for _, d := range ds {
			list = append(list, map[string]any{"doc_id": d[0], "text": d[1]})
		}
		return map[string]any{"documents": list}
	}
	fox := [2]string{"fox", "The quick brown fox jumps over the lazy dog. The fox is quick."}
	den := [2]string{"den", "An old den under the oak tree, far from the town and next to the river bank, once sheltered a fox and its cubs."}
	gw1 := [2]string{"gw", "A gateway routes chat requests to model backends."}
	gw2 := [2]string{"gw", "The gateway forwards every chat request to one of its model backends."}
	misc := [2]string{"misc", "Completely unrelated text about cooking pasta."}
	// writeRes checks a write answer.
	writeRes := func(r *resp, id string, count, added, replaced, removed int, ref string) {
		t.Helper()
		if !wantStatus(t, r, 200, ref) {
			return
		}
		m := r.JSON()
		ix, _ := m["index"].(map[string]any)
		if ix == nil || ix["id"] != id || ix["document_count"] != float64(count) || m["added"] != float64(added) ||
			m["replaced"] != float64(replaced) || m["removed"] != float64(removed) {
			t.Errorf("%s\n  want index %s with %d documents, added %d, replaced %d, removed %d (docs/decisions.md RAG writes) [%s]", r, id, count, added, replaced, removed, ref)
		}
	}
	search := func(token, id, q string, k int) *resp {
		t.Helper()
		p := "/a1/rag/indices/" + id + "/search?q=" + url.QueryEscape(q)
		if k > 0 {
			p += "&k=" + strconv.Itoa(k)
		}
		return g.get(t, p, token, "")
	}
	hitIDs := func(r *resp) []string {
		t.Helper()
		if r.Status != 200 {
			t.Errorf("%s: want 200", r)
		}
		return a1Field(listData(r), "doc_id")
	}

	writeRes(g.post(t, "/a1/rag/indices/kb/documents", tokMember, "", docs(fox, gw1, misc)), "kb", 3, 3, 0, 0, "spec: full replace creates the index on first use")
	writeRes(g.post(t, "/a1/rag/indices/kb/documents/append", tokMember, "", docs(den, gw2)), "kb", 4, 1, 1, 0, "spec: append is incremental")
	writeRes(g.post(t, "/a1/rag/indices/notes/documents/append", tokMember, "", docs([2]string{"n1", "a note"})), "notes", 1, 1, 0, 0, "DECISIONS 8.15: append to a missing index creates it")

	r := g.get(t, "/a1/rag/indices", tokMember, "")
	if wantStatus(t, r, 200, "spec: GET /a1/rag/indices") {
		wantJSON(t, r)
		if ids := a1Field(listData(r), "id"); !slices.Equal(ids, []string{"kb", "notes"}) {
			t.Errorf("indices %v, want [kb notes] sorted by id", ids)
		}
	}
	r = g.get(t, "/a1/rag/indices/kb/documents", tokMember, "")
	if wantStatus(t, r, 200, "spec: GET /a1/rag/indices/{id}/documents") {
		data := listData(r)
		if ids := a1Field(data, "doc_id"); !slices.Equal(ids, []string{"den", "fox", "gw", "misc"}) {
			t.Errorf("documents %v, want [den fox gw misc] sorted by doc_id", ids)
		}
		for _, d := range data {
			if _, ok := d["text"]; ok {
				t.Errorf("document list shows the text of %v (docs/decisions.md: without texts)", d["doc_id"])
			}
			if d["doc_id"] == "fox" && d["size"] != float64(len(fox[1])) {
				t.Errorf("fox size %v, want %d", d["size"], len(fox[1]))
			}
		}
	}
	r = g.get(t, "/a1/rag/indices/kb/documents/gw", tokMember, "alice")
	if wantStatus(t, r, 200, "DECISIONS 8.15: GET a document") && r.JSON()["text"] != gw2[1] {
		t.Errorf("gw after append %s, want the appended text (append replaces the same doc_id)", r.Body)
	}

	// ranking: only passages holding a term; the doc where it weighs most first
	if ids := hitIDs(search(tokMember, "kb", "fox", 0)); !slices.Equal(ids, []string{"fox", "den"}) {
		t.Errorf("search fox: %v, want [fox den] (BM25: two occurrences in the shorter doc first; docs/decisions.md)", ids)
	}
	if ids := hitIDs(search(tokMember, "kb", "fox", 1)); !slices.Equal(ids, []string{"fox"}) {
		t.Errorf("search fox k=1: %v, want [fox]", ids)
	}
	r = search(tokMember, "kb", "Gateway backends", 0)
	if ids := hitIDs(r); !slices.Equal(ids, []string{"gw"}) {
		t.Errorf("search gateway: %v, want [gw]", ids)
	} else if h := listData(r)[0]; h["chunk"] != gw2[1] || h["chunk_index"] != 0.0 || h["score"].(float64) <= 0 {
		t.Errorf("hit %v, want chunk 0 with the text and a positive score", h)
	}
	if ids := hitIDs(search(tokMember, "kb", "zebra", 0)); len(ids) != 0 {
		t.Errorf("search zebra: %v, want no hits", ids)
	}
	// the rag_search tool answers what the endpoint answers (docs/decisions.md)
	r = g.post(t, "/v1/tools/execute", tokMember, "", map[string]any{"name": "rag_search", "arguments": map[string]any{"index": "kb", "query": "fox"}})
	if wantStatus(t, r, 200, "DECISIONS 7: rag_search") && !slices.Equal(a1Field(listData(r), "doc_id"), []string{"fox", "den"}) {
		t.Errorf("rag_search tool answered %s, want the hits fox, den", truncate(string(r.Body), 400))
	}

	// delete
	r = g.do(t, "DELETE", "/a1/rag/indices/kb/documents/misc", tokMember, "", nil, nil)
	if wantStatus(t, r, 200, "DECISIONS 8.15: DELETE a document") && mustJSON(r.JSON()) != `{"deleted":true,"doc_id":"misc","id":"kb"}` {
		t.Errorf("delete answered %s, want {deleted:true,id:kb,doc_id:misc}", r.Body)
	}
	// full replace drops what is not named
	writeRes(g.post(t, "/a1/rag/indices/kb/documents", tokMember, "", docs(fox, den)), "kb", 2, 0, 2, 1, "spec: full replace")
	if ids := hitIDs(search(tokMember, "kb", "gateway", 0)); len(ids) != 0 {
		t.Errorf("search gateway after a replace without gw: %v, want none", ids)
	}
	// an emptied index stays listed
	a1Must(t, g.do(t, "DELETE", "/a1/rag/indices/notes/documents/n1", tokMember, "", nil, nil))
	for _, ix := range listData(g.get(t, "/a1/rag/indices", tokMember, "")) {
		if ix["id"] == "notes" && ix["document_count"] != 0.0 {
			t.Errorf("notes after deleting its only document: %v, want listed with document_count 0", ix)
		}
	}

	// another tenant sees nothing of acme's, and its own index of the same id is separate
	if ids := a1Field(listData(g.get(t, "/a1/rag/indices", tokGlobex, "")), "id"); len(ids) != 0 {
		t.Errorf("globex lists indices %v, want none (spec RAG index: tenant-scoped)", ids)
	}
	doc := map[string]any{"documents": []any{map[string]any{"doc_id": "a", "text": "x"}}}
	runErrCases(t, g, errCases{
		{name: "other tenant: documents", path: "/a1/rag/indices/kb/documents", token: tokGlobex},
		{name: "other tenant: document", path: "/a1/rag/indices/kb/documents/fox", token: tokGlobexMem},
		{name: "other tenant: delete", method: "DELETE", path: "/a1/rag/indices/kb/documents/fox", token: tokGlobex},
		{name: "other tenant: search", path: "/a1/rag/indices/kb/search?q=fox", token: tokGlobex},
		{name: "unknown index: documents", path: "/a1/rag/indices/nope/documents"},
		{name: "unknown index: document", path: "/a1/rag/indices/nope/documents/fox"},
		{name: "unknown index: delete", method: "DELETE", path: "/a1/rag/indices/nope/documents/fox"},
		{name: "unknown index: search", path: "/a1/rag/indices/nope/search?q=fox"},
		{name: "unknown document", path: "/a1/rag/indices/kb/documents/misc",
			code: "document_not_found", param: "doc_id", ref: "spec Codes document_not_found"},
		{name: "unknown document: delete", method: "DELETE", path: "/a1/rag/indices/kb/documents/nope",
			code: "document_not_found", param: "doc_id", ref: "spec Codes document_not_found"},
		{name: "missing q", path: "/a1/rag/indices/kb/search", status: 400, typ: "invalid_request_error",
			code: "missing_field", param: "query.q", ref: "DECISIONS 8.2; docs/decisions.md search"},
		{name: "missing q, unknown index", path: "/a1/rag/indices/nope/search?k=2", status: 400, typ: "invalid_request_error",
			code: "missing_field", param: "query.q", ref: "docs/decisions.md: the query is validated before the index is looked up"},
		{name: "blank q", path: "/a1/rag/indices/kb/search?q=%20", status: 400, typ: "invalid_request_error", code: "invalid_field", param: "query.q"},
		{name: "k out of range", path: "/a1/rag/indices/kb/search?q=fox&k=0", status: 400, typ: "invalid_request_error", code: "invalid_field", param: "query.k"},
		{name: "documents missing", method: "POST", path: "/a1/rag/indices/kb/documents", body: map[string]any{},
			status: 400, typ: "invalid_request_error", code: "missing_field", param: "body.documents"},
		{name: "documents empty", method: "POST", path: "/a1/rag/indices/kb/documents/append", body: map[string]any{"documents": []any{}},
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.documents"},
		{name: "doc text missing", method: "POST", path: "/a1/rag/indices/kb/documents", body: map[string]any{"documents": []any{map[string]any{"doc_id": "a"}}},
			status: 400, typ: "invalid_request_error", code: "missing_field", param: "body.documents[0].text"},
		{name: "invalid index id on write", method: "POST", path: "/a1/rag/indices/-bad/documents", body: doc,
			status: 400, typ: "invalid_request_error", code: "invalid_field", param: "id"},
	}.withDefaults(tokMember, "").with(404, "not_found_error", "index_not_found", "id", "spec Codes index_not_found; docs/decisions.md RAG"))

	// indices survive a restart, searchable
	g.Restart()
	if ids := hitIDs(search(tokMember, "kb", "fox", 0)); !slices.Equal(ids, []string{"fox", "den"}) {
		t.Errorf("search fox after a restart: %v, want [fox den]", ids)
	}
	writeRes(g.post(t, "/a1/rag/indices/kb/documents", tokGlobex, "", docs(misc)), "kb", 1, 1, 0, 0, "globex's own kb")
	if ids := a1Field(listData(g.get(t, "/a1/rag/indices/kb/documents", tokMember, "")), "doc_id"); !slices.Equal(ids, []string{"den", "fox"}) {
		t.Errorf("acme's kb after globex wrote its own kb: %v, want [den fox]", ids)
	}
}

// runBody is a POST /a1/runs body.
func runBody(repo, workItem string) map[string]any {
	return map[string]any{"runtime": "coding-agent", "repo": repo, "work_item": workItem}
}

// a1WaitRun polls GET /a1/runs/{id} (as user of acme) until its status is one
// of want, and returns the run.
func a1WaitRun(t *testing.T, g *gw, user, id string, want ...string) map[string]any {
	t.Helper()
	var last *resp
	ok := waitFor(5*time.Second, func() bool {
		last = g.get(t, "/a1/runs/"+id, tokMember, user)
		return last.Status == 200 && slices.Contains(want, str(last.JSON()["status"]))
	})
	if !ok {
		t.Fatalf("run %s did not reach %v within 5 s: %s", id, want, last)
	}
	return last.JSON()
}

// lookPath skips the test when a program is not available.
func lookPath(t *testing.T, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		t.Skipf("%s not available: %v", prog, err)
	}
	return p
}

func TestA1RunsDisabled(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, cmd string }{{"unset", unset}, {"spaces only", "   "}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g := a1Start(t, func(s *setup) { s.Env["GATEWAY_CODING_AGENT_CMD"] = c.cmd })
			r := g.get(t, "/a1/runtimes", tokMember, "")
			if wantStatus(t, r, 200, "DECISIONS 7 runtimes") {
				wantJSON(t, r)
				if got := mustJSON(listData(r)); got != `[{"name":"coding-agent","runs":false},{"name":"chat","runs":false}]` {
					t.Errorf("runtimes %s, want coding-agent runs:false and chat runs:false without GATEWAY_CODING_AGENT_CMD (DECISIONS 7)", got)
				}
			}
			runErrCases(t, g, errCases{
				{name: "create", body: runBody(a1Repo, "ISSUE-1")},
				{name: "create, repo not on the allowlist either", body: runBody("https://github.com/acme/other", "ISSUE-1")},
				{name: "runtime chat", body: map[string]any{"runtime": "chat", "repo": a1Repo, "work_item": "ISSUE-1"},
					status: 400, typ: "invalid_request_error", code: "runtime_not_runnable", param: "body.runtime", ref: "spec Codes runtime_not_runnable"},
				{name: "work_item missing", body: map[string]any{"runtime": "coding-agent", "repo": a1Repo},
					status: 400, typ: "invalid_request_error", code: "missing_field", param: "body.work_item", ref: "DECISIONS 8.26"},
			}.withDefaults(tokMember, "alice").withMethod("POST", "/a1/runs").with(403, "permission_error", "coding_agent_disabled", noParam, "spec Codes coding_agent_disabled: off by default"))
			if n := len(listData(g.get(t, "/a1/runs", tokMember, "alice"))); n != 0 {
				t.Errorf("%d runs stored by refused creates, want 0", n)
			}
		})
	}
}

// withMethod sets method and path on the cases that leave them empty (or GET
// with an empty path).
func (cs errCases) withMethod(method, path string) errCases {
	for i := range cs {
		if cs[i].path == "" {
			cs[i].method, cs[i].path = method, path
		}
	}
	return cs
}

func TestA1Runs(t *testing.T) {
	t.Parallel()

	t.Run("succeeded", func(t *testing.T) {
		t.Parallel()
		env := lookPath(t, "/usr/bin/env")
		g := a1Start(t, func(s *setup) { s.Env["GATEWAY_CODING_AGENT_CMD"] = env })
		r := g.get(t, "/a1/runtimes", tokMember, "")
		if got := mustJSON(listData(r)); got != `[{"name":"coding-agent","runs":true},{"name":"chat","runs":false}]` {
			t.Errorf("runtimes %s, want coding-agent runs:true with GATEWAY_CODING_AGENT_CMD (DECISIONS 7)", got)
		}
		runErrCases(t, g, errCases{
			{name: "repo not allowed", body: runBody("https://github.com/acme/other", "ISSUE-1"),
				status: 403, typ: "permission_error", code: "coding_agent_repo_not_allowed", param: "body.repo"},
			{name: "http is another repo", body: runBody("http://github.com/acme/app", "ISSUE-1"),
				status: 403, typ: "permission_error", code: "coding_agent_repo_not_allowed", param: "body.repo", ref: "docs/decisions.md canonical repository URL"},
			{name: "tenant without an allowlist", token: tokGlobexMem, body: runBody(a1Repo, "ISSUE-1"),
				status: 403, typ: "permission_error", code: "coding_agent_repo_not_allowed", param: "body.repo", ref: "spec Codes: an empty list disables the runtime for the tenant"},
			{name: "runtime chat", body: map[string]any{"runtime": "chat", "repo": a1Repo, "work_item": "ISSUE-1"},
				status: 400, typ: "invalid_request_error", code: "runtime_not_runnable", param: "body.runtime"},
			{name: "runtime missing", body: map[string]any{"repo": a1Repo, "work_item": "ISSUE-1"},
				status: 400, typ: "invalid_request_error", code: "missing_field", param: "body.runtime"},
			{name: "runtime unknown", body: map[string]any{"runtime": "docker", "repo": a1Repo, "work_item": "ISSUE-1"},
				status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.runtime"},
			{name: "repo missing", body: map[string]any{"runtime": "coding-agent", "work_item": "ISSUE-1"},
				status: 400, typ: "invalid_request_error", code: "missing_field", param: "body.repo"},
			{name: "repo not a URL", body: runBody("acme/app", "ISSUE-1"),
				status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.repo"},
			{name: "work_item missing", body: map[string]any{"runtime": "coding-agent", "repo": a1Repo},
				status: 400, typ: "invalid_request_error", code: "missing_field", param: "body.work_item", ref: "DECISIONS 8.26"},
			{name: "work_item null", body: map[string]any{"runtime": "coding-agent", "repo": a1Repo, "work_item": nil},
				status: 400, typ: "invalid_request_error", code: "missing_field", param: "body.work_item", ref: "DECISIONS 8.26"},
			{name: "work_item with a control character", body: runBody(a1Repo, "a\nb"),
				status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.work_item"},
			{name: "work_item over 1024 bytes", body: runBody(a1Repo, strings.Repeat("w", 1025)),
				status: 400, typ: "invalid_request_error", code: "invalid_field", param: "body.work_item"},
			{name: "list limit 501", method: "GET", path: "/a1/runs?limit=501",
				status: 400, typ: "invalid_request_error", code: "invalid_field", param: "query.limit"},
			{name: "no GW-User-Id", user: "-", body: runBody(a1Repo, "ISSUE-1"),
				status: 400, typ: "invalid_request_error", code: "missing_field", param: "headers.gw-user-id", ref: "DECISIONS 8.26"},
			{name: "list without GW-User-Id", method: "GET", path: "/a1/runs", user: "-",
				status: 400, typ: "invalid_request_error", code: "missing_field", param: "headers.gw-user-id", ref: "DECISIONS 8.26"},
			{name: "cancel without GW-User-Id", method: "POST", path: "/a1/runs/run_00000000000000000000000000000000/cancel", token: tokAdmin, user: "-",
				status: 400, typ: "invalid_request_error", code: "missing_field", param: "headers.gw-user-id", ref: "DECISIONS 8.26: only tenant-admin reads omit it"},
			{name: "tenant admin without GW-User-Id", token: tokAdmin, user: "-", body: runBody(a1Repo, "ISSUE-1"),
				status: 400, typ: "invalid_request_error", code: "missing_field", param: "headers.gw-user-id", ref: "DECISIONS 8.26"},
		}.withDefaults(tokMember, "alice").withMethod("POST", "/a1/runs").noUser().with(0, "", "", "", "spec Codes"))

		r = g.post(t, "/a1/runs", tokMember, "alice", runBody("HTTPS://GitHub.com:443/Acme/App.git/", "ISSUE 7: fix it"))
		if !wantStatus(t, r, 201, "docs/decisions.md: POST /a1/runs answers 201 with the queued run") {
			t.FailNow()
		}
		wantJSON(t, r)
		run := r.JSON()
		id := str(run["id"])
		if !strings.HasPrefix(id, "run_") || run["status"] != "queued" || run["repo"] != a1Repo || run["runtime"] != "coding-agent" ||
			run["work_item"] != "ISSUE 7: fix it" || run["user_id"] != "alice" {
			t.Errorf("created run %s, want queued with the canonical repo %s (spec Run; DECISIONS 8.15)", r.Body, a1Repo)
		}
		done := a1WaitRun(t, g, "alice", id, "succeeded", "failed", "cancelled")
		if done["status"] != "succeeded" || done["exit_code"] != 0.0 || done["finished_at"] == nil {
			t.Errorf("run of %s: %v, want succeeded with exit_code 0 (DECISIONS 8.15: exit 0 is succeeded)", env, done)
		}
		out := str(done["output"])
		for _, kv := range []string{"GW_RUN_ID=" + id, "GW_RUN_REPO=" + a1Repo, "GW_RUN_WORK_ITEM=ISSUE 7: fix it", "GW_TENANT_ID=acme", "GW_USER_ID=alice"} {
			if !strings.Contains(out, kv+"\n") {
				t.Errorf("the command's environment lacks %s (DECISIONS 8.15):\n%s", kv, tail(out, 800))
			}
		}
		if strings.Contains(out, "GATEWAY_") || strings.Contains(out, "sk-clouda-secret-key") {
			t.Errorf("the command's environment holds gateway configuration or keys (docs/decisions.md execution):\n%s", tail(out, 800))
		}
		// another user's run is 404, on GET and cancel; the tenant admin sees it
		wantErr(t, g.get(t, "/a1/runs/"+id, tokMember, "bob"), 404, "not_found_error", "coding_agent_run_not_found", "run_id", "spec Codes coding_agent_run_not_found")
		wantStatus(t, g.get(t, "/a1/runs/"+id, tokAdmin, ""), 200, "DECISIONS 8.26: tenant-admin read")
		// a finished run's cancel answers it unchanged
		r = g.post(t, "/a1/runs/"+id+"/cancel", tokMember, "alice", nil)
		if wantStatus(t, r, 200, "docs/decisions.md: cancel of a finished run") && r.JSON()["status"] != "succeeded" {
			t.Errorf("cancel of a finished run %s, want it unchanged", r.Body)
		}
	})

	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		g := a1Start(t, func(s *setup) { s.Env["GATEWAY_CODING_AGENT_CMD"] = lookPath(t, "/bin/false") })
		id := str(a1Must(t, g.post(t, "/a1/runs", tokMember, "alice", runBody(a1Repo, "ISSUE-2"))).JSON()["id"])
		done := a1WaitRun(t, g, "alice", id, "succeeded", "failed", "cancelled")
		if done["status"] != "failed" || done["exit_code"] != 1.0 || done["reason"] != "exit code 1" {
			t.Errorf("run of /bin/false: %v, want failed, exit_code 1, reason \"exit code 1\" (DECISIONS 7; docs/decisions.md)", done)
		}
		// the work item is free again once the run ended
		wantStatus(t, g.post(t, "/a1/runs", tokMember, "alice", runBody(a1Repo, "ISSUE-2")), 201, "agent_busy only while queued or running")
	})

	t.Run("busy, cancel, restart", func(t *testing.T) {
		t.Parallel()
		sleep := lookPath(t, "/bin/sleep")
		g := a1Start(t, func(s *setup) {
			s.Env["GATEWAY_CODING_AGENT_CMD"] = sleep + " 5"
			s.Env["TMPDIR"] = t.TempDir() // the gw-run-* directory of a run cut by SIGKILL lands here
		})
		run1 := str(a1Must(t, g.post(t, "/a1/runs", tokMember, "alice", runBody(a1Repo, "ISSUE-1"))).JSON()["id"])
		a1WaitRun(t, g, "alice", run1, "running")
		wantErr(t, g.post(t, "/a1/runs", tokMember, "alice", runBody(a1Repo, "ISSUE-1")), 409, "conflict_error", "agent_busy", noParam,
			"spec Codes agent_busy")
		wantErr(t, g.post(t, "/a1/runs", tokMember, "bob", runBody("https://GITHUB.com/acme/app.git", "ISSUE-1")), 409, "conflict_error", "agent_busy", noParam,
			"DECISIONS 8.15: agent_busy is per tenant, repo and work item (across users, canonical repo)")
		run2 := str(a1Must(t, g.post(t, "/a1/runs", tokMember, "bob", runBody(a1Repo, "ISSUE-2"))).JSON()["id"])

		// other users' runs
		runErrCases(t, g, errCases{
			{name: "get as another user", path: "/a1/runs/" + run1, user: "bob"},
			{name: "cancel as another user", method: "POST", path: "/a1/runs/" + run1 + "/cancel", user: "bob"},
			{name: "get from another tenant", path: "/a1/runs/" + run1, token: tokGlobex},
			{name: "cancel from another tenant", method: "POST", path: "/a1/runs/" + run1 + "/cancel", token: tokGlobexMem, user: "alice"},
			{name: "unknown run", path: "/a1/runs/run_00000000000000000000000000000000", user: "alice"},
		}.withDefaults(tokMember, "").with(404, "not_found_error", "coding_agent_run_not_found", "run_id", "spec Codes coding_agent_run_not_found"))
		if ids := a1Field(listData(g.get(t, "/a1/runs", tokMember, "alice")), "id"); !slices.Equal(ids, []string{run1}) {
			t.Errorf("alice's runs %v, want [%s] (spec End-user identity 6)", ids, run1)
		}
		if ids := a1Field(listData(g.get(t, "/a1/runs", tokAdmin, "")), "id"); !slices.Equal(ids, []string{run2, run1}) {
			t.Errorf("tenant-wide runs %v, want [%s %s] newest first (DECISIONS 8.18)", ids, run2, run1)
		}

		// at most 4 runs execute at once: the fifth waits, and its cancel is immediate
		var carol []string
		for _, wi := range []string{"ISSUE-10", "ISSUE-11", "ISSUE-12"} {
			carol = append(carol, str(a1Must(t, g.post(t, "/a1/runs", tokMember, "carol", runBody(a1Repo, wi))).JSON()["id"]))
		}
		a1WaitRun(t, g, "bob", run2, "running")
		a1WaitRun(t, g, "carol", carol[0], "running")
		a1WaitRun(t, g, "carol", carol[1], "running")
		time.Sleep(50 * time.Millisecond)
		if st := g.get(t, "/a1/runs/"+carol[2], tokMember, "carol").JSON()["status"]; st != "queued" {
			t.Errorf("fifth run while four run: %v, want queued (docs/decisions.md: at most 4 runs execute at once)", st)
		}
		r := g.post(t, "/a1/runs/"+carol[2]+"/cancel", tokMember, "carol", nil)
		if wantStatus(t, r, 200, "DECISIONS 8.26 cancel") && (r.JSON()["status"] != "cancelled" || r.JSON()["reason"] != "cancelled by request before the run started") {
			t.Errorf("cancel of a queued run answered %s, want cancelled before the run started (docs/decisions.md cancel)", r.Body)
		}

		// cancel
		r = g.post(t, "/a1/runs/"+run1+"/cancel", tokMember, "alice", nil)
		if wantStatus(t, r, 200, "DECISIONS 8.26 cancel") && (r.JSON()["status"] != "cancelled" || !strings.HasPrefix(str(r.JSON()["reason"]), "cancelled by request")) {
			t.Errorf("cancel answered %s, want status cancelled (DECISIONS 7, 8.26)", r.Body)
		}
		if got := g.get(t, "/a1/runs/"+run1, tokMember, "alice").JSON(); got["status"] != "cancelled" || got["exit_code"] != nil || got["finished_at"] == nil {
			t.Errorf("run after cancel: %v, want cancelled, finished, without exit_code (killed by a signal; docs/decisions.md)", got)
		}
		// the other runs end now, so that only run3 outlives the SIGKILL below (its sleep then exits by itself)
		a1Must(t, g.post(t, "/a1/runs/"+run2+"/cancel", tokMember, "bob", nil))
		for _, id := range carol[:2] {
			a1Must(t, g.post(t, "/a1/runs/"+id+"/cancel", tokMember, "carol", nil))
		}
		run3 := str(a1Must(t, g.post(t, "/a1/runs", tokMember, "alice", runBody(a1Repo, "ISSUE-1"))).JSON()["id"])
		a1WaitRun(t, g, "alice", run3, "running")

		// gatewayd dies (SIGKILL) while run3 runs: failed on the next start
		g.a1Kill()
		g.Restart()
		got := g.get(t, "/a1/runs/"+run3, tokMember, "alice").JSON()
		if got["status"] != "failed" || got["reason"] != "gateway restarted while the run was running" {
			t.Errorf("run running when gatewayd was killed: %v, want failed with a reason after the restart (DECISIONS 7: runs survive a restart)", got)
		}
		if st := g.get(t, "/a1/runs/"+run1, tokMember, "alice").JSON()["status"]; st != "cancelled" {
			t.Errorf("cancelled run after the restart: %v, want cancelled", st)
		}
		// the work item is free again
		run4 := str(a1Must(t, g.post(t, "/a1/runs", tokMember, "alice", runBody(a1Repo, "ISSUE-1"))).JSON()["id"])
		a1WaitRun(t, g, "alice", run4, "running")
		// a clean stop (SIGTERM) fails the running run too
		g.Restart()
		got = g.get(t, "/a1/runs/"+run4, tokMember, "alice").JSON()
		if got["status"] != "failed" || !strings.HasPrefix(str(got["reason"]), "gateway shut down") {
			t.Errorf("run running at SIGTERM: %v, want failed, reason gateway shut down (docs/decisions.md restarts and shutdown)", got)
		}
	})
}

// noUser turns the user "-" of the cases into no GW-User-Id.
func (cs errCases) noUser() errCases {
	for i := range cs {
		if cs[i].user == "-" {
			cs[i].user = ""
		}
	}
	return cs
}

// a1Kill kills gatewayd with SIGKILL (no clean shutdown) and waits for it to
// exit; Restart then starts it again on the same data dir.
func (g *gw) a1Kill() {
	g.t.Helper()
	g.stopped = true
	if err := g.cmd.Process.Kill(); err != nil {
		g.t.Fatal(err)
	}
	<-g.exited
}

func TestA1AgentContext(t *testing.T) {
	t.Parallel()
	g := a1Start(t, func(s *setup) {
		s.Local.Script = []upstreamtest.Reply{
			{}, {}, // chat without, then with GW-User-Id
			{Body: []byte(`{"id":"chatcmpl-local","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,` +
				`"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_q","type":"function","function":{"name":"current_time","arguments":"{}"}}]},` +
				`"finish_reason":"tool_calls"}]}`)}, {Content: "first reply"}, // a session turn with a tool round
			{Content: "second reply"}, {Content: "SUMMARY"}, // a second turn, then the compaction's summary
		}
	})
	a1Must(t, g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "alice", map[string]any{"content": "ALICE-PROMPT"}, nil))

	// prompts are injected only with GW-User-Id (DECISIONS 8.9)
	a1Must(t, g.post(t, "/a1/agents/plain/chat", tokMember, "", userChat("hi")))
	a1Must(t, g.post(t, "/a1/agents/plain/chat", tokMember, "alice", userChat("hi")))
	bodies := chatBodies(t, g.Local)
	if strings.Contains(mustJSON(bodies[0]["messages"]), "ALICE-PROMPT") {
		t.Errorf("agent chat without GW-User-Id got alice's prompt: %s (DECISIONS 8.9: skipped without it)", mustJSON(bodies[0]["messages"]))
	}
	if !strings.Contains(mustJSON(bodies[1]["messages"]), "ALICE-PROMPT") || !strings.Contains(mustJSON(bodies[1]["messages"]), "You are plain.") {
		t.Errorf("agent chat with GW-User-Id alice sent %s, want alice's prompt and the agent's (docs/decisions.md agent chat)", mustJSON(bodies[1]["messages"]))
	}

	// a session turn stores the user message and the final reply only
	sid := str(a1Must(t, g.post(t, "/a1/agents/helper/sessions", tokMember, "alice", map[string]any{"compact_keep_last_n": 1})).JSON()["id"])
	sp := "/a1/agents/helper/sessions/" + sid
	a1Must(t, g.post(t, sp+"/messages", tokMember, "alice", map[string]any{"message": "what time?"}))
	s := g.get(t, sp, tokMember, "alice").JSON()
	if got := mustJSON(a1Roles(listOf(s["messages"]))); got != `["user:what time?","assistant:first reply"]` {
		t.Errorf("stored turn %s, want the user message and the final reply (docs/decisions.md: tool rounds are not stored)", got)
	}
	a1Must(t, g.post(t, sp+"/messages", tokMember, "alice", map[string]any{"message": "and then?"}))
	r := g.post(t, sp+"/compact", tokMember, "alice", map[string]any{})
	if wantStatus(t, r, 200, "compaction") {
		if got := mustJSON(a1Roles(listOf(r.JSON()["messages"]))); got != `["assistant:second reply"]` || r.JSON()["summary"] != "SUMMARY" {
			t.Errorf("successor %s, want the last message kept and the summary (spec States)", r.Body)
		}
	}
	bodies = chatBodies(t, g.Local)
	sum := bodies[len(bodies)-1]
	if sum["tools"] != nil || sum["stream"] == true || !strings.Contains(mustJSON(sum["messages"]), "what time?") {
		t.Errorf("summarisation call %s, want no tools, not streamed, with the older turns (docs/decisions.md compaction)", truncate(mustJSON(sum), 600))
	}

	// lists page like /c1/conversations
	for range 2 {
		a1Must(t, g.post(t, "/a1/agents/helper/sessions", tokMember, "alice", nil))
	}
	r = g.get(t, "/a1/agents/helper/sessions?limit=2&offset=1", tokMember, "alice")
	if m := r.JSON(); r.Status != 200 || len(listData(r)) != 2 || m["limit"] != 2.0 || m["offset"] != 1.0 || m["has_more"] != true {
		t.Errorf("%s\n  want 2 of 4 sessions, limit 2, offset 1, has_more true (docs/decisions.md sessions)", r)
	}
	if d := listData(r); len(d) > 0 {
		if _, ok := d[0]["messages"]; ok {
			t.Errorf("session list shows messages (docs/decisions.md: not in lists)")
		}
	}

	// RAG metadata travels with documents and hits
	a1Must(t, g.post(t, "/a1/rag/indices/meta/documents", tokMember, "", map[string]any{"documents": []any{
		map[string]any{"doc_id": "m1", "text": "metadata example", "metadata": map[string]any{"source": "wiki", "n": 3}}}}))
	if d := listData(g.get(t, "/a1/rag/indices/meta/documents", tokMember, "")); len(d) != 1 || mustJSON(d[0]["metadata"]) != `{"n":3,"source":"wiki"}` {
		t.Errorf("document list %v, want the metadata", d)
	}
	if h := listData(g.get(t, "/a1/rag/indices/meta/search?q=example", tokMember, "")); len(h) != 1 || mustJSON(h[0]["metadata"]) != `{"n":3,"source":"wiki"}` {
		t.Errorf("hits %v, want the document's metadata", h)
	}
}

func TestA1AgentCall(t *testing.T) {
	t.Parallel()
	call := func(id string) upstreamtest.Reply {
		return upstreamtest.Reply{Body: []byte(`{"id":"chatcmpl-local","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,` +
			`"message":{"role":"assistant","content":"","tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"agent_call",` +
			`"arguments":"{\"agent\":\"plain\",\"message\":\"ping\"}"}}]},"finish_reason":"tool_calls"}]}`)}
	}
	g := a1Start(t, func(s *setup) {
		s.Local.Script = []upstreamtest.Reply{
			call("call_a"), {Content: "pong"}, {Content: "caller done"}, // depth 0: caller -> plain -> caller
			call("call_b"), {Content: "caller done 2"}, // depth 2: agent_call would be depth 3
			{Content: "direct"}, // /v1/tools/execute
		}
	})
	tool := func(body map[string]any, id string) string {
		for _, m := range messagesOf(body) {
			if m["role"] == "tool" && m["tool_call_id"] == id {
				return textOf(m)
			}
		}
		return ""
	}

	r := g.post(t, "/a1/agents/caller/chat", tokMember, "", userChat("ask plain"))
	if wantStatus(t, r, 200, "DECISIONS 7 agent_call") {
		if ch := listOf(r.JSON()["choices"]); len(ch) == 0 || textOf(ch[0]["message"].(map[string]any)) != "caller done" {
			t.Errorf("answer %s, want \"caller done\"", truncate(string(r.Body), 300))
		}
	}
	bodies := chatBodies(t, g.Local)
	if len(bodies) != 3 {
		t.Fatalf("%d upstream calls, want 3 (caller, plain, caller)", len(bodies))
	}
	if got := mustJSON(a1Roles(messagesOf(bodies[1]))); got != `["system:You are plain.","user:ping"]` {
		t.Errorf("the called agent sent %s, want its own prompt and the message", got)
	}
	var res map[string]any
	if json.Unmarshal([]byte(tool(bodies[2], "call_a")), &res); res["agent"] != "plain" || res["reply"] != "pong" {
		t.Errorf("agent_call result %q, want {agent:plain, reply:pong} (docs/decisions.md agent_call)", tool(bodies[2], "call_a"))
	}

	// at depth 2 the nested call would be at depth 3: its error goes back to the model
	r = g.do(t, "POST", "/a1/agents/caller/chat", tokMember, "", userChat("ask plain"), H{"GW-Caller-Depth": "2"})
	wantStatus(t, r, 200, "docs/decisions.md: tool errors are fed back to the model")
	bodies = chatBodies(t, g.Local)
	if len(bodies) != 5 || !strings.Contains(tool(bodies[4], "call_b"), "recursion_depth_exceeded") {
		t.Errorf("%d upstream calls; tool result %q, want recursion_depth_exceeded fed back (DECISIONS 7: GW-Caller-Depth + 1; spec Limits)", len(bodies), tool(bodies[len(bodies)-1], "call_b"))
	}

	// through /v1/tools/execute
	r = g.post(t, "/v1/tools/execute", tokMember, "", map[string]any{"name": "agent_call", "arguments": map[string]any{"agent": "plain", "message": "hi"}})
	if wantStatus(t, r, 200, "docs/decisions.md agent_call") && (r.JSON()["agent"] != "plain" || r.JSON()["reply"] != "direct") {
		t.Errorf("agent_call through /v1/tools/execute: %s, want {agent:plain, reply:direct}", r.Body)
	}
	wantErr(t, g.post(t, "/v1/tools/execute", tokMember, "", map[string]any{"name": "agent_call", "arguments": map[string]any{"agent": "ghost", "message": "hi"}}),
		404, "not_found_error", "agent_not_found", "name", "spec Codes agent_not_found")
	wantErr(t, g.post(t, "/v1/tools/execute", tokA1NoWrite, "", map[string]any{"name": "agent_call", "arguments": map[string]any{"agent": "plain", "message": "hi"}}),
		403, "permission_error", "forbidden", noParam, "docs/decisions.md: agent_call needs agents:write")
}

func TestA1AgentUpstreamErrors(t *testing.T) {
	t.Parallel()
	g := a1Start(t, func(s *setup) {
		s.Local.Script = []upstreamtest.Reply{{Status: 500}, {Status: 500}, {Status: 400, ErrorMessage: "bad things"}}
	})
	wantErr(t, g.post(t, "/a1/agents/plain/chat", tokMember, "", userChat("hi")), 502, "api_error", "upstream_error", anyParam, "DECISIONS 8.13 (as on /v1)")
	b := userChat("hi")
	b["stream"] = true
	wantErr(t, g.post(t, "/a1/agents/helper/chat", tokMember, "", b), 502, "api_error", "upstream_error", anyParam,
		"docs/decisions.md: failures before the final round are ordinary JSON errors")
	wantErr(t, g.post(t, "/a1/agents/plain/chat", tokMember, "", userChat("hi")), 400, "invalid_request_error", "upstream_bad_request", anyParam, "DECISIONS 8.13")
}
