package e2e_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestModelsAndInfo(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) { s.CloudBURL = unset })
	t.Run("models list filtered by allowlist", func(t *testing.T) {
		for _, tc := range []struct {
			token string
			want  []string
		}{{tokAdmin, acmeModels}, {tokGlobex, allAliases}, {tokTiny, []string{"lm-4-scout-local"}}} {
			r := g.get(t, "/v1/models", tc.token, "")
			if !wantStatus(t, r, 200, "spec /v1/models") {
				continue
			}
			m := r.JSON()
			if m["object"] != "list" {
				t.Errorf("/v1/models object %v, want list", m["object"])
			}
			got := map[string]bool{}
			for _, d := range listData(r) {
				id, _ := d["id"].(string)
				got[id] = true
				if d["object"] != "model" || d["owned_by"] == nil {
					t.Errorf("/v1/models entry %v: want object model, created, owned_by (issue 3 item 1)", d)
				}
				if _, ok := d["created"].(float64); !ok {
					t.Errorf("/v1/models entry %v: created not an integer", d)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("/v1/models for %s: %d models %v, want %v (issue 3 item 1: filtered by the allowlist)", tc.token, len(got), keys(got), tc.want)
			}
			for _, w := range tc.want {
				if !got[w] {
					t.Errorf("/v1/models for %s lacks %s", tc.token, w)
				}
			}
		}
		// a tenant without model in its allowlist gets 400 on chat
		r := g.post(t, "/v1/chat/completions", tokTiny, "", chatBody("lm-4-scout", "hi"))
		wantErr(t, r, 400, "invalid_request_error", "model_not_in_allowlist", "model", "spec: model not in the allowlist")
		wantStatus(t, g.post(t, "/v1/chat/completions", tokTiny, "", chatBody("lm-4-scout-local", "hi")), 200, "allowed model")
	})
	t.Run("info", func(t *testing.T) {
		r := g.get(t, "/v1/info", tokGlobex, "")
		if !wantStatus(t, r, 200, "spec /v1/info") {
			return
		}
		var cat struct {
			Models []map[string]any `json:"models"`
			Notes  *string          `json:"notes"`
		}
		if err := json.Unmarshal(r.Body, &cat); err != nil || cat.Notes == nil {
			t.Fatalf("/v1/info: want {models, notes string}: %v %s", err, truncate(string(r.Body), 200))
		}
		byAlias := map[string]map[string]any{}
		kinds := map[string]bool{}
		for _, m := range cat.Models {
			alias, _ := m["alias"].(string)
			byAlias[alias] = m
			checkModelInfo(t, m)
			k, _ := m["kind"].(string)
			kinds[k] = true
		}
		for _, a := range allAliases {
			if byAlias[a] == nil {
				t.Errorf("/v1/info lacks %s (DECISIONS 4)", a)
			}
		}
		for _, k := range []string{"chat", "embeddings", "image_generation", "audio_transcription"} {
			if !kinds[k] {
				t.Errorf("/v1/info has no model of kind %s (DECISIONS 4, 8.5)", k)
			}
		}
		if m := byAlias["lm-4-scout"]; m != nil {
			var provs, stats []string
			for _, b := range m["backends"].([]any) {
				bm := b.(map[string]any)
				provs = append(provs, bm["provider"].(string))
				stats = append(stats, bm["status"].(string))
			}
			if strings.Join(provs, ",") != "local,cloudA,cloudB" {
				t.Errorf("lm-4-scout backends %v, want local,cloudA,cloudB (spec aliases table)", provs)
			}
			if strings.Join(stats, ",") != "available,available,unconfigured" {
				t.Errorf("lm-4-scout backend statuses %v with cloudB unset, want available,available,unconfigured (DECISIONS 2: unset URL is unconfigured)", stats)
			}
		}
		if m := byAlias["lm-reasoner"]; m != nil {
			if c, _ := m["constraints"].(map[string]any); c["min_max_tokens"] != 200.0 {
				t.Errorf("lm-reasoner min_max_tokens %v, want 200 (DECISIONS 4)", c["min_max_tokens"])
			}
		}
		if m := byAlias["lm-text-8k"]; m != nil {
			if mo, _ := m["modalities"].(map[string]any); mo["image_in"] != false {
				t.Errorf("lm-text-8k image_in %v, want false", mo["image_in"])
			}
		}
		if strings.Contains(string(r.Body), "127.0.0.1") || strings.Contains(string(r.Body), "sk-") {
			t.Errorf("/v1/info leaks a backend URL or key")
		}
	})
	t.Run("models owned_by and created", func(t *testing.T) {
		family := map[string]any{}
		for _, m := range listOf(g.get(t, "/v1/info", tokGlobex, "").JSON()["models"]) {
			family[str(m["alias"])] = m["family"]
		}
		r := g.get(t, "/v1/models", tokGlobex, "")
		var created any
		for _, d := range listData(r) {
			if d["owned_by"] != family[str(d["id"])] {
				t.Errorf("/v1/models %v owned_by %v, want the model family %v (docs/decisions.md)", d["id"], d["owned_by"], family[str(d["id"])])
			}
			if created == nil {
				created = d["created"]
			} else if d["created"] != created {
				t.Errorf("/v1/models %v created %v, want the gateway's start time %v like every entry (docs/decisions.md)", d["id"], d["created"], created)
			}
		}
		if c, _ := created.(float64); c < float64(time.Now().Add(-10*time.Minute).Unix()) || c > float64(time.Now().Unix()+1) {
			t.Errorf("/v1/models created %v, want the gateway's start time (docs/decisions.md)", created)
		}
	})
	t.Run("info filtered by allowlist", func(t *testing.T) {
		r := g.get(t, "/v1/info", tokMember, "")
		if !wantStatus(t, r, 200, "spec /v1/info") {
			return
		}
		models := listOf(r.JSON()["models"])
		var got []string
		for _, m := range models {
			got = append(got, str(m["alias"]))
		}
		if diff := cmp.Diff(acmeModels, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("/v1/info aliases for acme mismatch (-want +got):\n%s", diff)
		}
		// local and cloudA answer, cloudB is unset
		want := map[string]string{"local": "available", "cloudA": "available", "cloudB": "unconfigured"}
		for _, m := range models {
			for _, b := range listOf(m["backends"]) {
				if p := str(b["provider"]); b["status"] != want[p] {
					t.Errorf("/v1/info %v backend %s: status %v, want %s (DECISIONS 2)", m["alias"], p, b["status"], want[p])
				}
			}
		}
	})
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// checkModelInfo checks every required field of a ModelInfo (spec ModelInfo,
// Modalities, ModelConstraints, BackendInfo).
func checkModelInfo(t *testing.T, m map[string]any) {
	t.Helper()
	alias := m["alias"]
	str := func(k string) {
		if _, ok := m[k].(string); !ok {
			t.Errorf("ModelInfo %v: %s not a string (spec ModelInfo: all fields required)", alias, k)
		}
	}
	boolean := func(o map[string]any, k, where string) {
		if _, ok := o[k].(bool); !ok {
			t.Errorf("ModelInfo %v: %s%s not a boolean (spec)", alias, where, k)
		}
	}
	for _, k := range []string{"alias", "description", "family", "license", "notes", "kind"} {
		str(k)
	}
	if cw, ok := m["context_window"].(float64); !ok || cw < 0 || cw != float64(int64(cw)) {
		t.Errorf("ModelInfo %v: context_window %v not a non-negative integer", alias, m["context_window"])
	}
	for _, k := range []string{"tools", "json_mode", "reasoning_mode"} {
		boolean(m, k, "")
	}
	mo, ok := m["modalities"].(map[string]any)
	if !ok {
		t.Errorf("ModelInfo %v: modalities missing", alias)
	} else {
		for _, k := range []string{"text_in", "text_out", "image_in", "audio_in", "video_in", "image_out"} {
			boolean(mo, k, "modalities.")
		}
	}
	c, ok := m["constraints"].(map[string]any)
	if !ok {
		t.Errorf("ModelInfo %v: constraints missing", alias)
	} else {
		if c["accepts_image_url"] != false {
			t.Errorf("ModelInfo %v: accepts_image_url %v, want false (spec: false for all providers)", alias, c["accepts_image_url"])
		}
		for _, k := range []string{"min_max_tokens", "typical_response_seconds"} {
			if v, present := c[k]; !present {
				t.Errorf("ModelInfo %v: constraints.%s absent (want integer or null)", alias, k)
			} else if v != nil {
				if f, ok := v.(float64); !ok || f < 0 {
					t.Errorf("ModelInfo %v: constraints.%s = %v", alias, k, v)
				}
			}
		}
	}
	bs, ok := m["backends"].([]any)
	if !ok || len(bs) == 0 {
		t.Errorf("ModelInfo %v: backends missing or empty", alias)
	}
	for _, b := range bs {
		bm, _ := b.(map[string]any)
		p, _ := bm["provider"].(string)
		if p != "local" && p != "cloudA" && p != "cloudB" {
			t.Errorf("ModelInfo %v: backend provider %q, want local, cloudA or cloudB (DECISIONS 8.5)", alias, p)
		}
		if s, _ := bm["router_alias"].(string); s == "" {
			t.Errorf("ModelInfo %v: backend router_alias missing", alias)
		}
		switch bm["status"] {
		case "available", "deprecated", "unconfigured", "planned":
		default:
			t.Errorf("ModelInfo %v: backend status %v not a BackendStatus", alias, bm["status"])
		}
		if p == "local" && bm["pricing"] != nil {
			t.Errorf("ModelInfo %v: local backend pricing %v, want null (spec BackendInfo)", alias, bm["pricing"])
		}
		if _, ok := bm["base_url_env"]; ok {
			t.Errorf("ModelInfo %v: backend %s has base_url_env, an operator detail (spec BackendInfo)", alias, p)
		}
	}
}

func TestInfoUnconfigured(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) { s.LocalURL = emptyURL; s.CloudAURL = unset; s.CloudBURL = unset })
	r := g.get(t, "/v1/info", tokGlobex, "")
	if !wantStatus(t, r, 200, "spec /v1/info") {
		return
	}
	var cat struct {
		Models []map[string]any `json:"models"`
	}
	json.Unmarshal(r.Body, &cat)
	for _, m := range cat.Models {
		for _, b := range m["backends"].([]any) {
			if bm := b.(map[string]any); bm["status"] != "unconfigured" {
				t.Errorf("%v backend %v status %v with no URL configured, want unconfigured (DECISIONS 2)", m["alias"], bm["provider"], bm["status"])
			}
		}
	}
}

// TestModelsFile: GATEWAY_MODELS_FILE replaces the built-in catalog (DECISIONS 2, 4).
func TestModelsFile(t *testing.T) {
	t.Parallel()
	backend := func(provider, alias string) map[string]any {
		return map[string]any{"provider": provider, "router_alias": alias, "status": "available", "notes": nil, "pricing": nil, "base_url_env": provider}
	}
	catalog := map[string]any{"notes": "custom catalog", "models": []any{map[string]any{
		"alias": "my-chat", "description": "custom", "family": "custom-family", "kind": "chat", "context_window": 4096,
		"modalities": map[string]any{"text_in": true, "text_out": true, "image_in": false, "audio_in": false, "video_in": false, "image_out": false},
		"tools":      false, "json_mode": false, "reasoning_mode": false, "license": "test",
		"backends":    []any{backend("local", "my-local-model"), backend("cloudA", "my-cloud-model")},
		"constraints": map[string]any{"accepts_image_url": false, "min_max_tokens": 32, "typical_response_seconds": nil},
		"notes":       "",
	}}}
	path := filepath.Join(t.TempDir(), "models.json")
	writeFile(t, path, mustJSON(catalog))
	g := start(t, func(s *setup) {
		s.Env["GATEWAY_MODELS_FILE"] = path
		s.LocalURL = refused(t)
		s.Tokens = tokenFileJSON(map[string]any{
			"tenants": []any{map[string]any{"id": "t"}},
			"tokens":  []any{map[string]any{"token": tokGlobex, "tenant": "t", "role": "tenant_admin"}},
		})
	})
	const ref = "DECISIONS 4: the catalog is overridable by GATEWAY_MODELS_FILE in the same format"
	r := g.get(t, "/v1/info", tokGlobex, "")
	if wantStatus(t, r, 200, ref) {
		models := listOf(r.JSON()["models"])
		if len(models) != 1 || models[0]["alias"] != "my-chat" {
			t.Errorf("/v1/info %s, want only my-chat (%s)", truncate(string(r.Body), 300), ref)
		} else {
			checkModelInfo(t, models[0])
		}
	}
	if d := listData(g.get(t, "/v1/models", tokGlobex, "")); len(d) != 1 || d[0]["id"] != "my-chat" {
		t.Errorf("/v1/models %v, want only my-chat (%s)", d, ref)
	}
	wantErr(t, g.post(t, "/v1/chat/completions", tokGlobex, "", chatBody("lm-4-scout", "hi")), 400, "invalid_request_error", "model_not_in_allowlist", "model", ref+": built-in aliases are gone")
	b := chatBody("my-chat", "hi")
	b["max_tokens"] = 8
	r = g.post(t, "/v1/chat/completions", tokGlobex, "", b)
	if wantStatus(t, r, 200, ref) {
		if up := lastBody(t, g.CloudA, "/chat/completions"); up["model"] != "my-cloud-model" || up["max_tokens"] != 32.0 {
			t.Errorf("cloudA got model %v max_tokens %v, want the file's router_alias my-cloud-model and its min_max_tokens 32 (DECISIONS 4, 8.5; spec ModelConstraints)", up["model"], up["max_tokens"])
		}
		if r.Header.Get("gw-applied") != "max_tokens_floored=32" || !strings.Contains(r.Header.Get("GW-Notice"), "backend_fallback") {
			t.Errorf("answer headers gw-applied %q GW-Notice %q, want max_tokens_floored=32 and backend_fallback", r.Header.Get("gw-applied"), r.Header.Get("GW-Notice"))
		}
	}
}
