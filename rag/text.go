package rag

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// span is the byte range [start, end) of a text.
type span struct{ start, end int }

// tokenize returns the terms of s in order: maximal runs of Unicode letters,
// digits and combining marks, lower-cased (unicode.ToLower), each cut to its
// first MaxTermBytes bytes on a character boundary. Everything else separates
// terms, so "Don't stop-gap" gives don, t, stop, gap.
func tokenize(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for _, r := range s {
		if !isWordRune(r) {
			flush()
			continue
		}
		r = unicode.ToLower(r)
		if b.Len()+utf8.RuneLen(r) <= MaxTermBytes {
			b.WriteRune(r)
		}
	}
	flush()
	return out
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r)
}

// termFreqs counts the terms of s and returns them with the number of terms.
func termFreqs(s string) (map[string]int, int) {
	terms := tokenize(s)
	tf := make(map[string]int, len(terms))
	for _, t := range terms {
		tf[t]++
	}
	return tf, len(terms)
}

// queryTerms returns the distinct terms of q, sorted (so that scores are summed
// in one order and come out the same on every run).
func queryTerms(q string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tokenize(q) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// chunk splits text into passages of at most ChunkRunes characters that start
// and end on non-space characters:
//
//  1. The text is cut into paragraphs at blank lines (a line break, optional
//     white space, a line break), each trimmed of surrounding white space.
//  2. A paragraph longer than ChunkRunes is cut into windows on word
//     boundaries (white space): each window holds as many whole words as fit.
//     A single word longer than ChunkRunes is cut every ChunkRunes characters.
//  3. Consecutive pieces are packed greedily into one chunk as long as the
//     text from the first one's start to the last one's end fits ChunkRunes.
//
// A chunk is text[start:end], so its white space and line breaks are the
// document's own. Text with no non-space character has no chunk.
func chunk(text string) []span {
	var pieces []span
	for _, p := range paragraphs(text) {
		if utf8.RuneCountInString(text[p.start:p.end]) <= ChunkRunes {
			pieces = append(pieces, p)
			continue
		}
		pieces = append(pieces, pack(text, words(text, p))...)
	}
	return pack(text, pieces)
}

// pack merges consecutive spans of text while the merged text fits ChunkRunes.
// Each span must fit on its own.
func pack(text string, spans []span) []span {
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 && utf8.RuneCountInString(text[out[n-1].start:s.end]) <= ChunkRunes {
			out[n-1].end = s.end
			continue
		}
		out = append(out, s)
	}
	return out
}

// paragraphs returns the paragraphs of text: the non-blank stretches between
// blank lines, trimmed of white space.
func paragraphs(text string) []span {
	var out []span
	start := -1 // start of the current paragraph, -1 when between paragraphs
	end := 0    // end of its last non-space character
	newlines := 0
	for i, r := range text {
		switch {
		case r == '\n':
			newlines++
			if newlines >= 2 && start >= 0 {
				out = append(out, span{start, end})
				start = -1
			}
		case unicode.IsSpace(r):
		default:
			if start < 0 {
				start = i
			}
			end = i + utf8.RuneLen(r)
			newlines = 0
		}
	}
	if start >= 0 {
		out = append(out, span{start, end})
	}
	return out
}

// words returns the words (maximal runs of non-space characters) of text
// within p, cutting any word longer than ChunkRunes every ChunkRunes characters.
func words(text string, p span) []span {
	var out []span
	start, runes := -1, 0
	for i, r := range text[p.start:p.end] {
		i += p.start
		if unicode.IsSpace(r) {
			if start >= 0 {
				out = append(out, span{start, i})
				start = -1
			}
			continue
		}
		if start >= 0 && runes == ChunkRunes {
			out = append(out, span{start, i})
			start = -1
		}
		if start < 0 {
			start, runes = i, 0
		}
		runes++
	}
	if start >= 0 {
		out = append(out, span{start, p.end})
	}
	return out
}
