package jsonscan

import (
	"encoding/json"
	"strings"
)

// Unquote returns the text of raw, a valid JSON string literal with its
// quotes. A literal without escapes costs no decoding (and, from a string, no
// allocation); the short escapes (\n, \", ...) are decoded here, and a \u
// escape, with its surrogate pairs and invalid halves, is left to
// encoding/json so that the text is exactly what json.Unmarshal gives. Bytes
// that are not UTF-8 are kept as they are outside a literal with \u escapes
// (json.Unmarshal would make them U+FFFD): callers that need valid text check
// StringInfo.NonASCII first.
func Unquote[T Text](raw T) string {
	inner := raw[1 : len(raw)-1]
	if indexByte(inner, '\\') < 0 {
		return string(inner)
	}
	var b strings.Builder
	b.Grow(len(inner))
	UnquoteTo(&b, raw)
	return b.String()
}

// UnquoteTo writes the text of raw, as Unquote returns it, to b: a caller
// that accumulates text (a streamed reply) saves the intermediate string.
func UnquoteTo[T Text](b *strings.Builder, raw T) {
	inner := raw[1 : len(raw)-1]
	i := indexByte(inner, '\\')
	if hasUnicodeEscape(inner, i) {
		var s string
		_ = json.Unmarshal([]byte(raw), &s)
		b.WriteString(s)
		return
	}
	for i >= 0 {
		b.WriteString(string(inner[:i]))
		b.WriteByte(unescape(inner[i+1]))
		inner = inner[i+2:]
		i = indexByte(inner, '\\')
	}
	b.WriteString(string(inner))
}

// hasUnicodeEscape reports whether the literal text s, whose first backslash
// is at i (-1: none), holds a \u escape.
func hasUnicodeEscape[T Text](s T, i int) bool {
	for ; i >= 0 && i+1 < len(s); i++ {
		if s[i] == '\\' {
			if s[i+1] == 'u' {
				return true
			}
			i++ // skip the escaped character
		}
	}
	return false
}

func indexByte[T Text](s T, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// unescape decodes the character after a backslash of a short escape.
func unescape(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return c // '"', '\\', '/'
}
