package chat

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
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

// resolveAlias applies rule 1 of POST /c1/chat: model wins; otherwise provider
// gives <base>-<provider> (auto: base), where base is the tenant's default_model
// without a trailing -local, -cloudA or -cloudB (DECISIONS 8 item 6); neither
// gives default_model.
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

// message is the part of a stored or built chat message that building the
// upstream request looks at.
type message struct {
	Role string `json:"role"`
}

// trimHistory splits the stored history into its system messages and its
// user/assistant messages, keeps the last 2*k of the latter when k is not nil
// (DECISIONS 8 item 16), and returns the messages to send in their stored order
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

func roleOf(raw json.RawMessage) string {
	var m message
	_ = json.Unmarshal(raw, &m)
	return m.Role
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
	return json.Marshal(struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}{"user", content})
}

// systemMessage returns a system message with content.
func systemMessage(content string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{"system", content})
	return b
}
