package rag_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/rag"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  ,;! ", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"Don't stop-gap 42x v1.2", []string{"don", "t", "stop", "gap", "42x", "v1", "2"}},
		{"ÉCOLE naïve Straße", []string{"école", "naïve", "straße"}},
		{"東京 タワー", []string{"東京", "タワー"}},
		{"cafe\u0301 ok", []string{"cafe\u0301", "ok"}}, // a combining mark stays in its word
		{"snake_case", []string{"snake", "case"}},
		{strings.Repeat("a", 100), []string{strings.Repeat("a", rag.MaxTermBytes)}},
		{strings.Repeat("é", 40) + " x", []string{strings.Repeat("é", rag.MaxTermBytes/2), "x"}},
	}
	for _, tc := range tests {
		testkit.Diff(t, fmt.Sprintf("Tokenize(%.20q)", tc.in), tc.want, rag.Tokenize(tc.in))
	}
}

func TestChunk(t *testing.T) {
	words := func(w string, n int) string { return strings.TrimSpace(strings.Repeat(w+" ", n)) }
	p300 := words("lorem ipsum", 25)   // 299 characters
	p100 := words("dolor", 20)         // 119 characters
	para750 := words("word", 150)      // 749 characters
	giant := strings.Repeat("x", 1200) // one word
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"blank", " \n\t\n ", nil},
		{"short", "  short text \n", []string{"short text"}},
		{"small paragraphs packed", "p1 line\nstill p1\n\n\np2\r\n  \r\np3", []string{"p1 line\nstill p1\n\n\np2\r\n  \r\np3"}},
		{"paragraphs over the limit split", p300 + "\n\n" + p300, []string{p300, p300}},
		{"packing stops at the limit", p300 + "\n\n" + p100 + "\n\n" + p100, []string{p300 + "\n\n" + p100, p100}},
		{"long paragraph split on words", para750, []string{words("word", 100), words("word", 50)}},
		{"window packed with the next paragraph", para750 + "\n\nend", []string{words("word", 100), words("word", 50) + "\n\nend"}},
		{"giant word cut", "a " + giant + " b", []string{"a", strings.Repeat("x", 500), strings.Repeat("x", 500), strings.Repeat("x", 200) + " b"}},
		{"multibyte counted in characters", strings.Repeat("é", 500), []string{strings.Repeat("é", 500)}},
		{"multibyte giant", strings.Repeat("é", 501), []string{strings.Repeat("é", 500), "é"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testkit.Diff(t, "chunks", tc.want, rag.Chunk(tc.in))
		})
	}
}

// TestChunkProperties checks the chunker's promises on varied texts: chunks
// are at most ChunkRunes characters, trimmed, non-empty, and together hold
// every word of the text in order.
func TestChunkProperties(t *testing.T) {
	var b strings.Builder
	seps := []string{" ", "  ", "\n", "\n\n", " \n \n ", "\t"}
	for i := range 3000 {
		fmt.Fprintf(&b, "w%d", i%97)
		if i%13 == 0 {
			b.WriteString(strings.Repeat("é", i%41))
		}
		b.WriteString(seps[i%len(seps)])
	}
	for _, text := range []string{b.String(), strings.Repeat("a ", 2000), strings.Repeat("para\n\n", 400)} {
		chunks := rag.Chunk(text)
		var got []string
		for i, c := range chunks {
			if n := utf8.RuneCountInString(c); n == 0 || n > rag.ChunkRunes {
				t.Errorf("chunk %d has %d characters", i, n)
			}
			if strings.TrimFunc(c, unicode.IsSpace) != c {
				t.Errorf("chunk %d is not trimmed: %.30q", i, c)
			}
			got = append(got, strings.Fields(c)...)
		}
		testkit.Diff(t, "words", strings.Fields(text), got)
	}
}
