package relay

import (
	"encoding/json"

	"github.com/chatgw/gateway/internal/jsonscan"
)

// The answer names the alias the client asked for: a backend names its
// model in its own words (llama.cpp, the path of the model file on the
// server's disk), which tells the client nothing it asked about and may
// show what it should not. The relay sets the top-level "model" of a JSON
// answer and of every chunk of a stream to Options.Model, once for every
// path that relays (/v1 chat and embeddings, /c1, agents); the backend that
// served is named by the HeaderBackend and HeaderBackendModel headers.

// span is the half-open byte range of one JSON value in a text.
type span struct{ start, end int }

// modelRewriter finds the top-level "model" members of answers and writes
// them with the alias instead. It is reused from chunk to chunk of one
// stream, so that finding costs no allocation.
type modelRewriter struct {
	quoted string // the alias as a JSON string; "" rewrites nothing
	sc     jsonscan.Scanner[string]
	spans  []span
}

// newModelRewriter returns the rewriter to alias; alias "" rewrites nothing.
func newModelRewriter(alias string) *modelRewriter {
	if alias == "" {
		return &modelRewriter{}
	}
	return &modelRewriter{quoted: quoteJSON(alias), spans: make([]span, 0, 1)}
}

// quoteJSON is s as json.Marshal writes it. A model alias is printable
// ASCII that needs no escape, which it quotes with one allocation where
// json.Marshal takes three; anything else goes to json.Marshal.
func quoteJSON(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return string(q)
		}
	}
	return `"` + s + `"`
}

// find is findModel with the rewriter's scanner and spans, reused from chunk
// to chunk; the spans are valid until the next call.
func (m *modelRewriter) find(data string) ([]span, bool) {
	var ok bool
	m.spans, ok = findModel(&m.sc, data, m.spans[:0], nil)
	return m.spans, ok
}

// findModel appends to spans those of the values of data's top-level members
// whose key is "model" (after unescaping, so that "mod\u0065l" is one too;
// every such member, as a client may keep the first or the last), walking
// data with sc, and reports whether data is one JSON object, valid as
// json.Valid says. A span found before a syntax error is kept. When usage is
// not nil, it is set to the span of the last top-level "usage" member whose
// value is an object, as Capture.usageFromJSON finds it, so that a JSON
// answer is walked once for both.
func findModel[T jsonscan.Text](sc *jsonscan.Scanner[T], data T, spans []span, usage *span) ([]span, bool) {
	sc.Reset(data)
	i := sc.Space(0)
	if i >= len(data) || data[i] != '{' {
		return spans, false
	}
	end, err := sc.Object(i, func(key jsonscan.Key, v int) (int, error) {
		end, err := sc.Value(v)
		switch lit := data[key.Start:key.End]; {
		case err != nil:
		case isModelKey(lit, key.Escaped):
			spans = append(spans, span{v, end})
		case usage != nil && string(lit) == `"usage"` && data[v] == '{':
			*usage = span{v, end}
		}
		return end, err
	})
	return spans, err == nil && sc.Space(end) == len(data)
}

// isModelKey reports whether the key literal lit names "model".
func isModelKey[T jsonscan.Text](lit T, escaped bool) bool {
	if !escaped {
		return string(lit) == `"model"`
	}
	return jsonscan.Unquote(lit) == "model"
}
