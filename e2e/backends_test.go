package e2e_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/testkit"
)

// Issue 16, item 7: from the demo to a real model.

// TestAnswersCarryTheAlias: the model of a JSON answer and of every chunk of
// a stream is the alias the client asked for, not the backend's name; the
// GW-Backend headers say which backend served.
func TestAnswersCarryTheAlias(t *testing.T) {
	t.Parallel()
	g := start(t, nil)
	r := g.post(t, "/v1/chat/completions", tokGlobex, "", chatBody("lm-4-scout", "hi"))
	if wantStatus(t, r, 200, "issue 16 item 7") {
		if m := r.JSON()["model"]; m != "lm-4-scout" {
			t.Errorf("JSON answer model %v, want the alias lm-4-scout (issue 16 item 7)", m)
		}
		if b, bm := r.Header.Get("GW-Backend"), r.Header.Get("GW-Backend-Model"); b != "local" || bm == "" || bm == "lm-4-scout" {
			t.Errorf("GW-Backend %q, GW-Backend-Model %q: want local and its router_alias", b, bm)
		}
	}
	body := chatBody("lm-4-scout", "hi")
	body["stream"] = true
	r = g.post(t, "/v1/chat/completions", tokGlobex, "", body)
	if !wantStatus(t, r, 200, "issue 16 item 7") {
		return
	}
	chunks := 0
	for _, ev := range testkit.ParseSSE(t, string(r.Body)) {
		if ev.Data == "[DONE]" {
			continue
		}
		var c struct{ Model string }
		json.Unmarshal([]byte(ev.Data), &c)
		chunks++
		if c.Model != "lm-4-scout" {
			t.Errorf("chunk %s: model %q, want the alias lm-4-scout", ev.Data, c.Model)
		}
	}
	if chunks == 0 {
		t.Errorf("stream without chunks: %s", r.Body)
	}
}

// TestModelNotConfigured: a model none of whose backends has a URL answers
// 400 model_not_configured naming the variable, and is marked in /v1/info and
// /v1/models; a model with a configured backend still answers.
func TestModelNotConfigured(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) { s.CloudAURL = unset })
	r := g.post(t, "/v1/chat/completions", tokGlobex, "", chatBody("lm-4-scout-cloudA", "hi"))
	if wantErr(t, r, 400, "invalid_request_error", "model_not_configured", "model", "issue 16 item 7") &&
		!strings.Contains(string(r.Body), "GATEWAY_CLOUDA_URL") {
		t.Errorf("message does not name GATEWAY_CLOUDA_URL: %s", r.Body)
	}
	if n := g.CloudA.CallCount(); n != 0 {
		t.Errorf("cloudA got %d requests", n)
	}
	wantStatus(t, g.post(t, "/v1/chat/completions", tokGlobex, "", chatBody("lm-4-scout", "hi")), 200, "a chain with a configured backend")
	status := func(path, idKey, listKey string) string {
		for _, m := range g.get(t, path, tokGlobex, "").JSON()[listKey].([]any) {
			if m := m.(map[string]any); m[idKey] == "lm-4-scout-cloudA" {
				s, _ := m["status"].(string)
				return s
			}
		}
		return "absent"
	}
	if info, models := status("/v1/info", "alias", "models"), status("/v1/models", "id", "data"); info != "unconfigured" || models != "unconfigured" {
		t.Errorf("lm-4-scout-cloudA status: /v1/info %q, /v1/models %q; want unconfigured in both", info, models)
	}
}

// switchable is a model server that can be taken down (it then drops every
// connection) and brought back, serving llama.cpp's /props with nCtx.
type switchable struct {
	*httptest.Server
	down atomic.Bool
	nCtx atomic.Int64
}

func newSwitchable(t *testing.T, nCtx int64) *switchable {
	s := &switchable{}
	s.nCtx.Store(nCtx)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/props":
			json.NewEncoder(w).Encode(map[string]any{"default_generation_settings": map[string]any{"n_ctx": s.nCtx.Load()},
				"total_slots": 1, "model_path": "/models/tiny.gguf", "modalities": map[string]any{"vision": false, "audio": false}})
		case "/v1/models":
			w.Write([]byte(`{"object":"list","data":[{"id":"/models/tiny.gguf","object":"model","owned_by":"llamacpp"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestInfoAgreesWithReadyz: once /readyz finds the local backend down,
// /v1/info says so too, and both say it is back once it is.
func TestInfoAgreesWithReadyz(t *testing.T) {
	t.Parallel()
	local := newSwitchable(t, 4096)
	g := start(t, func(s *setup) { s.LocalURL = local.URL + "/v1" })
	look := func() [2]string {
		rd, _ := g.get(t, "/readyz", "", "").JSON()["local_backend"].(string)
		for _, m := range g.get(t, "/v1/info", tokGlobex, "").JSON()["models"].([]any) {
			if m := m.(map[string]any); m["alias"] == "lm-4-scout-local" {
				b := m["backends"].([]any)[0].(map[string]any)
				return [2]string{rd, b["status"].(string)}
			}
		}
		return [2]string{rd, "absent"}
	}
	for _, down := range []bool{false, true, false} {
		local.down.Store(down)
		want := [2]string{"available", "available"}
		if down {
			want = [2]string{"unconfigured", "unconfigured"}
		}
		if got := look(); got != want {
			t.Errorf("local down %v: /readyz %q, /v1/info %q; want %q (issue 16 item 7: they agree)", down, got[0], got[1], want)
		}
	}
}

// TestContextWindowFromProps: the local backend is a llama.cpp server whose
// /props says 512 tokens: /v1/info shows it with its source, the pre-flight
// check refuses a longer request, and SIGHUP learns a new value.
func TestContextWindowFromProps(t *testing.T) {
	t.Parallel()
	local := newSwitchable(t, 512)
	models, _ := filepath.Abs("../docs/models/llama-cpp.json")
	g := start(t, func(s *setup) {
		s.LocalURL = local.URL + "/v1"
		s.Env["GATEWAY_MODELS_FILE"] = models
	})
	window := func() (float64, string) {
		for _, m := range g.get(t, "/v1/info", tokGlobex, "").JSON()["models"].([]any) {
			if m := m.(map[string]any); m["alias"] == "local-chat" {
				n, _ := m["context_window"].(float64)
				src, _ := m["context_window_source"].(string)
				return n, src
			}
		}
		return 0, "absent"
	}
	if n, src := window(); n != 512 || src != "llama.cpp:/props" {
		t.Errorf("/v1/info local-chat: context_window %v from %q, want 512 from llama.cpp:/props", n, src)
	}
	r := g.post(t, "/v1/chat/completions", tokGlobex, "", chatBody("local-chat", strings.Repeat("word ", 600)))
	wantErr(t, r, 400, "invalid_request_error", "context_window_exceeded", "messages", "issue 16 item 7: the learned window")
	local.nCtx.Store(2048)
	g.Signal(syscall.SIGHUP)
	if !waitFor(5*time.Second, func() bool { n, _ := window(); return n == 2048 }) {
		n, src := window()
		t.Errorf("after SIGHUP: context_window %v from %q, want 2048", n, src)
	}
}

// TestModelsFileErrorNamesTheLine: a bad models file stops gatewayd with an
// error naming the file, the line and column, and the field.
func TestModelsFileErrorNamesTheLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "models.json")
	bad := "[\n  {\"alias\": \"x\", \"kind\": \"chat\", \"context_window\": 8,\n   \"backends\": [{\"provider\": \"local\", \"router_alias\": \"x\", \"status\": \"up\"}]}\n]\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr := runToExit(t, map[string]string{"GATEWAY_MODELS_FILE": path, "GATEWAY_TOKENS_FILE": writeTokens(t)})
	want := path + ": catalog: line 3, column 70: models[0].backends[0].status: unknown status \"up\""
	if code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %s; want a failure with %q", code, tail(stderr, 600), want)
	}
}

// writeTokens writes the default token file and returns its path.
func writeTokens(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "tokens.json")
	writeFile(t, p, defaultTokens())
	return p
}
