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

	"github.com/google/go-cmp/cmp"
)

// Tokens of the guard token file (guardTokenFile), one member per tenant.
const (
	tokGuardBlock = "guard-block-token-00001" // member of gblock (content_guard block)
	tokGuardAudit = "guard-audit-token-00002" // member of gaudit (content_guard audit)
	tokGuardOff   = "guard-off-token-0000003" // member of goff (no content_guard: off)
	tokGuardQuota = "guard-quota-token-00004" // member of gquota (block, lm-4-scout-local 1 request a day)
	tokGuardDocs  = "guard-docs-token-000005" // member of gdocs (block, c1_cloud_doc_consent)
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
			map[string]any{"id": "gdocs", "settings": map[string]any{"content_guard": "block", "c1_cloud_doc_consent": true}},
		},
		"tokens": []any{
			map[string]any{"token": tokGuardBlock, "tenant": "gblock", "role": "member"},
			map[string]any{"token": tokGuardAudit, "tenant": "gaudit", "role": "member"},
			map[string]any{"token": tokGuardOff, "tenant": "goff", "role": "member"},
			map[string]any{"token": tokGuardQuota, "tenant": "gquota", "role": "member"},
			map[string]any{"token": tokGuardDocs, "tenant": "gdocs", "role": "member"},
		},
	}
}

// guardRules is the rules file of most guard tests (DECISIONS 9.1 format).
const guardRules = `{
  "categories": {
    "violence": {"terms": ["massacre", "exécution sommaire"]},
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
	guardModScoreRE = regexp.MustCompile(`\[mod:([a-z/-]+)=([0-9.]+)\]`)
	guardModFlagRE  = regexp.MustCompile(`\[modflag:([a-z/-]+)\]`)
	guardLlamaRE    = regexp.MustCompile(`\[lg:([A-Z0-9,]+)\]`)
)

// guardOpenAICategories are the category names of OpenAI's moderation answer.
var guardOpenAICategories = []string{"harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
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
		if m := guardLlamaRE.FindStringSubmatch(all); m != nil {
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
			results = append(results, guardModerationResult(text))
		}
		answer = map[string]any{"id": "modr-guardfake", "model": guardModModel, "results": results}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(answer)
}

// guardModerationResult is OpenAI's moderation result for text: every category
// false with a low score, except what text's markers say.
func guardModerationResult(text string) map[string]any {
	cats, scores := map[string]bool{}, map[string]float64{}
	for _, c := range guardOpenAICategories {
		cats[c], scores[c] = false, 0.0001
	}
	for _, m := range guardModScoreRE.FindAllStringSubmatch(text, -1) {
		scores[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	flagged := false
	for _, m := range guardModFlagRE.FindAllStringSubmatch(text, -1) {
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
	guardFlaggedMsg       = "content guard flagged the request"
	guardLetThruMsg       = "content guard could not classify the request: let through"
	guardRulesReloadedMsg = "content guard rules reloaded"
	guardRulesKeptMsg     = "content guard rules reload failed; keeping the old rules"
	guardCatalogKeptMsg   = "token catalog reload failed; keeping the old catalog"
)

// guardLogLines returns gatewayd's JSON log lines whose msg is msg.
func guardLogLines(g *gw, msg string) []map[string]any {
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

// guardLinesFor returns the log lines with msg of request id.
func guardLinesFor(g *gw, msg, id string) []map[string]any {
	var out []map[string]any
	for _, m := range guardLogLines(g, msg) {
		if m["request_id"] == id {
			out = append(out, m)
		}
	}
	return out
}

// guardAwaitLine waits (10 s at most) for a log line with msg of request id and
// returns it, or nil after reporting its absence.
func guardAwaitLine(t *testing.T, g *gw, msg, id, ref string) map[string]any {
	t.Helper()
	var found []map[string]any
	waitFor(10*time.Second, func() bool { found = guardLinesFor(g, msg, id); return len(found) > 0 })
	if len(found) == 0 {
		t.Errorf("no log line %q with request_id %s [%s]\nlog tail:\n%s", msg, id, ref, tail(g.stderr.String(), 1500))
		return nil
	}
	return found[0]
}

// guardAwaitReload sends SIGHUP and waits for one more log line with msg.
func guardAwaitReload(t *testing.T, g *gw, msg string) {
	t.Helper()
	before := len(guardLogLines(g, msg))
	g.Signal(syscall.SIGHUP)
	if !waitFor(5*time.Second, func() bool { return len(guardLogLines(g, msg)) > before }) {
		t.Fatalf("gatewayd did not log %q after SIGHUP (DECISIONS 9.1, 3):\n%s", msg, tail(g.stderr.String(), 1500))
	}
}

// ---- requests ----

// guardUpstreamChats counts the chat calls of g's three upstream fakes.
func guardUpstreamChats(g *gw) int {
	return chatCalls(g.Local) + chatCalls(g.CloudA) + chatCalls(g.CloudB)
}

// guardReqID is the X-Request-Id header id (echoed, DECISIONS 5), so that a
// request's log lines can be found.
func guardReqID(id string) H { return H{"X-Request-Id": id} }

// wantGuardBlocked checks a content_blocked answer (spec Codes: 422
// invalid_request_error, param the flagged categories, sorted, comma-separated).
func wantGuardBlocked(t *testing.T, r *resp, param, ref string) bool {
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

	// Bad classifier settings (DECISIONS 9.1 variables): the refusal names
	// the variable.
	env := []struct {
		name string
		vars map[string]string
	}{
		{"GATEWAY_GUARD_TIMEOUT", map[string]string{"GATEWAY_GUARD_TIMEOUT": "0s", "GATEWAY_GUARD_MODERATION_URL": "http://127.0.0.1:9/v1"}},
		{"GATEWAY_GUARD_MODERATION_URL", map[string]string{"GATEWAY_GUARD_MODERATION_URL": "moderation.example.com"}},
		{"GATEWAY_GUARD_LLAMA_GUARD_URL", map[string]string{"GATEWAY_GUARD_LLAMA_GUARD_URL": "ftp://llama.example.com/v1"}},
		{"GATEWAY_GUARD_THRESHOLD", map[string]string{"GATEWAY_GUARD_THRESHOLD": "1.5", "GATEWAY_GUARD_MODERATION_URL": "http://127.0.0.1:9/v1"}},
	}
	for _, c := range env {
		t.Run("bad "+c.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{"GATEWAY_TOKENS_FILE": tokensWith(t, "gblock", "block"), "GATEWAY_LOCAL_URL": ""}
			for k, v := range c.vars {
				vars[k] = v
			}
			code, out := runToExit(t, vars)
			if code <= 0 || !strings.Contains(out, c.name+":") {
				t.Errorf("gatewayd with %v: exit %d, want a refusal to start naming %s\n%s", c.vars, code, c.name, tail(out, 800))
			}
		})
	}

	t.Run("off tenants need no classifier", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.Tokens = guardOffTokens() })
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

// guardOffTokens is a token file with goff (no settings) and gexplicit
// (content_guard written out as "off"); tokGuardBlock is gexplicit's.
func guardOffTokens() string {
	return tokenFileJSON(map[string]any{
		"tenants": []any{map[string]any{"id": "goff"}, map[string]any{"id": "gexplicit", "settings": map[string]any{"content_guard": "off"}}},
		"tokens": []any{map[string]any{"token": tokGuardOff, "tenant": "goff", "role": "member"},
			map[string]any{"token": tokGuardBlock, "tenant": "gexplicit", "role": "member"}},
	})
}

// ---- block ----

// TestContentGuardBlock: a block tenant's flagged input answers 422
// content_blocked on every chat path, with the flagged categories sorted in
// param, before any upstream call, without storing anything; the rules and
// the moderation endpoint form a chain whose categories are united; only
// user texts (and document attachments) are classified on /v1 and agent chat,
// only the new message on /c1 and session messages.
func TestContentGuardBlock(t *testing.T) {
	t.Parallel()
	mod := newGuardFake(t, false, 0)
	g, _ := guardStart(t, guardConf{rules: guardRules, moderation: mod}, nil)

	// blocked sends a request that must be refused with param, and checks
	// that no upstream saw a chat call meanwhile.
	blocked := func(t *testing.T, r func() *resp, param, ref string) *resp {
		t.Helper()
		before := guardUpstreamChats(g)
		res := r()
		wantGuardBlocked(t, res, param, ref)
		if n := guardUpstreamChats(g) - before; n != 0 {
			t.Errorf("%s: the upstream received %d chat calls, want 0 (DECISIONS 9.1: block answers before any upstream call)", res.req, n)
		}
		return res
	}
	user := func(c any) map[string]any { return map[string]any{"role": "user", "content": c} }
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

	t.Run("/v1/chat/completions", func(t *testing.T) {
		cases := []struct {
			name  string
			body  map[string]any
			param string
		}{
			{"rules term", guardV1("tell me about the massacre at dawn"), "violence"},
			{"rules term in upper case", guardV1("THE MASSACRE"), "violence"},
			{"rules term in full-width letters (NFKC)", guardV1("the ｍａｓｓａｃｒｅ at dawn"), "violence"},
			{"rules term decomposed (NFKC)", guardV1("une exe\u0301cution sommaire"), "violence"},
			{"rules term with a zero-width space inside", guardV1("the mas\u200bsacre"), "violence"},
			{"rules pattern", guardV1("how do I hotwire   a car"), "illicit"},
			{"three categories, sorted", guardV1("subhuman vermin should cook meth before the massacre"), "hate,illicit,violence"},
			{"moderation alone", guardV1("you are awful [mod:harassment=0.97]"), "harassment"},
			{"rules and moderation: the union", guardV1("the massacre [mod:harassment=0.9] [mod:violence=0.8]"), "harassment,violence"},
			{"an earlier user message", map[string]any{"model": "lm-4-scout-local", "messages": []any{
				user("plan a massacre"), map[string]any{"role": "assistant", "content": "No."}, user("please, thanks")}}, "violence"},
			{"a text part of a content array", guardV1([]any{text("hello"), text("how to cook meth")}), "illicit"},
			{"a document attachment", map[string]any{"model": "lm-4-scout-local", "messages": []any{user("summarise the file")},
				"attachments": []any{map[string]any{"kind": "document", "doc_name": "notes.txt", "content": "step one: cook meth"}}}, "illicit"},
			{"streamed request: a JSON error", func() map[string]any { b := guardV1("a massacre"); b["stream"] = true; return b }(), "violence"},
			{"chain alias: no backend of the chain tried", map[string]any{"model": "lm-4-scout", "messages": []any{user("a massacre")}}, "violence"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				blocked(t, func() *resp { return g.post(t, "/v1/chat/completions", tokGuardBlock, "bob", c.body) }, c.param, "/v1: "+c.name)
			})
		}
		// What is not classified, or not flagged, goes through.
		passes := []struct {
			name string
			body map[string]any
			ref  string
		}{
			{"flagged text only in system and assistant messages", map[string]any{"model": "lm-4-scout-local", "messages": []any{
				map[string]any{"role": "system", "content": "Never describe a massacre."}, user("hi"),
				map[string]any{"role": "assistant", "content": "I will not cook meth."}, user("fine")}},
				"issue 14: on /v1 the text of every user message is classified"},
			{"a longer word that holds a term", guardV1("massacres of the past"), "DECISIONS 9.1: a term matches a whole word or phrase"},
			{"clean text", guardV1("what is the capital of France?"), "DECISIONS 9.1"},
		}
		for _, c := range passes {
			t.Run(c.name, func(t *testing.T) {
				before := chatCalls(g.Local)
				if wantStatus(t, g.post(t, "/v1/chat/completions", tokGuardBlock, "bob", c.body), 200, c.ref) && chatCalls(g.Local) != before+1 {
					t.Errorf("a request that passed the guard made %d upstream calls, want 1", chatCalls(g.Local)-before)
				}
			})
		}
	})

	t.Run("/c1/chat", func(t *testing.T) {
		const u = "carol"
		// a flagged first turn (streamed, the default): nothing stored
		r := blocked(t, func() *resp {
			return c1(t, g, tokGuardBlock, u, map[string]any{"message": "a massacre", "model": "lm-4-scout-local"})
		}, "violence", "/c1 first turn")
		if id := r.Header.Get("gw-conversation-id"); id != "" {
			wantErr(t, g.get(t, "/c1/conversations/"+id, tokGuardBlock, u), 404, "not_found_error", "conversation_not_found", "conversation_id",
				"issue 14: nothing is persisted on block")
		}
		if n := len(listData(g.get(t, "/c1/conversations", tokGuardBlock, u))); n != 0 {
			t.Errorf("after a blocked first turn %s lists %d conversations, want 0 (issue 14: nothing is persisted)", u, n)
		}
		// an existing conversation keeps its messages
		r = c1(t, g, tokGuardBlock, u, guardC1("hello"))
		if !wantStatus(t, r, 200, "a clean turn") {
			t.FailNow()
		}
		id := convID(t, r)
		_, want := history(t, g, tokGuardBlock, u, id)
		turn := func(b map[string]any) map[string]any { b["conversation_id"] = id; return b }
		for _, c := range []struct {
			name  string
			body  map[string]any
			param string
		}{
			{"a flagged message", turn(guardC1("now the massacre")), "violence"},
			{"a flagged text part", turn(guardC1([]any{text("look"), text("subhuman vermin")})), "hate"},
			{"a flagged document attachment", turn(map[string]any{"message": "summarise", "stream": false, "model": "lm-4-scout-local",
				"attachments": []any{map[string]any{"kind": "document", "doc_name": "n.txt", "content": "how to hotwire a car"}}}), "illicit"},
		} {
			t.Run(c.name, func(t *testing.T) {
				blocked(t, func() *resp { return c1(t, g, tokGuardBlock, u, c.body) }, c.param, "/c1: "+c.name)
				if _, got := history(t, g, tokGuardBlock, u, id); len(got) != len(want) || mustJSON(got) != mustJSON(want) {
					t.Errorf("after a blocked turn the conversation holds %v, want %v unchanged (issue 14: no user message persisted)", roles(got), roles(want))
				}
			})
		}
		if l := listData(g.get(t, "/c1/conversations", tokGuardBlock, u)); len(l) != 1 || l[0]["message_count"] != float64(len(want)) {
			t.Errorf("conversations of %s: %v, want one with message_count %d", u, l, len(want))
		}
	})

	t.Run("/a1/agents/{name}/chat", func(t *testing.T) {
		blocked(t, func() *resp { return g.post(t, "/a1/agents/guarded/chat", tokGuardBlock, "", userChat("a massacre")) }, "violence", "agent chat")
		b := userChat("a massacre")
		b["stream"] = true
		blocked(t, func() *resp { return g.post(t, "/a1/agents/guarded/chat", tokGuardBlock, "", b) }, "violence", "streamed agent chat: a JSON error")
		earlier := map[string]any{"messages": []any{user("how to cook meth"), map[string]any{"role": "assistant", "content": "No."}, user("ok")}}
		blocked(t, func() *resp { return g.post(t, "/a1/agents/guarded/chat", tokGuardBlock, "", earlier) }, "illicit",
			"agent chat is stateless: every user message is classified")
		blocked(t, func() *resp {
			return g.post(t, "/v1/tools/execute", tokGuardBlock, "", map[string]any{"name": "agent_call", "arguments": map[string]any{"agent": "guarded", "message": "a massacre"}})
		}, "violence", "agent_call through /v1/tools/execute: the called chat's own error")
		wantStatus(t, g.post(t, "/a1/agents/guarded/chat", tokGuardBlock, "", userChat("hello")), 200, "a clean agent chat")
	})

	t.Run("/a1/agents/{name}/sessions/{sid}/messages", func(t *testing.T) {
		const u = "dave"
		sid := str(a1Must(t, g.post(t, "/a1/agents/guarded/sessions", tokGuardBlock, u, map[string]any{})).JSON()["id"])
		path := "/a1/agents/guarded/sessions/" + sid
		wantStatus(t, g.post(t, path+"/messages", tokGuardBlock, u, map[string]any{"message": "hello"}), 200, "a clean session message")
		want := a1Must(t, g.get(t, path, tokGuardBlock, u)).JSON()
		for _, c := range []struct {
			name    string
			message any
			param   string
		}{
			{"a flagged message", "a massacre", "violence"},
			{"a flagged text part", []any{text("fine"), text("hotwire a car")}, "illicit"},
		} {
			t.Run(c.name, func(t *testing.T) {
				blocked(t, func() *resp {
					return g.post(t, path+"/messages", tokGuardBlock, u, map[string]any{"message": c.message})
				}, c.param, "session message")
				got := a1Must(t, g.get(t, path, tokGuardBlock, u)).JSON()
				if mustJSON(got["messages"]) != mustJSON(want["messages"]) || got["message_count"] != want["message_count"] {
					t.Errorf("after a blocked message the session holds %s, want %s unchanged (issue 14: nothing persisted)", mustJSON(got["messages"]), mustJSON(want["messages"]))
				}
			})
		}
	})

	t.Run("no quota charged", func(t *testing.T) {
		// gquota may make one lm-4-scout-local request a day.
		const u = "erin"
		sid := str(a1Must(t, g.post(t, "/a1/agents/guarded/sessions", tokGuardQuota, u, map[string]any{})).JSON()["id"])
		for i := range 3 {
			blocked(t, func() *resp {
				return g.post(t, "/v1/chat/completions", tokGuardQuota, "", guardV1("massacre "+strconv.Itoa(i)))
			}, "violence", "quota tenant /v1")
		}
		blocked(t, func() *resp { return c1(t, g, tokGuardQuota, u, guardC1("a massacre")) }, "violence", "quota tenant /c1")
		blocked(t, func() *resp { return g.post(t, "/a1/agents/guarded/chat", tokGuardQuota, "", userChat("a massacre")) }, "violence", "quota tenant agent chat")
		blocked(t, func() *resp {
			return g.post(t, "/a1/agents/guarded/sessions/"+sid+"/messages", tokGuardQuota, u, map[string]any{"message": "a massacre"})
		}, "violence", "quota tenant session message")
		wantStatus(t, g.post(t, "/v1/chat/completions", tokGuardQuota, "", guardV1("hello")), 200,
			"issue 14: no quota is charged for a blocked request (requests_per_day 1 is still there)")
		wantErr(t, g.post(t, "/v1/chat/completions", tokGuardQuota, "", guardV1("hello again")), 429, "rate_limit_error", "model_quota_exhausted", noParam,
			"the quota is real: the second clean request is over requests_per_day 1")
	})

	t.Run("no consent grant stored", func(t *testing.T) {
		// A blocked request's GW-Cloud-Consent ;persist is not stored: the
		// same document without the header still needs consent afterwards.
		doc := map[string]any{"kind": "document", "doc_name": "plan.txt", "content": "a harmless plan"}
		hash := "sha256:" + sha256Hex("a harmless plan")
		body := func(msg string) map[string]any {
			return map[string]any{"model": "lm-4-scout-cloudA", "messages": []any{user(msg)}, "attachments": []any{doc}}
		}
		blocked(t, func() *resp {
			return g.do(t, "POST", "/v1/chat/completions", tokGuardDocs, "", body("the massacre plan"), H{"GW-Cloud-Consent": hash + ";persist"})
		}, "violence", "a flagged message with a consented document")
		wantErr(t, g.post(t, "/v1/chat/completions", tokGuardDocs, "", body("summarise")), 409, "conflict_error", "cloud_consent_required", anyParam,
			"issue 14: nothing is persisted on block, not even the consent grant of the blocked request")
	})

	t.Run("tenant config", func(t *testing.T) {
		for _, c := range []struct {
			token, mode string
			classifiers []string
		}{
			{tokGuardBlock, "block", []string{"moderation", "rules"}},
			{tokGuardAudit, "audit", []string{"moderation", "rules"}},
			{tokGuardOff, "off", []string{}},
		} {
			r := g.get(t, "/v1/tenant/config", c.token, "")
			if !wantStatus(t, r, 200, "spec GET /v1/tenant/config") {
				continue
			}
			vals, _ := r.JSON()["values"].(map[string]any)
			if vals["content_guard"] != c.mode || mustJSON(vals["content_guard_classifiers"]) != mustJSON(c.classifiers) {
				t.Errorf("tenant config values content_guard %v, content_guard_classifiers %s; want %s and %s (issue 14 item 4: the tenant config shows which classifier guards the tenant)",
					vals["content_guard"], mustJSON(vals["content_guard_classifiers"]), c.mode, mustJSON(c.classifiers))
			}
		}
	})

	t.Run("off tenant never classified", func(t *testing.T) {
		const marker = "Zanzibarquux"
		wantStatus(t, g.post(t, "/v1/chat/completions", tokGuardOff, "", guardV1("the massacre of "+marker)), 200, "DECISIONS 9.1: off is not classified")
		wantStatus(t, c1(t, g, tokGuardOff, "frank", guardC1("the massacre of "+marker)), 200, "off on /c1")
		wantStatus(t, g.post(t, "/a1/agents/guarded/chat", tokGuardOff, "", userChat("the massacre of "+marker)), 200, "off on agent chat")
		if n := mod.callsWith(marker); n != 0 {
			t.Errorf("the moderation endpoint was asked %d times about an off tenant's text, want 0", n)
		}
	})
}

// ---- audit ----

// guardLineWant is what an audit log line must say (issue 14: tenant, user,
// request id, route, categories, classifier; DECISIONS 9.1: never the content).
type guardLineWant struct {
	tenant, user, route, categories, classifier, id string
}

// guardCheckAuditLine checks the one flagged line of request w.id.
func guardCheckAuditLine(t *testing.T, g *gw, w guardLineWant) {
	t.Helper()
	line := guardAwaitLine(t, g, guardFlaggedMsg, w.id, "issue 14: a flagged audit request writes one structured line")
	if line == nil {
		return
	}
	got := map[string]any{}
	for _, k := range []string{"mode", "tenant", "user", "route", "categories", "classifier", "request_id"} {
		got[k] = line[k]
	}
	want := map[string]any{"mode": "audit", "tenant": w.tenant, "user": w.user, "route": w.route, "categories": w.categories,
		"classifier": w.classifier, "request_id": w.id}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("audit line of %s (-want +got):\n%s", w.id, d)
	}
	scores, _ := line["scores"].(map[string]any)
	var names []string
	for k, v := range scores {
		if f, ok := v.(float64); !ok || f <= 0 || f > 1 {
			t.Errorf("audit line score %s = %v, want a number in (0, 1]", k, v)
		}
		names = append(names, k)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != w.categories {
		t.Errorf("audit line scores %v, want one per category %s (issue 14: scores)", scores, w.categories)
	}
	// ONE line: wait a moment for a duplicate written late
	time.Sleep(50 * time.Millisecond)
	if n := len(guardLinesFor(g, guardFlaggedMsg, w.id)); n != 1 {
		t.Errorf("request %s wrote %d %q lines, want 1", w.id, n, guardFlaggedMsg)
	}
}

// TestContentGuardAudit: an audit tenant's flagged request goes through
// unchanged on every chat path and writes one log line with the categories,
// never the content; a clean request writes none; on /c1 and sessions only
// the new message is classified, not the stored history.
func TestContentGuardAudit(t *testing.T) {
	t.Parallel()
	mod := newGuardFake(t, false, 0)
	g, _ := guardStart(t, guardConf{rules: guardRules, moderation: mod}, nil)
	// Every flagged text holds one of these words, which must never be logged.
	secrets := []string{"massacre", "Quillbridge", "Ostwick", "Varnholt", "Pellucid", "Tarnwick"}
	var clean []string // request ids that must have no flagged line

	t.Run("/v1/chat/completions: unchanged", func(t *testing.T) {
		body := map[string]any{"model": "lm-4-scout-local", "temperature": 0.2, "messages": []any{
			map[string]any{"role": "system", "content": "Be brief."},
			map[string]any{"role": "user", "content": "the massacre at Quillbridge"}}}
		wantStatus(t, g.do(t, "POST", "/v1/chat/completions", tokGuardOff, "alice", body, guardReqID("guard-off-v1")), 200, "off tenant")
		offBody := lastBody(t, g.Local, "/chat/completions")
		r := g.do(t, "POST", "/v1/chat/completions", tokGuardAudit, "alice", body, guardReqID("guard-audit-v1"))
		if !wantStatus(t, r, 200, "DECISIONS 9.1: audit lets the request through") {
			return
		}
		if d := cmp.Diff(offBody, lastBody(t, g.Local, "/chat/completions")); d != "" {
			t.Errorf("the upstream body of an audit tenant differs from an off tenant's (-off +audit) (DECISIONS 9.1: unchanged):\n%s", d)
		}
		if m := r.JSON(); m["object"] != "chat.completion" {
			t.Errorf("audit answer %s, want the upstream's chat.completion", truncate(string(r.Body), 300))
		}
		guardCheckAuditLine(t, g, guardLineWant{"gaudit", "alice", "/v1/chat/completions", "violence", "rules", "guard-audit-v1"})
		if n := len(guardLinesFor(g, guardFlaggedMsg, "guard-off-v1")); n != 0 {
			t.Errorf("an off tenant's request wrote %d flagged lines, want 0", n)
		}
	})

	t.Run("/v1/chat/completions: chain and cache", func(t *testing.T) {
		body := guardV1("the massacre by Varnholt [mod:harassment=0.9]")
		for _, id := range []string{"guard-audit-chain-1", "guard-audit-chain-2"} {
			wantStatus(t, g.do(t, "POST", "/v1/chat/completions", tokGuardAudit, "", body, guardReqID(id)), 200, "audit")
			guardCheckAuditLine(t, g, guardLineWant{"gaudit", "", "/v1/chat/completions", "harassment,violence", "moderation,rules", id})
		}
		if n := mod.callsWith("Varnholt"); n != 1 {
			t.Errorf("the moderation endpoint was asked %d times about the same content, want 1 (issue 14: verdicts are cached by content digest)", n)
		}
		id := "guard-audit-clean-v1"
		clean = append(clean, id)
		wantStatus(t, g.do(t, "POST", "/v1/chat/completions", tokGuardAudit, "", guardV1("a harmless question"), guardReqID(id)), 200, "clean")
	})

	t.Run("/c1/chat: the new message only", func(t *testing.T) {
		const u = "alice"
		b := guardC1("what happened in the massacre at Ostwick?")
		r := g.do(t, "POST", "/c1/chat", tokGuardAudit, u, b, guardReqID("guard-audit-c1-1"))
		if !wantStatus(t, r, 200, "DECISIONS 9.1: audit lets /c1 through") {
			return
		}
		id := convID(t, r)
		guardCheckAuditLine(t, g, guardLineWant{"gaudit", u, "/c1/chat", "violence", "rules", "guard-audit-c1-1"})
		if _, h := history(t, g, tokGuardAudit, u, id); len(h) != 2 || textOf(h[0]) != "what happened in the massacre at Ostwick?" {
			t.Errorf("the audit turn stored %v, want the user message as sent and the reply", roles(h))
		}
		// a clean next turn: the flagged history goes upstream, is not classified again
		b = guardC1("and afterwards?")
		b["conversation_id"] = id
		clean = append(clean, "guard-audit-c1-2")
		wantStatus(t, g.do(t, "POST", "/c1/chat", tokGuardAudit, u, b, guardReqID("guard-audit-c1-2")), 200, "clean turn")
		if up := messagesOf(lastBody(t, g.Local, "/chat/completions")); !strings.Contains(mustJSON(up), "Ostwick") {
			t.Errorf("turn 2 upstream lacks the stored turn 1: %v", roles(up))
		}
		waitFor(2*time.Second, func() bool { return mod.callsWith("and afterwards?") > 0 })
		for _, c := range mod.Calls() {
			if all := strings.Join(c.Texts, "\n"); strings.Contains(all, "and afterwards?") && strings.Contains(all, "Ostwick") {
				t.Errorf("turn 2 classified the stored history %q, want the new message only (issue 14: stored history was classified when it was written)", c.Texts)
			}
		}
	})

	t.Run("/a1/agents/{name}/chat", func(t *testing.T) {
		r := g.do(t, "POST", "/a1/agents/guarded/chat", tokGuardAudit, "bob", userChat("describe the massacre at Pellucid"), guardReqID("guard-audit-agent"))
		if wantStatus(t, r, 200, "DECISIONS 9.1: audit lets agent chat through") && !strings.Contains(mustJSON(messagesOf(lastBody(t, g.Local, "/chat/completions"))), "massacre at Pellucid") {
			t.Errorf("the agent's upstream call lacks the user's message")
		}
		guardCheckAuditLine(t, g, guardLineWant{"gaudit", "bob", "/a1/agents/:name/chat", "violence", "rules", "guard-audit-agent"})
	})

	t.Run("/a1/agents/{name}/sessions/{sid}/messages", func(t *testing.T) {
		const u = "bob"
		sid := str(a1Must(t, g.post(t, "/a1/agents/guarded/sessions", tokGuardAudit, u, map[string]any{})).JSON()["id"])
		path := "/a1/agents/guarded/sessions/" + sid
		r := g.do(t, "POST", path+"/messages", tokGuardAudit, u, map[string]any{"message": "the massacre at Tarnwick"}, guardReqID("guard-audit-session-1"))
		wantStatus(t, r, 200, "DECISIONS 9.1: audit lets session messages through")
		guardCheckAuditLine(t, g, guardLineWant{"gaudit", u, "/a1/agents/:name/sessions/:sid/messages", "violence", "rules", "guard-audit-session-1"})
		if s := a1Must(t, g.get(t, path, tokGuardAudit, u)).JSON(); !strings.Contains(mustJSON(s["messages"]), "massacre at Tarnwick") {
			t.Errorf("the audit session message was not stored: %s", mustJSON(s["messages"]))
		}
		clean = append(clean, "guard-audit-session-2")
		wantStatus(t, g.do(t, "POST", path+"/messages", tokGuardAudit, u, map[string]any{"message": "go on please"}, guardReqID("guard-audit-session-2")), 200, "clean message")
		waitFor(2*time.Second, func() bool { return mod.callsWith("go on please") > 0 })
		for _, c := range mod.Calls() {
			if all := strings.Join(c.Texts, "\n"); strings.Contains(all, "go on please") && strings.Contains(all, "Tarnwick") {
				t.Errorf("the next session message classified the stored history %q, want the new message only", c.Texts)
			}
		}
	})

	// The clean requests' classifications started before this last flagged
	// request's; once its line is there, a line of theirs would be too.
	wantStatus(t, g.do(t, "POST", "/v1/chat/completions", tokGuardAudit, "", guardV1("a massacre, lastly"), guardReqID("guard-audit-last")), 200, "audit")
	guardCheckAuditLine(t, g, guardLineWant{"gaudit", "", "/v1/chat/completions", "violence", "rules", "guard-audit-last"})
	logs := g.stderr.String()
	for _, id := range clean {
		if n := len(guardLinesFor(g, guardFlaggedMsg, id)); n != 0 {
			t.Errorf("clean request %s wrote %d flagged lines, want 0 (issue 14: only a flagged request is logged)", id, n)
		}
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("gatewayd's log holds %q, a word of a flagged request (DECISIONS 9.1: never the content)", s)
		}
	}
}

// ---- latency ----

// TestContentGuardAuditAddsNoLatency: with a classifier that takes
// guardSlow to answer, an audit tenant's answer starts long before the
// classifier answers on every chat path (the classification runs alongside
// the upstream call), while a block tenant's answer waits for it.
func TestContentGuardAuditAddsNoLatency(t *testing.T) {
	t.Parallel()
	const guardSlow = 3 * time.Second
	mod := newGuardFake(t, false, guardSlow)
	g, _ := guardStart(t, guardConf{moderation: mod, timeout: "20s"}, nil)
	sid := str(a1Must(t, g.post(t, "/a1/agents/guarded/sessions", tokGuardAudit, "alice", map[string]any{})).JSON()["id"])
	flagged := " [fake-slow] [modflag:violence]"
	type call struct {
		name, token, user, path string
		body                    map[string]any
		status                  int // the answer's
		audit                   bool
		// outcome
		id   string
		got  int
		took time.Duration
		err  error
	}
	calls := []*call{
		{name: "audit /v1/chat/completions", token: tokGuardAudit, path: "/v1/chat/completions", body: guardV1("first" + flagged), status: 200, audit: true},
		{name: "audit /c1/chat", token: tokGuardAudit, user: "alice", path: "/c1/chat",
			body: map[string]any{"message": "second" + flagged, "model": "lm-4-scout-local"}, status: 200, audit: true},
		{name: "audit /a1/agents/{name}/chat", token: tokGuardAudit, path: "/a1/agents/guarded/chat", body: userChat("third" + flagged), status: 200, audit: true},
		{name: "audit /a1/agents/{name}/sessions/{sid}/messages", token: tokGuardAudit, user: "alice", path: "/a1/agents/guarded/sessions/" + sid + "/messages",
			body: map[string]any{"message": "fourth" + flagged}, status: 200, audit: true},
		{name: "block, clean", token: tokGuardBlock, path: "/v1/chat/completions", body: guardV1("fifth [fake-slow]"), status: 200},
		{name: "block, flagged", token: tokGuardBlock, path: "/v1/chat/completions", body: guardV1("sixth" + flagged), status: 422},
	}
	// All at once, each streamed, timed to its response headers (gatewayd
	// sends them with the first byte): one classifier delay in all.
	var wg sync.WaitGroup
	for i, c := range calls {
		c.id = "guard-latency-" + strconv.Itoa(i)
		c.body["stream"] = true
		wg.Go(func() {
			req, _ := http.NewRequest("POST", g.Base+c.path, strings.NewReader(mustJSON(c.body)))
			req.Header.Set("Authorization", "Bearer "+c.token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-Id", c.id)
			if c.user != "" {
				req.Header.Set("GW-User-Id", c.user)
			}
			begin := time.Now()
			res, err := client.Do(req)
			if err != nil {
				c.err = err
				return
			}
			c.got, c.took = res.StatusCode, time.Since(begin)
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		})
	}
	wg.Wait()
	for _, c := range calls {
		switch {
		case c.err != nil:
			t.Errorf("%s: %v", c.name, c.err)
		case c.audit && (c.got != c.status || c.took > guardSlow/3):
			t.Errorf("%s: status %d after %v, want %d well before the classifier's %v (issue 14: the classification runs alongside the upstream call, so that it adds no latency)",
				c.name, c.got, c.took, c.status, guardSlow)
		case !c.audit && (c.got != c.status || c.took < guardSlow*2/3):
			t.Errorf("%s: status %d after %v, want %d after the classifier's %v (DECISIONS 9.1: block classifies before forwarding)",
				c.name, c.got, c.took, c.status, guardSlow)
		}
		if c.audit {
			// the classifier did answer, later, and the line was written then
			if line := guardAwaitLine(t, g, guardFlaggedMsg, c.id, "issue 14: audit"); line != nil && line["categories"] != "violence" {
				t.Errorf("%s: audit line categories %v, want violence", c.name, line["categories"])
			}
		}
	}
}

// ---- classifier failure ----

// TestContentGuardClassifierFailure: a classifier that answers 500 or does
// not answer within GATEWAY_GUARD_TIMEOUT fails a block tenant closed (503
// upstream_unavailable, nothing forwarded) and an audit tenant open (its
// normal answer and a log line); failures are not cached.
func TestContentGuardClassifierFailure(t *testing.T) {
	t.Parallel()
	mod := newGuardFake(t, false, 0)
	g, _ := guardStart(t, guardConf{rules: guardRules, moderation: mod, timeout: "300ms"}, nil)
	const ref = "DECISIONS 9.1: a block tenant whose guard cannot answer gets 503 upstream_unavailable"
	for _, c := range []struct{ name, marker string }{{"answers 500", "[fake-500]"}, {"hangs past GATEWAY_GUARD_TIMEOUT", "[fake-hang]"}} {
		t.Run(c.name, func(t *testing.T) {
			before := guardUpstreamChats(g)
			begin := time.Now()
			r := g.post(t, "/v1/chat/completions", tokGuardBlock, "", guardV1("a clean question "+c.marker))
			if took := time.Since(begin); took > 3*time.Second {
				t.Errorf("block answered after %v, want about GATEWAY_GUARD_TIMEOUT (300ms)", took)
			}
			if wantErr(t, r, 503, "overloaded_error", "upstream_unavailable", anyParam, ref) &&
				!strings.Contains(strings.ToLower(str(r.JSON()["error"].(map[string]any)["message"])), "content guard") {
				t.Errorf("503 message %q does not say the content guard could not answer (issue 14)", r.JSON()["error"].(map[string]any)["message"])
			}
			if n := guardUpstreamChats(g) - before; n != 0 {
				t.Errorf("a block request whose classifier failed reached the upstream %d times, want 0 (fails closed)", n)
			}
			// rules flag what the failed moderation could not see: flagged by any is flagged
			blocked := g.post(t, "/v1/chat/completions", tokGuardBlock, "", guardV1("a massacre "+c.marker))
			wantGuardBlocked(t, blocked, "violence", "flagged by any is flagged, even beside a failed classifier")

			id := "guard-fail-audit-" + strings.Trim(c.marker, "[]")
			wantStatus(t, g.do(t, "POST", "/v1/chat/completions", tokGuardAudit, "alice", guardV1("an audited question "+c.marker), guardReqID(id)), 200,
				"DECISIONS 9.1: an audit tenant is let through")
			if line := guardAwaitLine(t, g, guardLetThruMsg, id, "issue 14: an audit tenant fails open and logs it"); line != nil {
				if line["tenant"] != "gaudit" || line["mode"] != "audit" || line["route"] != "/v1/chat/completions" {
					t.Errorf("failure line %v, want tenant gaudit, mode audit, route /v1/chat/completions", line)
				}
			}
			if strings.Contains(g.stderr.String(), "audited question") {
				t.Errorf("the failure log holds the content (DECISIONS 9.1: never the content)")
			}
		})
	}
	t.Run("a failure is not cached", func(t *testing.T) {
		body := guardV1("retry me [fake-500-once]")
		wantErr(t, g.post(t, "/v1/chat/completions", tokGuardBlock, "", body), 503, "overloaded_error", "upstream_unavailable", anyParam, ref)
		wantStatus(t, g.post(t, "/v1/chat/completions", tokGuardBlock, "", body), 200, "the retry is classified again, and passes")
		if n := mod.callsWith("retry me"); n != 2 {
			t.Errorf("the moderation endpoint was asked %d times, want 2 (a failure is not a verdict to cache)", n)
		}
	})
}

// ---- the classifiers ----

// TestContentGuardModeration: the moderation classifier as an operator
// configures it (DECISIONS 9.1): what it sends to POST {base}/moderations
// (the API key, the model, the user texts), the threshold (default 0.5, and
// GATEWAY_GUARD_THRESHOLD), categories[c] true, the verdict cache and off
// tenants never asked.
func TestContentGuardModeration(t *testing.T) {
	t.Parallel()
	mod := newGuardFake(t, false, 0)
	g, _ := guardStart(t, guardConf{moderation: mod}, nil)
	lowMod := newGuardFake(t, false, 0)
	low, _ := guardStart(t, guardConf{moderation: lowMod, threshold: "0.3"}, nil)

	t.Run("request", func(t *testing.T) {
		body := map[string]any{"model": "lm-4-scout-local", "messages": []any{
			map[string]any{"role": "system", "content": "system words"},
			map[string]any{"role": "user", "content": "first question Alpha"},
			map[string]any{"role": "assistant", "content": "assistant words"},
			map[string]any{"role": "user", "content": "second question Alpha"}},
			"attachments": []any{map[string]any{"kind": "document", "doc_name": "alpha.txt", "content": "document text Alpha"}}}
		wantStatus(t, g.post(t, "/v1/chat/completions", tokGuardBlock, "", body), 200, "clean")
		var call *guardCall
		for _, c := range mod.Calls() {
			if strings.Contains(strings.Join(c.Texts, "\n"), "Alpha") {
				call = &c
			}
		}
		if call == nil {
			t.Fatalf("the moderation endpoint was not asked about a block tenant's request (calls: %v)", mod.Calls())
		}
		if call.Method != "POST" || call.Path != "/v1/moderations" || call.Auth != "Bearer "+guardModKey || call.Body["model"] != guardModModel {
			t.Errorf("moderation request %s %s, Authorization %q, model %v; want POST /v1/moderations, Bearer %s, model %s (DECISIONS 9.1 GATEWAY_GUARD_MODERATION_URL, _API_KEY, _MODEL)",
				call.Method, call.Path, call.Auth, call.Body["model"], guardModKey, guardModModel)
		}
		if len(call.Texts) != 3 || call.Texts[0] != "first question Alpha" || call.Texts[1] != "second question Alpha" || !strings.Contains(call.Texts[2], "document text Alpha") {
			t.Errorf("moderation input %q, want the two user texts then the document (issue 14: every user message and document attachments, nothing else)", call.Texts)
		}
		// an image part is sent too, in OpenAI's multimodal input
		img := guardV1([]any{map[string]any{"type": "text", "text": "what is this Bravo"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": pngURI}}})
		wantStatus(t, g.post(t, "/v1/chat/completions", tokGuardBlock, "", img), 200, "clean image")
		for _, c := range mod.Calls() {
			if strings.Contains(strings.Join(c.Texts, "\n"), "Bravo") && c.Images != 1 {
				t.Errorf("moderation input of a text and an image: %d image parts, want 1 (issue 14: where it has them, image parts)", c.Images)
			}
		}
	})

	t.Run("threshold and categories", func(t *testing.T) {
		cases := []struct {
			name, text string
			g          *gw
			param      string // "" = passes
		}{
			{"score 0.4 under the default 0.5", "rude [mod:harassment=0.4]", g, ""},
			{"score 0.5 at the default", "ruder [mod:harassment=0.5]", g, "harassment"},
			{"score 0.4 over GATEWAY_GUARD_THRESHOLD 0.3", "rude [mod:harassment=0.4]", low, "harassment"},
			{"score 0.2 under GATEWAY_GUARD_THRESHOLD 0.3", "mild [mod:harassment=0.2]", low, ""},
			{"categories true with a low score", "sad [modflag:self-harm]", g, "self-harm"},
			{"several, sorted", "worse [mod:violence=0.9] [mod:illicit=0.8] [modflag:hate]", g, "hate,illicit,violence"},
			{"a category with a slash", "grim [mod:violence/graphic=0.99]", g, "violence/graphic"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := c.g.post(t, "/v1/chat/completions", tokGuardBlock, "", guardV1(c.text))
				if c.param == "" {
					wantStatus(t, r, 200, "DECISIONS 9.1: flagged when categories[c] is true or category_scores[c] >= GATEWAY_GUARD_THRESHOLD")
				} else {
					wantGuardBlocked(t, r, c.param, c.name)
				}
			})
		}
	})

	t.Run("verdict cache", func(t *testing.T) {
		for _, c := range []struct{ text, param string }{{"flagged Charlie [modflag:violence]", "violence"}, {"clean Delta", ""}} {
			for range 2 {
				r := g.post(t, "/v1/chat/completions", tokGuardBlock, "", guardV1(c.text))
				if c.param != "" {
					wantGuardBlocked(t, r, c.param, "a retry")
				} else {
					wantStatus(t, r, 200, "a retry")
				}
			}
			word := strings.Fields(c.text)[1]
			if n := mod.callsWith(word); n != 1 {
				t.Errorf("the same content sent twice was classified %d times, want 1 (issue 14: verdicts are cached by content digest)", n)
			}
		}
	})

	t.Run("off tenant never asked", func(t *testing.T) {
		wantStatus(t, g.post(t, "/v1/chat/completions", tokGuardOff, "", guardV1("Echo [modflag:violence]")), 200, "off")
		wantStatus(t, c1(t, g, tokGuardOff, "u", guardC1("Echo [modflag:violence]")), 200, "off")
		if n := mod.callsWith("Echo"); n != 0 {
			t.Errorf("the moderation endpoint was asked %d times about an off tenant's request, want 0", n)
		}
	})
}

// TestContentGuardLlamaGuard: a Llama Guard model behind an OpenAI-compatible
// chat endpoint; its "unsafe\nS1,S10" answer blocks with the S-codes mapped
// to category names (S1 illicit/violent, S10 hate).
func TestContentGuardLlamaGuard(t *testing.T) {
	t.Parallel()
	lg := newGuardFake(t, true, 0)
	g, _ := guardStart(t, guardConf{llamaGuard: lg}, nil)
	wantGuardBlocked(t, g.post(t, "/v1/chat/completions", tokGuardBlock, "", guardV1("Foxtrot [lg:S1,S10]")), "hate,illicit/violent",
		"DECISIONS 9.1: unsafe\\nS1,S10 maps S-codes to category names by the documented table")
	wantGuardBlocked(t, c1(t, g, tokGuardBlock, "u", guardC1("Golf [lg:S2]")), "illicit", "S2 on /c1")
	wantStatus(t, g.post(t, "/v1/chat/completions", tokGuardBlock, "", guardV1("Hotel is safe")), 200, "safe")
	wantStatus(t, g.do(t, "POST", "/v1/chat/completions", tokGuardAudit, "", guardV1("India [lg:S10]"), guardReqID("guard-llama-audit")), 200, "audit")
	guardCheckAuditLine(t, g, guardLineWant{"gaudit", "", "/v1/chat/completions", "hate", "llama_guard", "guard-llama-audit"})

	var call *guardCall
	for _, c := range lg.Calls() {
		if strings.Contains(strings.Join(c.Texts, "\n"), "Foxtrot") {
			call = &c
		}
	}
	if call == nil {
		t.Fatalf("the Llama Guard endpoint was not asked (calls: %v)", lg.Calls())
	}
	if call.Method != "POST" || call.Path != "/v1/chat/completions" || call.Auth != "Bearer "+guardLlamaKey || call.Body["model"] != guardLlamaModel {
		t.Errorf("Llama Guard request %s %s, Authorization %q, model %v; want POST /v1/chat/completions, Bearer %s, model %s (DECISIONS 9.1 GATEWAY_GUARD_LLAMA_GUARD_URL, _API_KEY, _MODEL)",
			call.Method, call.Path, call.Auth, call.Body["model"], guardLlamaKey, guardLlamaModel)
	}
	if n := chatCalls(g.Local); n != 2 {
		t.Errorf("the model backend received %d chat calls, want 2 (the safe and the audit request; the Llama Guard calls go to their own endpoint)", n)
	}
	tc, _ := g.get(t, "/v1/tenant/config", tokGuardBlock, "").JSON()["values"].(map[string]any)
	if mustJSON(tc["content_guard_classifiers"]) != `["llama_guard"]` {
		t.Errorf("content_guard_classifiers %s, want [\"llama_guard\"]", mustJSON(tc["content_guard_classifiers"]))
	}
}

// ---- SIGHUP ----

// TestContentGuardReload: SIGHUP reloads the rules file (a bad one keeps the
// old rules, which keep working), and a token file reload that would bring
// in a guarded tenant while no classifier is configured is refused.
func TestContentGuardReload(t *testing.T) {
	t.Parallel()
	t.Run("rules file", func(t *testing.T) {
		t.Parallel()
		g, rules := guardStart(t, guardConf{rules: `{"categories": {"violence": {"terms": ["massacre"]}}}`}, nil)
		chat := func(text string) *resp { return g.post(t, "/v1/chat/completions", tokGuardBlock, "", guardV1(text)) }
		wantGuardBlocked(t, chat("a massacre one"), "violence", "the first rules")
		wantStatus(t, chat("a heist one"), 200, "heist is not in the first rules")

		writeFile(t, rules, `{"categories": {"illicit": {"terms": ["heist"]}}}`)
		guardAwaitReload(t, g, guardRulesReloadedMsg)
		wantGuardBlocked(t, chat("a heist two"), "illicit", "DECISIONS 9.1: SIGHUP reloads the rules file")
		wantStatus(t, chat("a massacre two"), 200, "a term dropped by the reload no longer flags")

		writeFile(t, rules, "{\"categories\": {\n  \"illicit\": {\"patterns\": [\"(unclosed\"]}\n}}\n")
		guardAwaitReload(t, g, guardRulesKeptMsg)
		wantGuardBlocked(t, chat("a heist three"), "illicit", "DECISIONS 9.1: a bad file keeps the old rules")
		wantStatus(t, chat("a massacre three"), 200, "the old rules, not the first ones")
		if l := guardLogLines(g, guardRulesKeptMsg); len(l) == 0 || !strings.Contains(mustJSON(l[len(l)-1]), rules) ||
			!strings.Contains(mustJSON(l[len(l)-1]), "patterns[0]") {
			t.Errorf("the refused reload's log line %v does not name the file and the place", l)
		}
		if g.cmd.ProcessState != nil {
			t.Fatalf("gatewayd exited after SIGHUP with a bad rules file")
		}
	})
	t.Run("token file turns a tenant's guard on", func(t *testing.T) {
		t.Parallel()
		g, _ := guardStart(t, guardConf{rules: guardRules}, func(s *setup) { s.Tokens = guardOffTokens() })
		wantStatus(t, g.post(t, "/v1/chat/completions", tokGuardBlock, "", guardV1("a massacre")), 200, "gexplicit's guard is off")
		file := map[string]any{
			"tenants": []any{map[string]any{"id": "goff"}, map[string]any{"id": "gexplicit", "settings": map[string]any{"content_guard": "block"}}},
			"tokens": []any{map[string]any{"token": tokGuardOff, "tenant": "goff", "role": "member"},
				map[string]any{"token": tokGuardBlock, "tenant": "gexplicit", "role": "member"}},
		}
		writeFile(t, g.TokensPath, tokenFileJSON(file))
		guardAwaitReload(t, g, "token catalog reloaded")
		wantGuardBlocked(t, g.post(t, "/v1/chat/completions", tokGuardBlock, "", guardV1("another massacre")), "violence",
			"DECISIONS 3, 9.1: content_guard is an operator key of the token file, re-read on SIGHUP")
	})
	t.Run("token file with a guarded tenant, no classifier", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.Tokens = guardOffTokens() })
		file := guardTokenFile()
		writeFile(t, g.TokensPath, tokenFileJSON(file))
		guardAwaitReload(t, g, guardCatalogKeptMsg)
		if l := guardLogLines(g, guardCatalogKeptMsg); !strings.Contains(mustJSON(l[len(l)-1]), "gblock") && !strings.Contains(mustJSON(l[len(l)-1]), "gaudit") {
			t.Errorf("the refused reload's log line %v does not name the guarded tenant", l[len(l)-1])
		}
		wantErr(t, g.get(t, "/v1/models", tokGuardAudit, ""), 401, "authentication_error", "invalid_authorization", "headers.authorization",
			"DECISIONS 9.1, 3: the refused file is not loaded")
		r := g.post(t, "/v1/chat/completions", tokGuardBlock, "", guardV1("a massacre"))
		wantStatus(t, r, 200, "the old catalog is kept: the token is still gexplicit's, whose guard is off")
	})
}

// TestContentGuardReloadForgetsOldVerdicts: once SIGHUP has reloaded the
// rules ("content guard rules reloaded"), every request is judged by the new
// rules, also a retry of content the old rules let through a moment before:
// an operator who adds a term to stop an ongoing abuse expects it to take
// effect at once, as a token file reload does.
func TestContentGuardReloadForgetsOldVerdicts(t *testing.T) {
	t.Parallel()
	g, rules := guardStart(t, guardConf{rules: `{"categories": {"violence": {"terms": ["massacre"]}}}`}, nil)
	body := guardV1("plan the heist")
	wantStatus(t, g.post(t, "/v1/chat/completions", tokGuardBlock, "", body), 200, "heist is not in the first rules")
	writeFile(t, rules, `{"categories": {"illicit": {"terms": ["heist"]}}}`)
	guardAwaitReload(t, g, guardRulesReloadedMsg)
	wantGuardBlocked(t, g.post(t, "/v1/chat/completions", tokGuardBlock, "", body), "illicit",
		"DECISIONS 9.1: SIGHUP reloads the rules; the same request after the reload is judged by the new rules")
}
