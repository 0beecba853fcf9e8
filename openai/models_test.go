package openai_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/openai"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

type modelList struct {
	Object string `json:"object"`
	Data   []struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
		Status  string `json:"status"`
	} `json:"data"`
}

func listModels(t *testing.T, s *openai.Service, tenant *auth.Tenant) (ids []string, list modelList) {
	t.Helper()
	w := testkit.Record(s.Models, request("GET", "/v1/models", "", tenant, nil))
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/models: %d %v", w.Code, w.Header())
	}
	if got := w.Header().Get("Cache-Control"); got != "private, max-age=60" {
		t.Errorf("Cache-Control = %q, want private, max-age=60", got)
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, list
}

func TestModels(t *testing.T) {
	clk := clock.NewFake(time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC))
	s := newService(backend(), func(c *openai.Config) { c.Clock = clk })
	ids, list := listModels(t, s, allTenants)
	if diff := cmp.Diff([]string{"lm-4-scout", "lm-4-scout-local", "lm-text", "lm-reason", "lm-embed"}, ids); diff != "" {
		t.Errorf("ids mismatch (-want +got):\n%s", diff)
	}
	first := list.Data[0]
	if list.Object != "list" || first.Object != "model" || first.Created != clk.Now().Unix() || first.OwnedBy != "lm-4" {
		t.Errorf("list %+v", list)
	}
	ids, _ = listModels(t, s, &auth.Tenant{ID: "b", Models: []string{"lm-text", "lm-embed", "not-in-catalog"}})
	if diff := cmp.Diff([]string{"lm-text", "lm-embed"}, ids); diff != "" {
		t.Errorf("allowlisted ids mismatch (-want +got):\n%s", diff)
	}
	w := testkit.Record(s.Models, request("GET", "/v1/models", "", &auth.Tenant{ID: "c", Models: []string{}}, nil))
	if w.Body.String() != `{"object":"list","data":[]}`+"\n" {
		t.Errorf("empty allowlist: %s", w.Body)
	}
}

func TestModelsCache(t *testing.T) {
	clk := clock.NewFake(time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC))
	cat := testCatalog()
	s := openai.New(openai.Config{Upstream: backend(), Catalog: cat, Clock: clk})
	restricted := &auth.Tenant{ID: "b", Models: []string{"lm-text", "lm-new"}}
	before, _ := listModels(t, s, allTenants)
	beforeRestricted, _ := listModels(t, s, restricted)

	// A model joins the catalog between requests.
	cat.Models = append(cat.Models, upstream.ModelInfo{Alias: "lm-new", Kind: upstream.KindChat})
	clk.Advance(59 * time.Second)
	if got, _ := listModels(t, s, allTenants); !cmp.Equal(before, got) {
		t.Errorf("after 59 s: %v, want the cached %v", got, before)
	}
	if got, _ := listModels(t, s, restricted); !cmp.Equal(beforeRestricted, got) {
		t.Errorf("after 59 s, restricted: %v, want the cached %v", got, beforeRestricted)
	}
	// Another allowlist is computed afresh.
	if got, _ := listModels(t, s, &auth.Tenant{ID: "c", Models: []string{"lm-new"}}); !cmp.Equal([]string{"lm-new"}, got) {
		t.Errorf("new allowlist: %v", got)
	}
	clk.Advance(time.Second) // 60 s: expired
	got, _ := listModels(t, s, allTenants)
	if diff := cmp.Diff(append(before, "lm-new"), got); diff != "" {
		t.Errorf("after 60 s mismatch (-want +got):\n%s", diff)
	}
	if got, _ := listModels(t, s, restricted); !cmp.Equal([]string{"lm-text", "lm-new"}, got) {
		t.Errorf("after 60 s, restricted: %v", got)
	}
}

func TestInfo(t *testing.T) {
	cat := testCatalog()
	s := openai.New(openai.Config{Upstream: backend(), Catalog: cat})
	w := testkit.Record(s.Info, request("GET", "/v1/info", "", &auth.Tenant{ID: "b", Models: []string{"lm-reason", "lm-4-scout-local"}}, nil))
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/info: %d %v", w.Code, w.Header())
	}
	var got map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"notes": "test catalog",
		"models": []any{
			map[string]any{
				"alias": "lm-4-scout-local", "description": "Scout, local only", "family": "lm-4", "kind": "chat",
				"context_window": float64(100000),
				"modalities": map[string]any{"text_in": true, "text_out": true, "image_in": true, "audio_in": false,
					"video_in": false, "image_out": false},
				"status": "available", "context_window_source": "catalog", "tools": false, "json_mode": false, "reasoning_mode": false, "license": "open",
				"backends": []any{map[string]any{"provider": "local", "router_alias": "scout-local", "status": "available",
					"notes": nil, "pricing": nil}},
				"constraints": map[string]any{"accepts_image_url": false, "min_max_tokens": nil, "typical_response_seconds": nil},
				"notes":       "",
			},
			map[string]any{
				"alias": "lm-reason", "description": "Reasoning", "family": "lm-r", "kind": "chat",
				"context_window": float64(100000),
				"modalities": map[string]any{"text_in": true, "text_out": true, "image_in": false, "audio_in": false,
					"video_in": false, "image_out": false},
				"status": "available", "context_window_source": "catalog", "tools": false, "json_mode": false, "reasoning_mode": true, "license": "open",
				"backends": []any{map[string]any{"provider": "cloudA", "router_alias": "scout-clouda", "status": "available",
					"notes": nil, "pricing": "free tier"}},
				"constraints": map[string]any{"accepts_image_url": false, "min_max_tokens": float64(200), "typical_response_seconds": nil},
				"notes":       "",
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /v1/info mismatch (-want +got):\n%s", diff)
	}
	w = testkit.Record(s.Info, request("GET", "/v1/info", "", allTenants, nil))
	var all upstream.Catalog
	if err := json.Unmarshal(w.Body.Bytes(), &all); err != nil || len(all.Models) != 5 {
		t.Fatalf("all models: %d, %v", len(all.Models), err)
	}
	// base_url_env is left out of the answer, not out of the catalog.
	if got := cat.Models[0].Backends[0].BaseURLEnv; got != "local" {
		t.Errorf("catalog BaseURLEnv = %q after GET /v1/info, want it kept", got)
	}
}

// TestGetModel: GET /v1/models/{id} answers the list's entry for an alias
// the tenant may use, and 404 route_not_found, alike, for an unknown alias
// and for one outside the allowlist.
func TestGetModel(t *testing.T) {
	clk := clock.NewFake(time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC))
	s := newService(backend(), func(c *openai.Config) { c.Clock = clk })
	router := testkit.Router(t, map[string]http.HandlerFunc{"GET /v1/models/:id": s.GetModel})
	restricted := &auth.Tenant{ID: "b", Models: []string{"lm-text", "lm-embed"}}
	tests := []struct {
		id     string
		tenant *auth.Tenant
		want   string // the model's JSON, or the error
	}{
		{"lm-4-scout", allTenants, `{"id":"lm-4-scout","object":"model","created":1746100800,"owned_by":"lm-4","status":"available"}`},
		{"lm-embed", restricted, `{"id":"lm-embed","object":"model","created":1746100800,"owned_by":"lm-e","status":"available"}`},
		{"lm-4-scout", restricted, "404 route_not_found"},
		{"gpt-5", allTenants, "404 route_not_found"},
	}
	for _, tt := range tests {
		w := testkit.Serve(t, router, testkit.Request{Method: "GET", Target: "/v1/models/" + tt.id, Principal: testkit.Member(tt.tenant)})
		got := strings.TrimSpace(w.Body.String())
		if w.Code != 200 {
			e := testkit.ErrorOf(t, w.Code, w.Body.Bytes())
			got = strconv.Itoa(e.Status) + " " + e.Code
		} else if cc := w.Header().Get("Cache-Control"); cc != "private, max-age=60" {
			t.Errorf("GET /v1/models/%s: Cache-Control %q", tt.id, cc)
		}
		if got != tt.want {
			t.Errorf("GET /v1/models/%s as %s: %s, want %s", tt.id, tt.tenant.ID, got, tt.want)
		}
	}
	// The entry is the list's, byte for byte.
	_, list := listModels(t, s, allTenants)
	entry, _ := json.Marshal(list.Data[0])
	if got := testkit.Serve(t, router, testkit.Request{Method: "GET", Target: "/v1/models/lm-4-scout", Principal: testkit.Member(allTenants)}); strings.TrimSpace(got.Body.String()) != string(entry) {
		t.Errorf("GET /v1/models/lm-4-scout = %s, want the list's entry %s", got.Body, entry)
	}
}

// TestUnconfiguredModel: a model none of whose backends has an address is
// marked unconfigured in /v1/info and /v1/models, and a chat with it
// answers 400 model_not_configured naming the variable to set, without an
// upstream call.
func TestUnconfiguredModel(t *testing.T) {
	up := backend()
	// Only the local backend has an address: lm-reason goes to cloudA alone.
	cat := testCatalog().WithStatus(upstream.Backends{LocalURL: "http://127.0.0.1:1/v1"})
	s := openai.New(openai.Config{Upstream: up, Catalog: cat})
	tenant := &auth.Tenant{ID: "b", Models: []string{"lm-reason", "lm-4-scout-local"}}

	w := testkit.Record(s.Info, request("GET", "/v1/info", "", tenant, nil))
	var info struct {
		Models []struct{ Alias, Status string } `json:"models"`
	}
	testkit.Decode(t, w, 200, &info)
	_, list := listModels(t, s, tenant)
	got := map[string][2]string{}
	for i, m := range info.Models {
		got[m.Alias] = [2]string{m.Status, list.Data[i].Status}
	}
	want := map[string][2]string{"lm-reason": {"unconfigured", "unconfigured"}, "lm-4-scout-local": {"available", "available"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses in /v1/info and /v1/models mismatch (-want +got):\n%s", diff)
	}

	w = testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions",
		`{"model":"lm-reason","messages":[{"role":"user","content":"x"}]}`, tenant, nil))
	testkit.CheckError(t, w, testkit.Error{Status: 400, Code: "model_not_configured", Param: "model"})
	if !strings.Contains(w.Body.String(), "GATEWAY_CLOUDA_URL") {
		t.Errorf("message %s does not name GATEWAY_CLOUDA_URL", w.Body)
	}
	if n := up.Calls(); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
}
