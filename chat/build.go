package chat

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/chatgw/gateway/internal/jsonscan"
	"github.com/chatgw/gateway/internal/wire"
)

// newUUID returns a random (version 4) UUID in its canonical text form.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// resolveAlias applies the alias rule (docs/contract.md#post-c1chat): model
// wins; otherwise provider gives <base>-<provider> (auto: base), where base is
// the tenant's default_model without a trailing -local, -cloudA or -cloudB;
// neither gives default_model.
func resolveAlias(model, provider *string, defaultModel string) string {
	if model != nil {
		return *model
	}
	if provider == nil {
		return defaultModel
	}
	base := defaultModel
	for _, suffix := range [...]string{"-local", "-cloudA", "-cloudB"} {
		if b, ok := strings.CutSuffix(base, suffix); ok {
			base = b
			break
		}
	}
	if *provider == "auto" {
		return base
	}
	return base + "-" + *provider
}

// trimHistory splits the stored history into its system messages and its
// user/assistant messages, keeps the last 2*k of the latter when k is not nil,
// and returns the messages to send in their stored order
// with whether any were dropped.
func trimHistory(history []json.RawMessage, k *int32) ([]json.RawMessage, bool) {
	if k == nil {
		return history, false
	}
	keep := 2 * int(*k)
	turns := 0
	for _, h := range history {
		if roleOf(h) != "system" {
			turns++
		}
	}
	drop := turns - keep
	if drop <= 0 {
		return history, false
	}
	out := make([]json.RawMessage, 0, len(history)-drop)
	for _, h := range history {
		if roleOf(h) != "system" && drop > 0 {
			drop--
			continue
		}
		out = append(out, h)
	}
	return out, true
}

// roleOf returns a stored message's role, exactly as encoding/json reads it
// into a wire.Message. Loading a conversation reads the role of every message, so
// plainRole reads it in place when it can, without decoding the message, and
// anything it cannot read that way is decoded.
func roleOf(raw json.RawMessage) string {
	if role, ok := plainRole(raw); ok {
		return internRole(role)
	}
	var m wire.Message
	_ = json.Unmarshal(raw, &m)
	return m.Role
}

// errNotPlain ends plainRole's walk at a member it cannot read in place.
var errNotPlain = errors.New("chat: role needs json.Unmarshal")

// plainRole returns the role of raw, a single JSON object, when it can tell
// it without decoding: encoding/json matches member names case-insensitively
// (bytes.EqualFold) and the last match wins, so every member whose name folds
// to "role" is read, and none may hide behind an escaped name. A role value
// that is not a string, holds an escape, or is not valid UTF-8 (encoding/json
// makes each bad byte U+FFFD) is left to encoding/json (ok false). Members
// nested in other members are not the message's role and are only walked.
func plainRole(raw []byte) (role []byte, ok bool) {
	s := jsonscan.New(raw)
	i := s.Space(0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	end, err := s.Object(i, func(key jsonscan.Key, v int) (int, error) {
		if key.Escaped {
			return v, errNotPlain
		}
		if !bytes.EqualFold(raw[key.Start+1:key.End-1], []byte("role")) {
			return s.Value(v)
		}
		if raw[v] != '"' {
			return v, errNotPlain
		}
		end, info, err := s.String(v)
		if err != nil {
			return end, err
		}
		text := raw[v+1 : end-1]
		if info.Escaped || info.NonASCII && !utf8.Valid(text) {
			return end, errNotPlain
		}
		role = text
		return end, nil
	})
	return role, err == nil && s.Space(end) == len(raw)
}

// internRole returns role as a string, without allocating for the roles of
// the chat completions API.
func internRole(role []byte) string {
	switch string(role) { // no allocation: the compiler compares the bytes
	case "system":
		return "system"
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "tool":
		return "tool"
	case "developer":
		return "developer"
	}
	return string(role)
}

// userMessage builds the current user message: message as it is, or, when it is
// a string and images are given, a parts array [text, image_url...].
func userMessage(content json.RawMessage, images []imageRef) (json.RawMessage, error) {
	if len(images) > 0 {
		var text string
		if err := json.Unmarshal(content, &text); err != nil {
			return nil, err
		}
		parts := make([]any, 0, len(images)+1)
		parts = append(parts, map[string]string{"type": "text", "text": text})
		for _, img := range images {
			parts = append(parts, map[string]any{"type": "image_url", "image_url": img})
		}
		b, err := json.Marshal(parts)
		if err != nil {
			return nil, err
		}
		content = b
	}
	return wire.UserMessage(content)
}

// systemMessage returns a system message with content.
func systemMessage(content string) json.RawMessage {
	return wire.TextMessage("system", content)
}

// replayHistory returns the stored messages as they are sent upstream. Strict
// OpenAI-compatible backends reject (400) an assistant tool call that the tool
// messages directly after it do not answer, and /c1 stores no tool results (its
// user cannot send one), so an assistant message whose tool_calls are not all
// answered is rewritten:
//
//   - no call answered (the normal /c1 case): the message is sent without
//     tool_calls, with its content, or, when that is empty, a text naming the
//     tools it called, "[called tools: get_weather, now]", so that the model
//     still sees what it did;
//   - some answered: only the unanswered calls are left out, so that the tool
//     messages after it still answer a call.
//
// The stored history is not changed (GET shows the tool_calls). Without an
// unanswered tool call, history itself is returned.
func replayHistory(history []json.RawMessage) []json.RawMessage {
	var out []json.RawMessage
	for i, raw := range history {
		// Cheap filter first: only a message naming tool_calls can have any
		// (the stored messages are compact JSON written by this package).
		if !bytes.Contains(raw, []byte(`"tool_calls"`)) {
			continue
		}
		var m wire.Message
		if json.Unmarshal(raw, &m) != nil || m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		results := toolResults(history[i+1:])
		var kept []json.RawMessage
		var names []string
		for _, c := range m.ToolCalls {
			var ref wire.ToolCall // only its id and function name count
			_ = json.Unmarshal(c, &ref)
			if ref.ID != "" && results[ref.ID] {
				kept = append(kept, c)
			}
			names = append(names, ref.Function.Name)
		}
		if len(kept) == len(m.ToolCalls) {
			continue
		}
		if out == nil {
			out = append(make([]json.RawMessage, 0, len(history)), history...)
		}
		content := m.Content
		if len(kept) == 0 && isEmptyContent(content) {
			content, _ = json.Marshal("[called tools: " + strings.Join(names, ", ") + "]")
		}
		// Content null stays null when tool calls remain.
		out[i], _ = json.Marshal(wire.Message{Role: "assistant", Content: content, ToolCalls: kept})
	}
	if out == nil {
		return history
	}
	return out
}

// toolResults returns the tool_call_ids of the tool messages at the start of
// next (the ones that directly follow an assistant message).
func toolResults(next []json.RawMessage) map[string]bool {
	var ids map[string]bool
	for _, raw := range next {
		var m wire.Message
		if !bytes.Contains(raw, []byte(`"tool_call_id"`)) || json.Unmarshal(raw, &m) != nil || m.Role != "tool" {
			break
		}
		if ids == nil {
			ids = map[string]bool{}
		}
		ids[m.ToolCallID] = true
	}
	return ids
}

// isEmptyContent reports whether a message content is absent, null, "" or an
// empty array.
func isEmptyContent(raw json.RawMessage) bool {
	if wire.IsNull(raw) {
		return true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s == ""
	}
	var parts []json.RawMessage
	return json.Unmarshal(raw, &parts) == nil && len(parts) == 0
}
