package testkit

import (
	"strings"

	"github.com/chatgw/gateway/upstream"
)

// OnePixelPNG is a valid 1x1 PNG in base64: an image the pre-flight checks
// decode, small enough to quote in a request.
const OnePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// Backends is a model's backend chain of providers, in order: each
// available, with router alias "scout-" and the provider in lower case
// (scout-local, scout-cloudA's scout-clouda).
func Backends(providers ...string) []upstream.BackendInfo {
	out := make([]upstream.BackendInfo, 0, len(providers))
	for _, p := range providers {
		out = append(out, upstream.BackendInfo{Provider: p, RouterAlias: "scout-" + strings.ToLower(p), Status: upstream.StatusAvailable})
	}
	return out
}

// ChatCatalog is the catalog of the translated chat families' tests
// (anthropic, responses): lm-4-scout (vision and tools, local then cloudA),
// lm-4-scout-local (the same, local only), lm-text (text only, a context
// window of 100 tokens), lm-reason (cloudA, max_tokens floored to 200) and
// lm-embed (embeddings). Each call returns a new catalog, which the test may
// change.
func ChatCatalog() *upstream.Catalog {
	vision := upstream.Modalities{TextIn: true, TextOut: true, ImageIn: true}
	text := upstream.Modalities{TextIn: true, TextOut: true}
	minMaxTokens := 200
	return &upstream.Catalog{Models: []upstream.ModelInfo{
		{Alias: "lm-4-scout", Kind: upstream.KindChat, ContextWindow: 100000, Modalities: vision, Tools: true, Backends: Backends("local", "cloudA")},
		{Alias: "lm-4-scout-local", Kind: upstream.KindChat, ContextWindow: 100000, Modalities: vision, Tools: true, Backends: Backends("local")},
		{Alias: "lm-text", Kind: upstream.KindChat, ContextWindow: 100, Modalities: text, Backends: Backends("local")},
		{Alias: "lm-reason", Kind: upstream.KindChat, ContextWindow: 100000, Modalities: text, Backends: Backends("cloudA"),
			Constraints: upstream.Constraints{MinMaxTokens: &minMaxTokens}},
		{Alias: "lm-embed", Kind: upstream.KindEmbeddings, ContextWindow: 8192, Backends: Backends("local")},
	}}
}
