package e2e_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// specCode is one row of the spec's Codes table: code, type, status, param
// ("" when the row names none and the catalog's typical_param is not checked,
// noParam when typical_param must be null: the code has no field).
type specCode struct {
	code, typ string
	status    int
	param     string
}

// specCodes is the spec's Codes table (interface.md, Errors, Codes), in order.
var specCodes = []specCode{
	{"missing_authorization", "authentication_error", 401, "headers.authorization"},
	{"invalid_authorization", "authentication_error", 401, "headers.authorization"},
	{"forbidden", "permission_error", 403, noParam},
	{"rate_limit_exceeded", "rate_limit_error", 429, noParam},
	{"body_too_large", "request_too_large", 413, ""},
	{"invalid_json", "invalid_request_error", 400, ""},
	{"missing_field", "invalid_request_error", 400, ""},
	{"invalid_field", "invalid_request_error", 400, ""},
	{"model_not_in_allowlist", "invalid_request_error", 400, "model"},
	{"max_tokens_below_minimum", "invalid_request_error", 400, "max_tokens"},
	{"image_url_not_supported", "invalid_request_error", 400, "messages[].content[].image_url.url"},
	{"image_decode_error", "invalid_request_error", 400, ""},
	{"image_base64_invalid", "invalid_request_error", 400, ""},
	{"model_not_vision_capable", "invalid_request_error", 400, "messages[].content[].image_url"},
	{"tool_call_arguments_invalid", "invalid_request_error", 400, "messages[].tool_calls[].function.arguments"},
	{"context_window_exceeded", "invalid_request_error", 400, "messages"},
	{"upstream_bad_request", "invalid_request_error", 400, ""},
	{"embedding_input_too_large", "invalid_request_error", 400, "input"},
	{"agent_not_found", "not_found_error", 404, "name"},
	{"agent_tool_not_registered", "invalid_request_error", 400, "tools"},
	{"recursion_depth_exceeded", "invalid_request_error", 400, ""},
	{"index_not_found", "not_found_error", 404, "id"},
	{"document_not_found", "not_found_error", 404, "doc_id"},
	{"session_not_found", "not_found_error", 404, "session_id"},
	{"session_agent_mismatch", "invalid_request_error", 400, "session_id"},
	{"session_compact_conflict", "conflict_error", 409, "session_id"},
	{"runtime_not_runnable", "invalid_request_error", 400, "body.runtime"},
	{"coding_agent_disabled", "permission_error", 403, noParam},
	{"coding_agent_repo_not_allowed", "permission_error", 403, "body.repo"},
	{"coding_agent_run_not_found", "not_found_error", 404, "run_id"},
	{"agent_busy", "conflict_error", 409, noParam},
	{"tenant_config_key_readonly", "invalid_request_error", 400, "key"},
	{"tenant_config_invalid_value", "invalid_request_error", 400, "key"},
	{"image_not_found", "not_found_error", 404, "id"},
	{"memory_bucket_full", "conflict_error", 409, "value"},
	{"memory_confirm_required", "invalid_request_error", 400, "confirm_token"},
	{"system_prompt_too_large", "invalid_request_error", 400, "content"},
	{"system_prompt_version_not_found", "not_found_error", 404, "version"},
	{"system_prompt_current_locked", "conflict_error", 409, "version"},
	{"conversation_not_found", "not_found_error", 404, "conversation_id"},
	{"route_not_found", "not_found_error", 404, noParam},
	{"cloud_consent_required", "conflict_error", 409, ""},
	{"content_blocked", "invalid_request_error", 422, ""},
	{"model_quota_exhausted", "rate_limit_error", 429, ""},
	{"cloudB_daily_quota_exhausted", "rate_limit_error", 429, "model"},
	{"upstream_error", "api_error", 502, noParam},
	{"upstream_timeout", "timeout_error", 504, noParam},
	{"upstream_unavailable", "overloaded_error", 503, noParam},
	{"internal_error", "api_error", 500, noParam},
	{"storage_error", "api_error", 500, noParam},
}

func TestPublicEndpoints(t *testing.T) {
	t.Parallel()
	g := start(t, nil)

	t.Run("no bearer needed", func(t *testing.T) {
		for _, p := range []string{"/", "/healthz", "/readyz", "/errors", "/openapi", "/openapi.json", "/redoc", "/docs/errors", "/playground"} {
			r := g.get(t, p, "", "")
			wantStatus(t, r, 200, "spec Authentication 2: public endpoints need no bearer")
			if r.Header.Get("X-Request-Id") == "" {
				t.Errorf("GET %s: no x-request-id (DECISIONS 5: on every response)", p)
			}
			// A wrong bearer on a public endpoint is ignored, not a 401.
			r = g.get(t, p, "not-a-token", "")
			wantStatus(t, r, 200, "spec Authentication 2: public endpoints need no bearer")
		}
	})

	t.Run("index", func(t *testing.T) {
		r := g.get(t, "/", "", "")
		m := r.JSON()
		if m["name"] == nil || m["version"] != "0.1.0" || m["links"] == nil {
			t.Errorf("%s\n  want JSON index with name, version 0.1.0, links (issue 2 item 8; spec Versioning 1)", r)
		}
	})

	t.Run("healthz", func(t *testing.T) {
		wantStatus(t, g.get(t, "/healthz", "", ""), 200, "spec Public endpoints: /healthz 200 when alive")
	})

	t.Run("errors catalog", func(t *testing.T) {
		r := g.get(t, "/errors", "", "")
		if !wantStatus(t, r, 200, "spec Catalog") {
			return
		}
		var cat struct {
			Version *int              `json:"version"`
			Count   *int              `json:"count"`
			Entries []json.RawMessage `json:"entries"`
		}
		if err := json.Unmarshal(r.Body, &cat); err != nil {
			t.Fatalf("GET /errors: %v", err)
		}
		// The spec's 50 codes plus chatgw's three additions (method_not_allowed,
		// model_not_configured, response_not_found): "Adding codes is
		// non-breaking and does not bump it".
		if cat.Version == nil || *cat.Version != 1 || cat.Count == nil || *cat.Count != 53 || len(cat.Entries) != 53 {
			t.Errorf("GET /errors: version %v count %v entries %d, want 1, 53, 53 (spec Catalog and additions)", cat.Version, cat.Count, len(cat.Entries))
		}
		byCode := map[string]map[string]any{}
		inSpec := map[string]bool{}
		for _, sc := range specCodes {
			inSpec[sc.code] = true
		}
		for _, raw := range cat.Entries {
			var e map[string]any
			json.Unmarshal(raw, &e)
			for _, f := range []string{"code", "type", "http_status", "title", "description", "remediation", "typical_param"} {
				if _, ok := e[f]; !ok {
					t.Errorf("catalog entry %v lacks %q (spec Catalog: each entry has code, type, http_status, title, description, remediation, typical_param)", e["code"], f)
				}
			}
			for _, f := range []string{"title", "description", "remediation"} {
				if s, _ := e[f].(string); s == "" {
					t.Errorf("catalog entry %v: %s is empty", e["code"], f)
				}
			}
			code, _ := e["code"].(string)
			if !inSpec[code] && !slices.Contains([]string{"method_not_allowed", "model_not_configured", "response_not_found"}, code) {
				t.Errorf("catalog code %q is neither in the spec's Codes table nor a documented addition", code)
			}
			byCode[code] = e
		}
		for _, sc := range specCodes {
			e, ok := byCode[sc.code]
			if !ok {
				t.Errorf("catalog lacks code %s (spec Codes table)", sc.code)
				continue
			}
			if e["type"] != sc.typ {
				t.Errorf("catalog %s: type %v, want %s (spec Codes table)", sc.code, e["type"], sc.typ)
			}
			if st, _ := e["http_status"].(float64); int(st) != sc.status {
				t.Errorf("catalog %s: http_status %v, want %d (spec Codes table)", sc.code, e["http_status"], sc.status)
			}
			switch sc.param {
			case "":
			case noParam:
				if e["typical_param"] != nil {
					t.Errorf("catalog %s: typical_param %v, want null (the code has no field; spec Codes table)", sc.code, e["typical_param"])
				}
			default:
				if e["typical_param"] != sc.param {
					t.Errorf("catalog %s: typical_param %v, want %q (spec Codes table; DECISIONS 8.2)", sc.code, e["typical_param"], sc.param)
				}
			}
		}
	})

	t.Run("docs errors anchors", func(t *testing.T) {
		r := g.get(t, "/docs/errors", "", "")
		if !wantStatus(t, r, 200, "spec Public endpoints: /docs/errors") {
			return
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("GET /docs/errors Content-Type %q, want text/html", ct)
		}
		body := string(r.Body)
		for _, sc := range specCodes {
			if !strings.Contains(body, `id="`+sc.code+`"`) {
				t.Errorf("GET /docs/errors: no anchor id=%q (spec: /docs/errors#<code>)", sc.code)
			}
		}
	})

	t.Run("openapi", func(t *testing.T) {
		for _, p := range []string{"/openapi.json", "/openapi"} {
			r := g.get(t, p, "", "")
			m := r.JSON()
			if r.Status != 200 || m == nil || m["openapi"] == nil || m["paths"] == nil {
				t.Errorf("%s\n  want 200 with an OpenAPI document", r)
				continue
			}
			info, _ := m["info"].(map[string]any)
			if info["version"] != "0.1.0" {
				t.Errorf("GET %s: info.version %v, want 0.1.0 (spec Versioning 1)", p, info["version"])
			}
		}
	})

	t.Run("html pages", func(t *testing.T) {
		for _, p := range []string{"/playground", "/redoc"} {
			r := g.get(t, p, "", "")
			if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
				t.Errorf("GET %s -> %d %q, want 200 text/html", p, r.Status, r.Header.Get("Content-Type"))
			}
		}
	})

	t.Run("route_not_found", func(t *testing.T) {
		runErrCases(t, g, errCases{
			{name: "unknown path", method: "GET", path: "/nope", token: tokAdmin},
			{name: "unknown path no bearer", method: "GET", path: "/v9/nothing"},
			{name: "unknown v1 path", method: "GET", path: "/v1/does-not-exist", token: tokAdmin},
			{name: "unknown docs page", method: "GET", path: "/docs/nothing-here"},
			{name: "models with a trailing slash", method: "GET", path: "/v1/models/", token: tokMember},
			{name: "unknown family", method: "GET", path: "/c2/chat", token: tokMember},
			{name: "OPTIONS of an unknown path", method: "OPTIONS", path: "/c2/chat"},
		}.with(404, "not_found_error", "route_not_found", noParam, "spec Codes: route_not_found 404 path and method unknown"))
	})

	// issue 16 item 8: every error carries error.doc_url (wantErr checks it),
	// the address of its code's section of the catalog page, relative to
	// the gateway, and that page has the section.
	t.Run("doc_url", func(t *testing.T) {
		for _, c := range []struct{ method, path, token, code string }{
			{"GET", "/nope", "", "route_not_found"},
			{"GET", "/v1/models", "", "missing_authorization"},
			{"DELETE", "/v1/models", "", "method_not_allowed"},
		} {
			r := g.do(t, c.method, c.path, c.token, "", nil, nil)
			u, _ := testkit.Field(r.JSON()["error"], "doc_url").(string)
			page, anchor, _ := strings.Cut(u, "#")
			if anchor != c.code {
				t.Errorf("%s: doc_url %q, want the anchor %s", r, u, c.code)
				continue
			}
			doc := g.get(t, page, "", "")
			if doc.Status != 200 || !strings.Contains(string(doc.Body), `id="`+anchor+`"`) {
				t.Errorf("GET %s -> %d, want 200 and an element of id %q", page, doc.Status, anchor)
			}
		}
	})

	// issue 16 item 8: a known path asked with another method answers 405
	// method_not_allowed (catalogued), before authentication, with Allow
	// listing the path's methods; OPTIONS and HEAD are not served.
	t.Run("method_not_allowed", func(t *testing.T) {
		const ref = "issue 16 item 8: 405 with Allow"
		for _, c := range []struct {
			name, method, path, token, user, allow string
		}{
			{"DELETE models", "DELETE", "/v1/models", tokAdmin, "", "GET"},
			{"POST healthz", "POST", "/healthz", "", "", "GET"},
			{"GET chat completions", "GET", "/v1/chat/completions", tokAdmin, "", "POST"},
			{"PUT chat completions, bad token", "PUT", "/v1/chat/completions", "not-a-token", "", "POST"},
			{"PATCH c1 chat", "PATCH", "/c1/chat", tokAdmin, "u", "POST"},
			{"POST a conversation", "POST", "/c1/conversations/c1", tokMember, "u", "DELETE, GET"},
			{"PUT memory", "PUT", "/v1/memory", tokMember, "u", "DELETE, GET, POST"},
			{"OPTIONS models", "OPTIONS", "/v1/models", "", "", "GET"},
			{"POST a docs page", "POST", "/docs/errors", "", "", "GET"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := g.do(t, c.method, c.path, c.token, c.user, nil, nil)
				wantErr(t, r, 405, "invalid_request_error", "method_not_allowed", noParam, ref)
				if got := r.Header.Get("Allow"); got != c.allow {
					t.Errorf("%s: Allow %q, want %q [%s]", r, got, c.allow, ref)
				}
			})
		}
		r := g.do(t, "HEAD", "/healthz", "", "", nil, nil)
		if r.Status != 405 || r.Header.Get("Allow") != "GET" {
			t.Errorf("%s: Allow %q, want 405 with Allow GET [%s]", r, r.Header.Get("Allow"), ref)
		}
	})

	t.Run("x-request-id", func(t *testing.T) {
		r := g.do(t, "GET", "/v1/models", tokAdmin, "", nil, H{"X-Request-Id": "client-req-42"})
		if got := r.Header.Get("X-Request-Id"); got != "client-req-42" {
			t.Errorf("GET /v1/models with x-request-id client-req-42: echoed %q (DECISIONS 5)", got)
		}
		r = g.do(t, "GET", "/v1/models", "", "", nil, H{"X-Request-Id": "err-req-7"})
		if got := r.Header.Get("X-Request-Id"); got != "err-req-7" {
			t.Errorf("401 answer with x-request-id err-req-7: echoed %q (DECISIONS 5: errors included)", got)
		}
		r = g.get(t, "/nope", "", "")
		a := r.Header.Get("X-Request-Id")
		b := g.get(t, "/nope", "", "").Header.Get("X-Request-Id")
		if a == "" || a == b {
			t.Errorf("generated x-request-id %q then %q, want non-empty and distinct (DECISIONS 5)", a, b)
		}
		long := strings.Repeat("x", 129)
		r = g.do(t, "GET", "/healthz", "", "", nil, H{"X-Request-Id": long})
		if got := r.Header.Get("X-Request-Id"); got == long || got == "" {
			t.Errorf("x-request-id of 129 chars: answered %q, want a generated id (DECISIONS 5: echoed when <= 128 printable chars)", truncate(got, 40))
		}
		if !regexp.MustCompile(`^req_[0-9a-z]+$`).MatchString(a) {
			t.Errorf("generated x-request-id %q, want req_<base36> (docs/decisions.md)", a)
		}
		r = g.do(t, "GET", "/healthz", "", "", nil, H{"X-Request-Id": "tab\tinside"})
		if got := r.Header.Get("X-Request-Id"); got == "tab\tinside" || !strings.HasPrefix(got, "req_") {
			t.Errorf("x-request-id with a tab: answered %q, want a generated id (DECISIONS 5: echoed when printable)", got)
		}
		ok128 := strings.Repeat("y", 128)
		r = g.do(t, "GET", "/healthz", "", "", nil, H{"X-Request-Id": ok128})
		if got := r.Header.Get("X-Request-Id"); got != ok128 {
			t.Errorf("x-request-id of 128 chars: answered %q, want it echoed (DECISIONS 5)", truncate(got, 40))
		}
		// every log line carries the request id
		g.do(t, "GET", "/v1/info", tokAdmin, "", nil, H{"X-Request-Id": "log-check-req-99"})
		if !waitFor(2*time.Second, func() bool { return strings.Contains(g.stderr.String(), "log-check-req-99") }) {
			t.Errorf("the request log has no line with request id log-check-req-99 (issue 2 item 9; DECISIONS 5)")
		}
	})
}

func readyReport(t *testing.T, r *resp) map[string]any {
	t.Helper()
	m := r.JSON()
	if m == nil {
		t.Fatalf("%s: not JSON", r)
	}
	return m
}

// probe returns probes[name] of a ReadyReport.
func probe(m map[string]any, name string) map[string]any {
	p, _ := m["probes"].(map[string]any)
	pm, _ := p[name].(map[string]any)
	return pm
}

func checkProbeShape(t *testing.T, m map[string]any) {
	t.Helper()
	for _, k := range []string{"router", "local_backend", "cloudA", "cloudB"} {
		p := probe(m, k)
		if p == nil {
			t.Errorf("readyz probes.%s missing (DECISIONS 8.21) in %s", k, mustJSON(m))
			continue
		}
		if _, ok := p["configured"].(bool); !ok {
			t.Errorf("readyz probes.%s.configured not a boolean (DECISIONS 8.21)", k)
		}
		if _, ok := p["reachable"].(bool); !ok {
			t.Errorf("readyz probes.%s.reachable not a boolean (DECISIONS 8.21)", k)
		}
		if _, ok := p["ms"].(float64); !ok {
			t.Errorf("readyz probes.%s.ms not a number (DECISIONS 8.21)", k)
		}
	}
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	t.Run("all up", func(t *testing.T) {
		t.Parallel()
		g := start(t, nil)
		r := g.get(t, "/readyz", "", "")
		wantStatus(t, r, 200, "DECISIONS 8.4: 200 when ready")
		m := readyReport(t, r)
		if m["ready"] != true || m["router"] != "available" || m["local_backend"] != "available" {
			t.Errorf("readyz = %s, want ready true, router available, local_backend available (spec ReadyReport; DECISIONS 8.4)", r.Body)
		}
		checkProbeShape(t, m)
		for _, k := range []string{"local_backend", "cloudA", "cloudB"} {
			if p := probe(m, k); p["configured"] != true || p["reachable"] != true {
				t.Errorf("readyz probes.%s = %v, want configured and reachable", k, p)
			}
		}
		if g.Local.CallCount() == 0 || g.CloudA.CallCount() == 0 || g.CloudB.CallCount() == 0 {
			t.Errorf("readyz probed local %d, cloudA %d, cloudB %d times; want each backend probed", g.Local.CallCount(), g.CloudA.CallCount(), g.CloudB.CallCount())
		}
	})
	t.Run("nothing reachable", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.LocalURL = refused(t); s.CloudAURL = unset; s.CloudBURL = unset })
		r := g.get(t, "/readyz", "", "")
		wantStatus(t, r, 503, "DECISIONS 8.4: 503 when not ready, with the ReadyReport")
		m := readyReport(t, r)
		if m["ready"] != false || m["router"] != "unconfigured" || m["local_backend"] != "unconfigured" {
			t.Errorf("readyz = %s, want ready false, router and local_backend unconfigured (DECISIONS 8.4)", r.Body)
		}
		checkProbeShape(t, m)
		lp := probe(m, "local_backend")
		if lp["configured"] != true || lp["reachable"] != false {
			t.Errorf("probes.local_backend = %v, want configured true, reachable false (DECISIONS 8.21)", lp)
		}
		if e, _ := lp["error"].(string); e == "" {
			t.Errorf("probes.local_backend.error empty for a refused backend (DECISIONS 8.4/8.21)")
		}
		if p := probe(m, "cloudA"); p["configured"] != false {
			t.Errorf("probes.cloudA = %v, want configured false (URL unset)", p)
		}
	})
	t.Run("local unset cloudA up", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.LocalURL = emptyURL; s.CloudBURL = unset })
		r := g.get(t, "/readyz", "", "")
		wantStatus(t, r, 200, "DECISIONS 8.4: built-in router available when one configured backend answered")
		m := readyReport(t, r)
		if m["ready"] != true || m["router"] != "available" || m["local_backend"] != "unconfigured" {
			t.Errorf("readyz = %s, want ready, router available, local_backend unconfigured (DECISIONS 8.4, 8.5: GATEWAY_LOCAL_URL=\"\" is unconfigured)", r.Body)
		}
		if p := probe(m, "local_backend"); p["configured"] != false {
			t.Errorf("probes.local_backend = %v, want configured false", p)
		}
		r = g.get(t, "/v1/info", tokAdmin, "")
		wantStatus(t, r, 200, "spec /v1/info")
		for _, m := range listOf(r.JSON()["models"]) {
			for _, b := range listOf(m["backends"]) {
				if b["provider"] == "local" && b["status"] != "unconfigured" {
					t.Errorf("/v1/info %v local backend with GATEWAY_LOCAL_URL=\"\": status %v, want unconfigured (DECISIONS 2)", m["alias"], b["status"])
				}
			}
		}
	})
	t.Run("local hangs: 1 s probe timeout", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) {
			s.CloudAURL, s.CloudBURL = unset, unset
			s.Local = upstreamtest.Config{Reply: upstreamtest.Reply{Hang: true}}
		})
		t0 := time.Now()
		r := g.get(t, "/readyz", "", "")
		d := time.Since(t0)
		if d > 1800*time.Millisecond {
			t.Errorf("readyz with a hanging backend took %v, want about 1 s (spec: 1 s timeout per backend)", d)
		}
		wantStatus(t, r, 503, "DECISIONS 8.4: backend that did not answer within 1 s is unconfigured; not ready")
		m := readyReport(t, r)
		if m["local_backend"] != "unconfigured" {
			t.Errorf("readyz local_backend %v, want unconfigured (DECISIONS 8.4)", m["local_backend"])
		}
		if p := probe(m, "local_backend"); p["reachable"] != false {
			t.Errorf("probes.local_backend = %v, want reachable false", p)
		}
	})
	t.Run("local url default", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.LocalURL = unset })
		m := readyReport(t, g.get(t, "/readyz", "", ""))
		if p := probe(m, "local_backend"); p["configured"] != true {
			t.Errorf("probes.local_backend = %v with GATEWAY_LOCAL_URL unset, want configured true (DECISIONS 2: default http://127.0.0.1:11434/v1)", p)
		}
	})
	t.Run("backends probed in parallel", func(t *testing.T) {
		t.Parallel()
		hang := upstreamtest.Config{Reply: upstreamtest.Reply{Hang: true}}
		g := start(t, func(s *setup) { s.Local, s.CloudA, s.CloudB = hang, hang, hang })
		t0 := time.Now()
		r := g.get(t, "/readyz", "", "")
		if d := time.Since(t0); d > 1800*time.Millisecond {
			t.Errorf("readyz with three hanging backends took %v, want about 1 s (spec GET /readyz: each backend probed in parallel with a 1 s timeout)", d)
		}
		wantStatus(t, r, 503, "DECISIONS 8.4: no backend answered within 1 s")
		m := readyReport(t, r)
		for _, k := range []string{"local_backend", "cloudA", "cloudB"} {
			if p := probe(m, k); p["configured"] != true || p["reachable"] != false {
				t.Errorf("probes.%s = %v, want configured true, reachable false (DECISIONS 8.21)", k, p)
			}
		}
	})
	t.Run("router url", func(t *testing.T) {
		t.Parallel()
		router := upstreamtest.New(t)
		g := start(t, func(s *setup) { s.Env["GATEWAY_ROUTER_URL"] = router.URL; s.LocalURL = refused(t) })
		r := g.get(t, "/readyz", "", "")
		wantStatus(t, r, 200, "DECISIONS 8.4: with GATEWAY_ROUTER_URL, router is that router's probe")
		m := readyReport(t, r)
		if m["router"] != "available" || m["ready"] != true {
			t.Errorf("readyz = %s, want router available, ready (DECISIONS 8.4)", r.Body)
		}
		// every model call goes to the router with the router_alias as model
		c := g.post(t, "/v1/chat/completions", tokAdmin, "", chatBody("lm-4-scout-cloudA", "via router"))
		wantStatus(t, c, 200, "DECISIONS 2: GATEWAY_ROUTER_URL gets every model call")
		if chatCalls(router) != 1 {
			t.Errorf("router received %d chat calls, want 1 (DECISIONS 2)", chatCalls(router))
		} else if b := lastBody(t, router, "/chat/completions"); b["model"] != "lm-4-scout-17b-16e-instruct" {
			t.Errorf("router got model %v, want the backend's router_alias lm-4-scout-17b-16e-instruct (DECISIONS 2, 8.5)", b["model"])
		}
	})
	t.Run("router url unreachable", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.Env["GATEWAY_ROUTER_URL"] = refused(t) })
		r := g.get(t, "/readyz", "", "")
		wantStatus(t, r, 503, "DECISIONS 8.4: with GATEWAY_ROUTER_URL, router is that router's probe")
		m := readyReport(t, r)
		if m["router"] != "unconfigured" || m["ready"] != false {
			t.Errorf("readyz with an unreachable router %s, want router unconfigured, ready false (DECISIONS 8.4)", r.Body)
		}
		if p := probe(m, "router"); p["configured"] != true || p["reachable"] != false {
			t.Errorf("probes.router %v, want configured true, reachable false", p)
		}
	})
}

func TestWireDetails(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	t.Run("json content type on success answers", func(t *testing.T) {
		mustPut := g.do(t, "PUT", "/v1/system-prompts/user", tokMember, "alice", map[string]any{"content": "x"}, nil)
		answers := []*resp{
			g.get(t, "/", "", ""), g.get(t, "/healthz", "", ""), g.get(t, "/readyz", "", ""), g.get(t, "/errors", "", ""),
			g.get(t, "/v1/models", tokMember, ""), g.get(t, "/v1/info", tokMember, ""),
			g.get(t, "/c1/conversations", tokMember, "alice"), g.get(t, "/v1/memory?visibility=private", tokMember, "alice"),
			g.get(t, "/v1/memory/usage?visibility=private", tokMember, "alice"), g.get(t, "/v1/tenant/config", tokMember, ""),
			g.get(t, "/v1/system-prompts/user/versions", tokMember, "alice"), mustPut,
			g.post(t, "/v1/chat/completions", tokMember, "", chatBody("lm-4-scout", "hi")),
			g.post(t, "/v1/embeddings", tokMember, "", map[string]any{"model": "lm-embed", "input": "x"}),
			g.post(t, "/v1/tools/execute", tokMember, "", map[string]any{"inspect": true}),
			g.get(t, "/v1/images", tokMember, ""),
			// the paths the spec names exist for a tenant_admin with a user too
			g.get(t, "/v1/images", tokAdmin, "u1"), g.get(t, "/v1/memory/usage?visibility=private", tokAdmin, "u1"),
		}
		for _, r := range answers {
			if ct := r.Header.Get("Content-Type"); r.Status != 200 || !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%s: status %d Content-Type %q, want 200 application/json (DECISIONS 8.30)", r.req, r.Status, ct)
			}
			if r.Header.Get("X-Request-Id") == "" {
				t.Errorf("%s: no x-request-id (DECISIONS 5)", r.req)
			}
		}
	})
	t.Run("stream headers", func(t *testing.T) {
		b := chatBody("lm-4-scout", "hi")
		b["stream"] = true
		r := g.do(t, "POST", "/v1/chat/completions", tokMember, "", b, H{"X-Request-Id": "sse-req-1"})
		if r.Header.Get("X-Request-Id") != "sse-req-1" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") || !strings.Contains(r.Header.Get("Cache-Control"), "no-cache") {
			t.Errorf("SSE answer headers %v: want x-request-id echoed, text/event-stream, Cache-Control no-cache (DECISIONS 5, 8.30)", r.Header)
		}
		r = c1(t, g, tokMember, "alice", map[string]any{"message": "hi", "model": "lm-4-scout-local"})
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") || !strings.Contains(r.Header.Get("Cache-Control"), "no-cache") {
			t.Errorf("/c1 SSE answer headers %v: want text/event-stream, no-cache (DECISIONS 8.30)", r.Header)
		}
	})
	t.Run("no notice without fallback", func(t *testing.T) {
		r := g.post(t, "/v1/chat/completions", tokMember, "", chatBody("lm-4-scout", "hi"))
		if n := r.Header.Get("GW-Notice"); r.Status != 200 || n != "" {
			t.Errorf("answer from the first backend carries GW-Notice %q (spec Events 2: notices say how the answer came about)", n)
		}
		b := chatBody("lm-4-scout", "hi")
		b["stream"] = true
		r = g.post(t, "/v1/chat/completions", tokMember, "", b)
		for _, e := range testkit.ParseSSE(t, string(r.Body)) {
			if e.Type == "gw.notice" {
				t.Errorf("gw.notice sent without fallback: %s", e.Data)
			}
		}
	})
	t.Run("bearer scheme case-insensitive", func(t *testing.T) {
		for _, scheme := range []string{"BEARER", "bearer"} {
			r := g.do(t, "GET", "/v1/models", "", "", nil, H{"Authorization": scheme + " " + tokMember})
			wantStatus(t, r, 200, "RFC 7235: the auth-scheme is case-insensitive (spec Authentication 1: Authorization: Bearer)")
		}
	})
	t.Run("lower-case header names on a stream", func(t *testing.T) {
		req, _ := http.NewRequest("POST", g.Base+"/v1/chat/completions", strings.NewReader(`{"model":"lm-4-scout","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		// set as sent, not canonicalised by Header.Set
		req.Header["authorization"] = []string{"Bearer " + tokMember}
		req.Header["x-request-id"] = []string{"lower-case-id"}
		r := send(t, client, req, "")
		if r.Status != 200 || r.Header.Get("X-Request-Id") != "lower-case-id" {
			t.Errorf("%s\n  with header names authorization and x-request-id in lower case: want 200 and x-request-id echoed (HTTP header names are case-insensitive; DECISIONS 5: on SSE answers too)", r)
		}
	})
	t.Run("embeddings passthrough", func(t *testing.T) {
		r := g.post(t, "/v1/embeddings", tokMember, "", map[string]any{"model": "lm-embed", "input": []string{"a"}, "encoding_format": "base64", "dimensions": 8})
		if wantStatus(t, r, 200, "embeddings") {
			up := lastBody(t, g.Local, "/embeddings")
			if up["encoding_format"] != "base64" || up["dimensions"] != 8.0 {
				t.Errorf("upstream embeddings body %s: want encoding_format and dimensions passed through (OpenAI clients send encoding_format base64 by default)", mustJSON(up))
			}
		}
	})
	t.Run("quota Retry-After", func(t *testing.T) {
		for i := 0; i < 3; i++ {
			r := g.post(t, "/v1/chat/completions", tokQuota, "", chatBody("lm-4-scout-local", "hi"))
			if r.Status == 429 {
				if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
					t.Errorf("model_quota_exhausted without Retry-After seconds (%q) (spec Events 6: Retry-After on quota 429)", r.Header.Get("Retry-After"))
				}
				return
			}
		}
		t.Errorf("quota of 2 requests per day not enforced")
	})
}
