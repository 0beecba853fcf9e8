package preflight_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/wire"
)

// typicalBody is what an OpenAI SDK sends: messages before model, a few turns,
// a tool, sampling options.
func typicalBody() []byte {
	turn := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5)
	var b strings.Builder
	b.WriteString(`{"messages":[{"role":"system","content":"You are a helpful assistant."}`)
	for i := range 6 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		b.WriteString(`,{"role":"` + role + `","content":"` + turn + `"}`)
	}
	b.WriteString(`],"model":"lm-4-scout","temperature":0.7,"max_tokens":512,"stream":true,` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`)
	return []byte(b.String())
}

func BenchmarkPreflightTypical(b *testing.B) {
	req := preflight.Request{Body: typicalBody(), Tenant: &auth.Tenant{ID: "acme"}, Catalog: testCatalog()}
	ctx := context.Background()
	b.SetBytes(int64(len(req.Body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := preflight.Check(ctx, &req); err != nil {
			b.Fatal(err)
		}
	}
}

// noisePNG returns a PNG of random pixels of about n bytes.
func noisePNG(b *testing.B, n int) []byte {
	side := 1
	for side*side*4 < n {
		side++
	}
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.NoCompression}
	if err := enc.Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func BenchmarkPreflightImage1MB(b *testing.B) {
	img := noisePNG(b, 1<<20)
	body := []byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"What is in this picture?"},` +
		imagePart(dataURI("image/png", img)) + `]}],"model":"lm-4-scout"}`)
	req := preflight.Request{Body: body, Tenant: &auth.Tenant{ID: "acme"}, Catalog: testCatalog()}
	ctx := context.Background()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := preflight.Check(ctx, &req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckBuilt is a /c1 turn's pre-flight: a request the gateway
// built from a stored history of 20 messages and the new user message.
func BenchmarkCheckBuilt(b *testing.B) {
	turn := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 3)
	msgs := make([]json.RawMessage, 0, 21)
	for i := range 20 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, wire.TextMessage(role, turn))
	}
	msgs = append(msgs, wire.TextMessage("user", "And now?"))
	built := wire.Request{Model: "lm-4-scout", Messages: msgs, Stream: true, StreamOptions: &wire.StreamOptions{IncludeUsage: true}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req := preflight.Request{Tenant: &auth.Tenant{ID: "acme"}, Catalog: testCatalog()}
		if _, err := preflight.CheckBuilt(ctx, &built, &req); err != nil {
			b.Fatal(err)
		}
	}
}
