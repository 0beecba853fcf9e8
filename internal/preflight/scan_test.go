package preflight

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chatgw/gateway/internal/jsonscan"
)

var jsonCorpus = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e10`, `1E-2`, `true`, `false`, `null`, ` {"a" : [1, 2, {"b": null}]} `,
	`{"a":"\u00e9\n\t\"\\\/\b\f\r"}`, `"\ud83d\ude00"`, `"` + strings.Repeat("abcdefgh", 20) + `"`,
	`{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`, `"abc`, `"\x"`, `"\u12"`,
	`"` + strings.Repeat("a", 13) + "\x01" + `"`, `"` + strings.Repeat("a", 17) + "\n" + `"`, `"` + strings.Repeat("b", 9) + `\` + `"`,
	`[1] [2]`, `{"a":1}x`, `"é"`, "\"\xff\"", `[` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `]`,
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	for _, in := range jsonCorpus {
		if got, want := jsonscan.Valid([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("jsonscan.Valid(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestStringLength(t *testing.T) {
	for _, in := range []string{`""`, `"abc"`, `"\u00e9x"`, `"\ud83d\ude00"`, `"\u20ac\n\\"`, `"` + strings.Repeat("é", 30) + `"`} {
		var s string
		if err := json.Unmarshal([]byte(in), &s); err != nil {
			t.Fatal(err)
		}
		sc := jsonscan.New([]byte(in))
		end, str, err := sc.String(0)
		if n := str.Len; err != nil || end != len(in) || n != len(s) {
			t.Errorf("String(%s) = %d, %d, %v; want %d, %d (%d runes)", in, end, n, err, len(in), len(s), utf8.RuneCountInString(s))
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, in := range []string{"", "plain", "quote\" back\\ nl\n tab\t cr\r bell\x07", "é€😀", "bad \xff utf8", "</script>&"} {
		got := appendString(nil, in)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("appendString(%q) = %s: %v", in, got, err)
		}
		want := strings.ToValidUTF8(in, "\uFFFD")
		if back != want {
			t.Errorf("appendString(%q) decodes to %q, want %q", in, back, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, in := range jsonCorpus {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if got, want := jsonscan.Valid([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("jsonscan.Valid(%q) = %v, want %v", in, got, want)
		}
	})
}

// TestParsePrefixes cuts a body with messages, content parts, tool calls and
// attachments at every byte: each cut is invalid JSON, and parse must say so
// (it used to index past the end when a body stopped after a key's colon).
func TestParsePrefixes(t *testing.T) {
	body := `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},` +
		`{"type":"image_url","image_url":{"url":"data:x"}}]},` +
		`{"role":"assistant","tool_calls":[{"function":{"arguments":"{}"}}]}],` +
		`"attachments":[{"kind":"document","doc_name":"a","content":"b"}],"model":"m"}`
	if _, err := parse([]byte(body), ""); err != nil {
		t.Fatalf("parse(whole body) = %v", err)
	}
	for n := range len(body) {
		if _, err := parse([]byte(body[:n]), ""); err != errSyntax {
			t.Errorf("parse(%s) = %v, want errSyntax", body[:n], err)
		}
	}
}
