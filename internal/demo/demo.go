// Package demo is the deterministic demo backend that `gatewayd -dev` serves when no
// real backend answers, so that a newcomer can chat on a fresh machine. It speaks
// just enough of the OpenAI API (chat completions, JSON and SSE, and a model list)
// and says in every answer that it is a demo. It is never used outside -dev.
package demo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Handler returns the demo backend's HTTP handler, mounted at its base URL (the
// gateway calls <base>/chat/completions and <base>/models).
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /chat/completions", chat)
	mux.HandleFunc("GET /models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"demo","object":"model","created":0,"owned_by":"chatgw-demo"}]}`)
	})
	return mux
}

type request struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// reply is the demo's deterministic answer to the last user message.
func reply(req *request) string {
	last := ""
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			last = s
		} else {
			last = "(a message with parts)"
		}
	}
	return fmt.Sprintf("[chatgw demo backend] You said: %q. Configure a real backend (GATEWAY_LOCAL_URL or a cloud host) for real answers.", last)
}

// pace is the pause between two streamed words: slow enough that a newcomer
// sees the answer arrive token by token, as from a real model.
const pace = 30 * time.Millisecond

func chat(w http.ResponseWriter, r *http.Request) {
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"invalid JSON","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	text := reply(&req)
	id, created := "chatcmpl-demo", time.Now().Unix()
	words := strings.SplitAfter(text, " ")
	usage := map[string]int{"prompt_tokens": promptTokens(&req), "completion_tokens": len(words)}
	usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": text}}},
			"usage": usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	send := func(v map[string]any) {
		v["id"], v["object"], v["created"], v["model"] = id, "chat.completion.chunk", created, req.Model
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		_ = rc.Flush()
	}
	chunk := func(delta map[string]any, finish any) {
		send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, word := range words {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(pace):
		}
		chunk(map[string]any{"content": word}, nil)
	}
	chunk(map[string]any{}, "stop")
	if req.StreamOptions.IncludeUsage {
		// As OpenAI sends it: a last chunk with no choices and the usage.
		send(map[string]any{"choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// promptTokens is a rough count of the request's words, so that the usage
// the demo reports grows with the prompt as a real model's does.
func promptTokens(req *request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(strings.Fields(string(m.Content)))
	}
	return max(n, 1)
}
