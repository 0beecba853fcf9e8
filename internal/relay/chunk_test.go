package relay

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/internal/wire"
)

// chunkSeeds are chunk data of the shapes upstreams send, and of shapes the
// fast path must leave to json.Unmarshal.
var chunkSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"scout-17b","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"scout-17b","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"line\nbreak \"quoted\" \\ back\/slash\ttab"}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"caf\u00e9"}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"café ☕ 😀"}}]}`,
	"{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bad \xff utf8\"}}]}",
	`{"id":"c","choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":null,"content":"x"}}]}`,
	`{"ID":"upper","Choices":[{"Index":0,"Delta":{"Content":"folded"}}]}`,
	`{"id":"a","id":"b","choices":[]}`,
	`{"id":"c","created":1.5,"choices":[{"index":0,"delta":{"content":"x"}}]}`,
	`{"id":"c","created":99999999999999999999,"choices":[]}`,
	`{"id":"c","choices":[{"index":"0","delta":{"content":"x"}}]}`,
	`{"id":"c","choices":[{"index":0.0,"delta":{"content":"x"}}]}`,
	`{"id":"c","choices":[null,{"index":0,"delta":{"content":"x"}}]}`,
	`{"id":"c","choices":null,"usage":null}`,
	`{"id":null,"model":null,"created":null,"choices":[{"index":null,"delta":null,"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":null,"role":""}}]}`,
	`{"id":"c","extra":{"deep":[1,2.5e3,-0,true,false,null,"s\u0041"]},"choices":[{"index":0,"delta":{"content":"x"}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]} trailing`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]`,
	`{"id":"c",}`,
	`[1,2]`,
	`null`,
	` {"id" : "spaced" , "choices" : [ { "index" : 0 , "delta" : { "content" : "y" } } ] } `,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":7}]}`,
	`{"id":"c","choices":[{"index":-0,"delta":{"content":"neg zero"}}]}`,
	`{"id":"c","choices":[{"index":01,"delta":{"content":"x"}}]}`,
	`{"i\u0064":"escaped key","choices":[]}`,
	`{"id":"c","ſtream":true,"choices":[{"index":0,"delta":{"content":"long s"}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant"}},{"index":0,"delta":{"content":"two zeros"}}]}`,
}

// captureBoth feeds chunks to one capture through addChunk (fast path where
// it applies) and to another through json.Unmarshal only.
func captureBoth(chunks ...string) (fast, slow *Capture) {
	fast, slow = new(Capture), new(Capture)
	for _, d := range chunks {
		fast.addChunk(d)
		slow.addChunkJSON(d)
	}
	fast.finish()
	slow.finish()
	return fast, slow
}

var ignoreScratch = cmp.FilterPath(func(p cmp.Path) bool {
	name := p.Last().String()
	return name == ".content" || name == ".args" || name == ".fast"
}, cmp.Ignore())

func TestFastChunkMatchesJSON(t *testing.T) {
	for _, d := range chunkSeeds {
		fast, slow := captureBoth(chunkSeeds[0], d, d)
		if diff := cmp.Diff(slow, fast, cmp.AllowUnexported(Capture{}, wire.ToolCalls{}), ignoreScratch); diff != "" {
			t.Errorf("chunk %s: capture mismatch (-json +fast):\n%s", d, diff)
		}
	}
}

func TestFastChunkTakesCommonShapes(t *testing.T) {
	var f fastChunk
	for _, d := range chunkSeeds[:6] {
		if strings.Contains(d, `\u`) {
			continue
		}
		if !f.parse(d) {
			t.Errorf("fast path gave up on %s", d)
		}
	}
}

func FuzzFastChunk(f *testing.F) {
	for _, d := range chunkSeeds {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d string) {
		fast, slow := captureBoth(d, d)
		if diff := cmp.Diff(slow, fast, cmp.AllowUnexported(Capture{}, wire.ToolCalls{}), ignoreScratch); diff != "" {
			t.Errorf("chunk %q: capture mismatch (-json +fast):\n%s", d, diff)
		}
	})
}

// BenchmarkCaptureChunk folds one typical content chunk into a capture, with
// the fast path and with json.Unmarshal alone (as before the fast path).
func BenchmarkCaptureChunk(b *testing.B) {
	data := chunkSeeds[1]
	b.Run("fast", func(b *testing.B) {
		var c Capture
		b.ReportAllocs()
		for b.Loop() {
			c.addChunk(data)
			c.content.Reset()
		}
	})
	b.Run("json", func(b *testing.B) {
		var c Capture
		b.ReportAllocs()
		for b.Loop() {
			c.addChunkJSON(data)
			c.content.Reset()
		}
	})
}

// TestFastChunkSkipsUnreadStrings: \u escapes and invalid UTF-8 send a chunk
// to json.Unmarshal only in the strings the capture reads; elsewhere
// (ignored members, usage kept verbatim) they are only validated.
func TestFastChunkSkipsUnreadStrings(t *testing.T) {
	for _, d := range []string{
		`{"id":"c","system_fingerprint":"fp_\u00e9","choices":[{"index":0,"delta":{"content":"x"},"logprobs":{"t":"\ud83d\ude00"}}]}`,
		"{\"id\":\"c\",\"x\xff\":\"bad \xfe utf8\",\"choices\":[],\"usage\":{\"note\":\"\xff\"}}",
	} {
		var f fastChunk
		if !f.parse(d) {
			t.Errorf("fast path gave up on %q", d)
		}
		fast, slow := captureBoth(d)
		if diff := cmp.Diff(slow, fast, cmp.AllowUnexported(Capture{}, wire.ToolCalls{}), ignoreScratch); diff != "" {
			t.Errorf("chunk %q: capture mismatch (-json +fast):\n%s", d, diff)
		}
	}
}
