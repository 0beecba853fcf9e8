package guard

// This file holds the normalisation the rules match on, and what counts as a
// word for a term's whole-word match.

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// normalizer turns a text into the two forms the rules match on:
//
//   - the pattern text: Unicode NFKC (full-width letters become ASCII,
//     ligatures split, decomposed accents compose) without default-ignorable
//     code points (zero-width spaces and joiners, soft hyphens, bidi
//     controls, variation selectors), which would otherwise hide a word
//     without changing how it looks;
//   - the term text: the pattern text case-folded (full Unicode case folding,
//     golang.org/x/text/cases.Fold: "Straße" and "STRASSE" both become
//     "strasse", final and medial sigma agree), with every non-ASCII white
//     space rune replaced by ' '.
//
// Case folding rather than strings.ToLower: ToLower maps rune by rune to the
// lowercase letter, so "ß" never meets "SS" and "ς" never meets "Σ"; folding
// is Unicode's definition of caseless matching (Unicode 3.13). For ASCII text
// both are the same, and ASCII text is already NFKC, so ASCII text skips all
// of this (isASCII): the scanner lowercases ASCII bytes itself.
type normalizer struct {
	fold cases.Caser // stateless, safe for concurrent use
}

func newNormalizer() normalizer { return normalizer{fold: cases.Fold()} }

// texts returns the pattern text and the term text of s.
func (n normalizer) texts(s string) (pat, term string) {
	pat = stripIgnorable(norm.NFKC.String(s))
	return pat, n.foldNonASCII(pat)
}

// foldNonASCII returns the term text of a pattern text p: its non-ASCII
// white space as ' ', its other non-ASCII runes case-folded. ASCII bytes stay
// as they are: their folding, to lowercase, is the scanner's (Rules.scan) and
// needs no copy. Folding is context-free, rune by rune, so folding the
// non-ASCII stretches alone folds the text.
func (n normalizer) foldNonASCII(p string) string {
	i := asciiPrefix(p)
	if i == len(p) {
		return p
	}
	out := make([]byte, 0, len(p)+len(p)/8)
	out = append(out, p[:i]...)
	var scratch []byte
	for i < len(p) {
		j := i
		if p[i] < utf8.RuneSelf {
			j += asciiPrefix(p[i:])
			out = append(out, p[i:j]...)
			i = j
			continue
		}
		for j < len(p) && p[j] >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(p[j:])
			if unicode.IsSpace(r) {
				out, scratch = n.foldRun(out, scratch, p[i:j])
				out = append(out, ' ')
				i = j + size
			}
			j += size
		}
		out, scratch = n.foldRun(out, scratch, p[i:j])
		i = j
	}
	return string(out)
}

// foldRun appends the case folding of run to out; scratch is a buffer it may
// reuse.
func (n normalizer) foldRun(out, scratch []byte, run string) ([]byte, []byte) {
	if run == "" {
		return out, scratch
	}
	src := append(scratch[:0], run...)
	scratch = src
	for {
		out = slices.Grow(out, 2*len(src)+utf8.UTFMax)
		nDst, nSrc, err := n.fold.Transform(out[len(out):cap(out)], src, true)
		out, src = out[:len(out)+nDst], src[nSrc:]
		switch {
		case err == nil:
			return out, scratch
		case err != transform.ErrShortDst:
			return append(out, src...), scratch // not reached: folding takes any bytes
		}
	}
}

// term returns the normalised form of a rule term: its term text with white
// space runs collapsed to one ' ' and trimmed, as the scanner collapses them
// in the text.
func (n normalizer) term(s string) string {
	_, t := n.texts(s)
	b := []byte(strings.Join(strings.Fields(t), " "))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A' // what the scanner does to the text's ASCII
		}
	}
	return string(b)
}

// isASCII reports whether s holds only ASCII bytes.
func isASCII(s string) bool { return asciiPrefix(s) == len(s) }

// asciiPrefix returns the length of s's longest prefix of ASCII bytes.
func asciiPrefix(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		// The compiler combines these loads into one 64-bit load.
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if w&0x8080808080808080 != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			break
		}
	}
	return i
}

// ignorable reports whether r is a default-ignorable code point (Unicode's
// Default_Ignorable_Code_Point, as far as the unicode package has its parts:
// format characters, variation selectors and the other ignorables), except
// the prepended concatenation marks, which are visible, and white space.
func ignorable(r rune) bool {
	if r < 0xAD {
		return false
	}
	return unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) &&
		!unicode.Is(unicode.Prepended_Concatenation_Mark, r) && !unicode.IsSpace(r)
}

// stripIgnorable returns s without its ignorable runes; s itself when it has
// none.
func stripIgnorable(s string) string {
	first := firstIgnorable(s)
	if first < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for first >= 0 {
		b.WriteString(s[:first])
		_, size := utf8.DecodeRuneInString(s[first:])
		s = s[first+size:]
		first = firstIgnorable(s)
	}
	b.WriteString(s)
	return b.String()
}

// firstIgnorable returns the offset of the first ignorable rune in s, or -1.
func firstIgnorable(s string) int {
	for i := asciiPrefix(s); i < len(s); i += asciiPrefix(s[i:]) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if ignorable(r) {
			return i
		}
		i += size
	}
	return -1
}

// asciiSpace reports whether b is ASCII white space, as unicode.IsSpace says.
func asciiSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r'
}

// A word character is a letter, a mark, a number or connector punctuation
// (Unicode L, M, N, Pc; in ASCII [0-9A-Za-z_], as RE2's \w). A term that
// begins (ends) with a word character matches only where the text has no word
// character just before (after) it, so "ass" does not match in "class".
//
// Scripts written without spaces between words (Han, Hiragana, Katakana,
// Thai, Lao, Khmer, Myanmar) have no word boundary to find: each of their
// characters counts as a word of its own, so a term in those scripts matches
// anywhere in a run of them, and a neighbour in those scripts never blocks a
// match.
func wordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || '0' <= r && r <= '9' || 'a' <= r|0x20 && r|0x20 <= 'z'
	}
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc)
}

// unspaced reports whether r belongs to a script written without spaces.
func unspaced(r rune) bool {
	return r >= 0x0E00 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana,
		unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

// joins reports whether a and b, next to each other, are in one word: no word
// boundary between them.
func joins(a, b rune) bool {
	return wordRune(a) && wordRune(b) && !unspaced(a) && !unspaced(b)
}
