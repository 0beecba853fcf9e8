// Command c1conversation holds a three-turn /c1 conversation with an embedded
// gateway and prints the stored history.
//
// Everything runs in-process: the gateway keeps its data in an in-memory store
// (store/memstore), answers come from a fake upstream that echoes the last user
// message, and the client talks to the gateway over httptest. Run it with
//
//	go run ./examples/c1conversation
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
)

const token = "example-token"

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "c1conversation:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	st := memstore.New()
	defer st.Close()
	tokens := auth.MustStatic(
		[]*auth.Tenant{{ID: "acme"}},
		map[string]auth.StaticToken{token: {Tenant: "acme"}},
	)
	g, err := gateway.New(
		gateway.WithStore(st),
		gateway.WithUpstream(echoUpstream{}),
		gateway.WithTokenCatalog(tokens),
		gateway.WithLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		return err
	}
	defer g.Close()
	srv := httptest.NewServer(g)
	defer srv.Close()

	c := client{base: srv.URL, user: "alice"}
	turns := []map[string]any{
		{"message": "Hello! My name is Alice.", "system_prompt": "You are a terse assistant."},
		{"message": "What is my name?", "stream": false},
		{"message": "Thanks, that is all.", "keep_last_turns": 1},
	}
	var id string
	for i, body := range turns {
		if id != "" {
			body["conversation_id"] = id
		}
		reply, convID, err := c.chat(body)
		if err != nil {
			return fmt.Errorf("turn %d: %w", i+1, err)
		}
		id = convID
		fmt.Fprintf(out, "turn %d: %s\n", i+1, reply)
	}

	var conv struct {
		ConversationID string `json:"conversation_id"`
		UserID         string `json:"user_id"`
		Messages       []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := c.get("/c1/conversations/"+id, &conv); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nstored history of conversation %s (user %s):\n", conv.ConversationID, conv.UserID)
	for _, m := range conv.Messages {
		var text string
		if json.Unmarshal(m.Content, &text) != nil {
			text = string(m.Content)
		}
		fmt.Fprintf(out, "  %-11s %s\n", m.Role+":", text)
	}
	return nil
}

// client is a /c1 client for one end user.
type client struct {
	base, user string
}

func (c client) do(method, path string, body any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("GW-User-Id", c.user)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	return resp, nil
}

// chat sends one turn and returns the reply text (joined from the stream's
// deltas, or from the JSON answer) and the conversation id.
func (c client) chat(body map[string]any) (reply, id string, err error) {
	resp, err := c.do("POST", "/c1/chat", body)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	id = resp.Header.Get("gw-conversation-id")
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var cp struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&cp); err != nil || len(cp.Choices) == 0 {
			return "", "", fmt.Errorf("bad completion: %v", err)
		}
		return cp.Choices[0].Message.Content, id, nil
	}
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case line == "data: [DONE]":
			return b.String(), id, nil
		case strings.HasPrefix(line, "data: ") && event == "":
			var ch struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ch) == nil && len(ch.Choices) > 0 {
				b.WriteString(ch.Choices[0].Delta.Content)
			}
		case strings.HasPrefix(line, "data: ") && event == "gw.error":
			return "", id, fmt.Errorf("stream failed: %s", line)
		case line == "":
			event = ""
		}
	}
	return "", id, fmt.Errorf("stream ended without [DONE]: %v", sc.Err())
}

func (c client) get(path string, v any) error {
	resp, err := c.do("GET", path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// echoUpstream is an in-process model: it answers with the number of messages
// it was sent and the last user message, as SSE or JSON as asked.
type echoUpstream struct{}

func (echoUpstream) Do(_ context.Context, req *upstream.Request) (*upstream.Response, error) {
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return nil, err
	}
	last := ""
	for _, m := range body.Messages {
		if m.Role == "user" {
			_ = json.Unmarshal(m.Content, &last)
		}
	}
	text := fmt.Sprintf("(saw %d messages) You said: %q", len(body.Messages), last)
	if !req.Stream {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-echo", "object": "chat.completion", "created": 0, "model": req.Alias,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": text}}},
		})
		return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(string(b)))}, nil
	}
	var sse strings.Builder
	for _, word := range strings.SplitAfter(text, " ") {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-echo", "object": "chat.completion.chunk", "created": 0, "model": req.Alias,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": word}, "finish_reason": nil}},
		})
		sse.WriteString("data: " + string(b) + "\n\n")
	}
	sse.WriteString("data: [DONE]\n\n")
	return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(sse.String()))}, nil
}
