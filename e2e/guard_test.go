package e2e_test

// The tenant content guard from the outside (issue 14; DECISIONS 9.1; spec
// Codes content_blocked): gatewayd with a rules file, a fake moderation
// endpoint and a fake Llama Guard endpoint, tenants in block, audit and off
// modes, on every chat path, with the upstream fakes, the store and the log
// inspected afterwards.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Tokens of the guard token file (guardTokenFile), one member per tenant.
const (
	tokGuardBlock = "guard-block-token-00001" // member of gblock (content_guard block)
	tokGuardAudit = "guard-audit-token-00002" // member of gaudit (content_guard audit)
	tokGuardOff   = "guard-off-token-0000003" // member of goff (no content_guard: off)
	tokGuardQuota = "guard-quota-token-00004" // member of gquota (block, lm-4-scout-local 1 request a day)
)

// guardTokenFile is a token file with one tenant per content_guard mode
// (DECISIONS 3 settings.content_guard).
func guardTokenFile() map[string]any {
	return map[string]any{
		"tenants": []any{
			map[string]any{"id": "gblock", "settings": map[string]any{"content_guard": "block"}},
			map[string]any{"id": "gaudit", "settings": map[string]any{"content_guard": "audit"}},
			map[string]any{"id": "goff"},
			map[string]any{"id": "gquota", "settings": map[string]any{"content_guard": "block"},
				"quotas": map[string]any{"lm-4-scout-local": map[string]any{"requests_per_day": 1}}},
		},
		"tokens": []any{
			map[string]any{"token": tokGuardBlock, "tenant": "gblock", "role": "member"},
			map[string]any{"token": tokGuardAudit, "tenant": "gaudit", "role": "member"},
			map[string]any{"token": tokGuardOff, "tenant": "goff", "role": "member"},
			map[string]any{"token": tokGuardQuota, "tenant": "gquota", "role": "member"},
		},
	}
}

// guardRules is the rules file of most guard tests (DECISIONS 9.1 format).
const guardRules = `{
  "categories": {
    "violence": {"terms": ["massacre"]},
    "illicit":  {"terms": ["cook meth"], "patterns": ["(?i)\\bhotwire\\s+a\\s+car\\b"]},
    "hate":     {"terms": ["subhuman vermin"]}
  }
}
`

// guardAgent is the agent of the guard tests: no tools, a local model.
const guardAgent = `{"name":"guarded","description":"Talks.","model":"lm-4-scout-local","system_prompt":"You are a guarded agent.","tools":[]}`

// guardConf says which classifiers a guard gatewayd has.
type guardConf struct {
	rules      string     // rules file content; "" = no GATEWAY_GUARD_RULES
	moderation *guardFake // GATEWAY_GUARD_MODERATION_URL, or nil
	llamaGuard *guardFake // GATEWAY_GUARD_LLAMA_GUARD_URL, or nil
	timeout    string     // GATEWAY_GUARD_TIMEOUT, or "" for the default
	threshold  string     // GATEWAY_GUARD_THRESHOLD, or "" for the default
}

// guardStart starts gatewayd with the guard token file, the guarded agent and
// the classifiers of c; mod may change the setup further. It returns the
// path of the rules file too ("" without one).
func guardStart(t *testing.T, c guardConf, mod func(s *setup)) (*gw, string) {
	t.Helper()
	agents := t.TempDir()
	writeFile(t, filepath.Join(agents, "guarded.json"), guardAgent)
	var rulesPath string
	if c.rules != "" {
		rulesPath = filepath.Join(t.TempDir(), "rules.json")
		writeFile(t, rulesPath, c.rules)
	}
	g := start(t, func(s *setup) {
		s.Tokens = tokenFileJSON(guardTokenFile())
		s.Env["GATEWAY_AGENTS_DIR"] = agents
		if rulesPath != "" {
			s.Env["GATEWAY_GUARD_RULES"] = rulesPath
		}
		if c.moderation != nil {
			s.Env["GATEWAY_GUARD_MODERATION_URL"] = c.moderation.URL
			s.Env["GATEWAY_GUARD_MODERATION_API_KEY"] = guardModKey
			s.Env["GATEWAY_GUARD_MODERATION_MODEL"] = guardModModel
		}
		if c.llamaGuard != nil {
			s.Env["GATEWAY_GUARD_LLAMA_GUARD_URL"] = c.llamaGuard.URL
			s.Env["GATEWAY_GUARD_LLAMA_GUARD_API_KEY"] = guardLlamaKey
			s.Env["GATEWAY_GUARD_LLAMA_GUARD_MODEL"] = guardLlamaModel
		}
		if c.timeout != "" {
			s.Env["GATEWAY_GUARD_TIMEOUT"] = c.timeout
		}
		if c.threshold != "" {
			s.Env["GATEWAY_GUARD_THRESHOLD"] = c.threshold
		}
		if mod != nil {
			mod(s)
		}
	})
	return g, rulesPath
}

// The keys and models of the fake classifiers.
const (
	guardModKey     = "sk-guard-moderation-key"
	guardModModel   = "omni-moderation-latest"
	guardLlamaKey   = "sk-guard-llama-key"
	guardLlamaModel = "llama-guard-3-8b"
)

// ---- fake classifier endpoints ----

// guardFake is a recording fake of an OpenAI-compatible moderation endpoint
// (POST /v1/moderations, OpenAI's answer shape) or of a chat endpoint serving
// Llama Guard (POST /v1/chat/completions answering "safe" or "unsafe\nS..").
// Its answers are driven by markers in the classified texts:
//
//	[mod:<category>=<score>]  moderation: category_scores[category] = score
//	[modflag:<category>]      moderation: categories[category] = true (score stays low)
//	[lg:S1,S10]               Llama Guard: "unsafe\nS1,S10" (else "safe")
//	[fake-500]                answer 500
//	[fake-500-once]           answer 500 the first time this input is seen
//	[fake-hang]               never answer (until the caller gives up)
//	[fake-slow]               wait the fake's delay before answering
type guardFake struct {
	URL     string // base URL, ending in /v1
	llama   bool
	delay   time.Duration
	closing chan struct{}

	mu     sync.Mutex
	calls  []guardCall
	failed map[string]bool
}

// guardCall is one request a guardFake received.
type guardCall struct {
	Method, Path, Auth string
	Body               map[string]any
	Texts              []string // the texts it was asked about
	Images             int      // image parts (moderation)
}

func newGuardFake(t *testing.T, llama bool, delay time.Duration) *guardFake {
	t.Helper()
	f := &guardFake{llama: llama, delay: delay, closing: make(chan struct{}), failed: map[string]bool{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(f.closing) }) // first: releases hanging calls
	f.URL = srv.URL + "/v1"
	return f
}

var (
	modScoreRE = regexp.MustCompile(`\[mod:([a-z/-]+)=([0-9.]+)\]`)
	modFlagRE  = regexp.MustCompile(`\[modflag:([a-z/-]+)\]`)
	lgRE       = regexp.MustCompile(`\[lg:([A-Z0-9,]+)\]`)
)

// openAICategories are the category names of OpenAI's moderation answer.
var openAICategories = []string{"harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
	"self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "sexual/minors", "violence", "violence/graphic"}

func (f *guardFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	c := guardCall{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization")}
	json.Unmarshal(data, &c.Body)
	perText := true // moderation: one result per input string
	if f.llama {
		for _, m := range listOf(c.Body["messages"]) {
			c.Texts = append(c.Texts, textOf(m))
		}
	} else {
		switch in := c.Body["input"].(type) {
		case string:
			c.Texts = []string{in}
		case []any:
			for _, x := range in {
				switch p := x.(type) {
				case string:
					c.Texts = append(c.Texts, p)
				case map[string]any:
					perText = false
					if p["type"] == "text" {
						c.Texts = append(c.Texts, str(p["text"]))
					} else {
						c.Images++
					}
				}
			}
		}
	}
	all := strings.Join(c.Texts, "\n")
	f.mu.Lock()
	f.calls = append(f.calls, c)
	failOnce := strings.Contains(all, "[fake-500-once]") && !f.failed[all]
	if failOnce {
		f.failed[all] = true
	}
	f.mu.Unlock()

	switch {
	case strings.Contains(all, "[fake-hang]"):
		select {
		case <-r.Context().Done():
		case <-f.closing:
		}
		return
	case strings.Contains(all, "[fake-500]") || failOnce:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"the classifier broke","type":"server_error"}}`)
		return
	case strings.Contains(all, "[fake-slow]"):
		tm := time.NewTimer(f.delay)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-r.Context().Done():
			return
		case <-f.closing:
			return
		}
	}
	var answer any
	if f.llama {
		content := "safe"
		if m := lgRE.FindStringSubmatch(all); m != nil {
			content = "unsafe\n" + m[1]
		}
		answer = map[string]any{"id": "chatcmpl-llamaguard", "object": "chat.completion", "created": 1700000000, "model": c.Body["model"],
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 3, "total_tokens": 103}}
	} else {
		texts := c.Texts
		if !perText {
			texts = []string{all}
		}
		results := []any{}
		for _, text := range texts {
			results = append(results, moderationResult(text))
		}
		answer = map[string]any{"id": "modr-guardfake", "model": guardModModel, "results": results}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(answer)
}

// moderationResult is OpenAI's moderation result for text: every category
// false with a low score, except what text's markers say.
func moderationResult(text string) map[string]any {
	cats, scores := map[string]bool{}, map[string]float64{}
	for _, c := range openAICategories {
		cats[c], scores[c] = false, 0.0001
	}
	for _, m := range modScoreRE.FindAllStringSubmatch(text, -1) {
		scores[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	flagged := false
	for _, m := range modFlagRE.FindAllStringSubmatch(text, -1) {
		cats[m[1]], flagged = true, true
	}
	return map[string]any{"flagged": flagged, "categories": cats, "category_scores": scores}
}

// Calls returns the requests received so far.
func (f *guardFake) Calls() []guardCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// callsWith counts the requests whose texts hold s.
func (f *guardFake) callsWith(s string) int {
	n := 0
	for _, c := range f.Calls() {
		if strings.Contains(strings.Join(c.Texts, "\n"), s) {
			n++
		}
	}
	return n
}

// ---- log lines ----

// The messages of the content guard's log lines (issue 14; internal/preflight).
const (
	guardFlaggedMsg  = "content guard flagged the request"
	guardLetThruMsg  = "content guard could not classify the request: let through"
	rulesReloadedMsg = "content guard rules reloaded"
	rulesKeptMsg     = "content guard rules reload failed; keeping the old rules"
	catalogKeptMsg   = "token catalog reload failed; keeping the old catalog"
)

// logLines returns gatewayd's JSON log lines whose msg is msg.
func logLines(g *gw, msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(g.stderr.String(), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// linesFor returns the log lines with msg of request id.
func linesFor(g *gw, msg, id string) []map[string]any {
	var out []map[string]any
	for _, m := range logLines(g, msg) {
		if m["request_id"] == id {
			out = append(out, m)
		}
	}
	return out
}

// awaitLine waits (5 s at most) for a log line with msg of request id and
// returns it, or nil after reporting its absence.
func awaitLine(t *testing.T, g *gw, msg, id, ref string) map[string]any {
	t.Helper()
	var found []map[string]any
	waitFor(5*time.Second, func() bool { found = linesFor(g, msg, id); return len(found) > 0 })
	if len(found) == 0 {
		t.Errorf("no log line %q with request_id %s [%s]\nlog tail:\n%s", msg, id, ref, tail(g.stderr.String(), 1500))
		return nil
	}
	return found[0]
}

// awaitReload sends SIGHUP and waits for one more log line with msg.
func awaitReload(t *testing.T, g *gw, msg string) {
	t.Helper()
	before := len(logLines(g, msg))
	g.Signal(syscall.SIGHUP)
	if !waitFor(5*time.Second, func() bool { return len(logLines(g, msg)) > before }) {
		t.Fatalf("gatewayd did not log %q after SIGHUP (DECISIONS 9.1, 3):\n%s", msg, tail(g.stderr.String(), 1500))
	}
}

// ---- requests ----

// upstreamChats counts the chat calls of g's three upstream fakes.
func upstreamChats(g *gw) int {
	return chatCalls(g.Local) + chatCalls(g.CloudA) + chatCalls(g.CloudB)
}

// reqID is the X-Request-Id header id (echoed, DECISIONS 5), so that a
// request's log lines can be found.
func reqID(id string) H { return H{"X-Request-Id": id} }

// wantBlocked checks a content_blocked answer (spec Codes: 422
// invalid_request_error, param the flagged categories, sorted, comma-separated).
func wantBlocked(t *testing.T, r *resp, param, ref string) bool {
	t.Helper()
	return wantErr(t, r, 422, "invalid_request_error", "content_blocked", param, "spec Codes content_blocked; DECISIONS 9.1; "+ref)
}

// guardV1 is a /v1 chat body on the local alias.
func guardV1(content any) map[string]any {
	return map[string]any{"model": "lm-4-scout-local", "messages": []any{map[string]any{"role": "user", "content": content}}}
}

// guardC1 is a /c1 turn on the local alias, unary.
func guardC1(message any) map[string]any {
	return map[string]any{"message": message, "stream": false, "model": "lm-4-scout-local"}
}

// ---- start-up ----

// TestContentGuardStartup: a guarded tenant without a classifier, an unknown
// content_guard and a bad rules file stop gatewayd at start, naming the
// tenant, the value, or the file and the place; off tenants need no
// classifier.
func TestContentGuardStartup(t *testing.T) {
	t.Parallel()
	// tokensWith writes a token file with goff and tenant id in mode.
	tokensWith := func(t *testing.T, id, mode string) string {
		path := filepath.Join(t.TempDir(), "tokens.json")
		writeFile(t, path, tokenFileJSON(map[string]any{
			"tenants": []any{map[string]any{"id": "goff"}, map[string]any{"id": id, "settings": map[string]any{"content_guard": mode}}},
			"tokens": []any{map[string]any{"token": tokGuardOff, "tenant": "goff", "role": "member"},
				map[string]any{"token": tokGuardBlock, "tenant": id, "role": "member"}},
		}))
		return path
	}
	for _, mode := range []string{"block", "audit"} {
		t.Run(mode+" tenant without a classifier", func(t *testing.T) {
			t.Parallel()
			code, out := runToExit(t, map[string]string{"GATEWAY_TOKENS_FILE": tokensWith(t, "guarded-"+mode, mode), "GATEWAY_LOCAL_URL": ""})
			if code <= 0 {
				t.Fatalf("gatewayd with a %s tenant and no classifier: exit %d, want a refusal to start (DECISIONS 9.1: a start-up error)\n%s", mode, code, tail(out, 800))
			}
			if !strings.Contains(out, "guarded-"+mode) {
				t.Errorf("the refusal does not name the tenant guarded-%s (DECISIONS 9.1):\n%s", mode, tail(out, 800))
			}
		})
	}
	t.Run("unknown content_guard value", func(t *testing.T) {
		t.Parallel()
		rules := filepath.Join(t.TempDir(), "rules.json")
		writeFile(t, rules, guardRules)
		code, out := runToExit(t, map[string]string{"GATEWAY_TOKENS_FILE": tokensWith(t, "gstrict", "strict"), "GATEWAY_LOCAL_URL": "", "GATEWAY_GUARD_RULES": rules})
		if code <= 0 || !strings.Contains(out, "content_guard") || !strings.Contains(out, "strict") {
			t.Errorf("content_guard \"strict\": exit %d, want a refusal naming content_guard and the value (DECISIONS 3, 9.1: off, audit or block)\n%s", code, tail(out, 800))
		}
	})

	// Bad rules files (DECISIONS 9.1: "A bad file stops start-up naming the
	// file and the place"). place lists what the message must hold besides
	// the file's path.
	bad := []struct {
		name, content string
		place         []string
	}{
		{"invalid JSON", "{\"categories\": {\n  \"violence\": {\"terms\": [\"massacre\"]},\n  \"illicit\": {\"terms\": [\"x\"],}\n}}\n", []string{":3:"}},
		{"invalid RE2 pattern", "{\"categories\": {\n  \"violence\": {\"terms\": [\"massacre\"]},\n\n  \"illicit\": {\"patterns\": [\"(?i)hotwire(\"]}\n}}\n",
			[]string{":4:", `categories["illicit"].patterns[0]`}},
		{"unknown field", "{\"categories\": {\n  \"violence\": {\"term\": [\"massacre\"]}\n}}\n", []string{":2:", `categories["violence"]`, `"term"`}},
		{"empty term", "{\"categories\": {\n  \"hate\": {\"terms\": [\"ok\",\n    \"  \"]}\n}}\n", []string{":3:", `categories["hate"].terms[1]`}},
	}
	for _, c := range bad {
		t.Run("rules file: "+c.name, func(t *testing.T) {
			t.Parallel()
			rules := filepath.Join(t.TempDir(), "bad-rules.json")
			writeFile(t, rules, c.content)
			code, out := runToExit(t, map[string]string{"GATEWAY_TOKENS_FILE": tokensWith(t, "gblock", "block"), "GATEWAY_LOCAL_URL": "", "GATEWAY_GUARD_RULES": rules})
			if code <= 0 {
				t.Fatalf("gatewayd with a rules file with %s: exit %d, want a refusal to start (DECISIONS 9.1)\n%s", c.name, code, tail(out, 800))
			}
			for _, want := range append([]string{rules}, c.place...) {
				if !strings.Contains(out, want) {
					t.Errorf("the refusal does not name %s (DECISIONS 9.1: naming the file and the place):\n%s", want, tail(out, 800))
				}
			}
		})
	}
	t.Run("rules file missing", func(t *testing.T) {
		t.Parallel()
		rules := filepath.Join(t.TempDir(), "no-such-rules.json")
		code, out := runToExit(t, map[string]string{"GATEWAY_TOKENS_FILE": tokensWith(t, "gblock", "block"), "GATEWAY_LOCAL_URL": "", "GATEWAY_GUARD_RULES": rules})
		if code <= 0 || !strings.Contains(out, rules) {
			t.Errorf("GATEWAY_GUARD_RULES naming a missing file: exit %d, want a refusal naming it (DECISIONS 9.1)\n%s", code, tail(out, 800))
		}
	})

	t.Run("off tenants need no classifier", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.Tokens = tokensWithOff() })
		for _, tok := range []string{tokGuardOff, tokGuardBlock} {
			wantStatus(t, g.post(t, "/v1/chat/completions", tok, "", guardV1("tell me about the massacre")), 200,
				"DECISIONS 9.1: content_guard off (the default, or written out) classifies nothing")
			cfg := g.get(t, "/v1/tenant/config", tok, "").JSON()
			vals, _ := cfg["values"].(map[string]any)
			if vals["content_guard"] != "off" || mustJSON(vals["content_guard_classifiers"]) != "[]" {
				t.Errorf("tenant config of an off tenant: content_guard %v, content_guard_classifiers %v; want off and [] (issue 14 item 4)",
					vals["content_guard"], mustJSON(vals["content_guard_classifiers"]))
			}
		}
	})
}

// tokensWithOff is a token file with goff (no settings) and gexplicit
// (content_guard written out as "off"); tokGuardBlock is gexplicit's.
func tokensWithOff() string {
	return tokenFileJSON(map[string]any{
		"tenants": []any{map[string]any{"id": "goff"}, map[string]any{"id": "gexplicit", "settings": map[string]any{"content_guard": "off"}}},
		"tokens": []any{map[string]any{"token": tokGuardOff, "tenant": "goff", "role": "member"},
			map[string]any{"token": tokGuardBlock, "tenant": "gexplicit", "role": "member"}},
	})
}
