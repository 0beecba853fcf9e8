package jsonscan

import "math/bits"

// StringInfo describes a string literal that String accepted, for callers
// that size or decode it without encoding/json.
type StringInfo struct {
	// Len is the length in bytes of the decoded text when the literal is valid
	// UTF-8 and has no lone surrogate escape; otherwise encoding/json's text
	// is longer, since it decodes each bad byte or lone surrogate as U+FFFD.
	Len int
	// Escaped reports a backslash escape in the literal.
	Escaped bool
	// UnicodeEscaped reports a \uXXXX escape. Without one, every escape is a
	// two-byte one (\" \\ \/ \b \f \n \r \t).
	UnicodeEscaped bool
	// NonASCII reports a byte >= 0x80 in the literal, which may be invalid
	// UTF-8: String does not check, as json.Valid does not.
	NonASCII bool
}

// String validates the string literal that starts at i ('"') and returns the
// index just past its closing quote and what it holds. ErrSyntax for a
// literal that json.Valid rejects: unterminated, with a control character or
// with a bad escape.
func (s *Scanner[T]) String(i int) (end int, info StringInfo, err error) {
	src := s.src
	start := i + 1
	saved := 0      // bytes that decoding the escapes saves
	var seen uint64 // the plain bytes passed, ORed: bit 7 of each tells of non-ASCII
	for i = start; ; {
		var plain uint64
		i, plain = plainRun(src, i)
		seen |= plain
		if i >= len(src) { // unterminated
			return i, StringInfo{}, ErrSyntax
		}
		switch src[i] {
		case '"':
			info.Len, info.Escaped, info.NonASCII = i-start-saved, saved > 0, seen&hiBits != 0
			return i + 1, info, nil
		case '\\':
			n, unicode := s.escape(i)
			if n == 0 {
				return i, StringInfo{}, ErrSyntax
			}
			info.UnicodeEscaped = info.UnicodeEscaped || unicode
			saved += n
			i += 2
			if unicode {
				i += 4
			}
		default: // a control character
			return i, StringInfo{}, ErrSyntax
		}
	}
}

// escape checks the escape at i ('\\') and returns how many bytes shorter its
// decoded UTF-8 is than the escape (0: an invalid escape) and whether it is a
// \u escape.
func (s *Scanner[T]) escape(i int) (saved int, unicode bool) {
	src := s.src
	if i+1 >= len(src) {
		return 0, false
	}
	switch src[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 1, false
	case 'u':
	default:
		return 0, false
	}
	if i+5 >= len(src) {
		return 0, false
	}
	r := 0
	for j := i + 2; j < i+6; j++ {
		d := hexVal(src[j])
		if d < 0 {
			return 0, false
		}
		r = r<<4 | d
	}
	// \uXXXX is 6 bytes for 1-3 UTF-8 bytes; a surrogate half counts 2 (a
	// pair makes one 4-byte rune).
	switch {
	case r < 0x80:
		return 5, true
	case r < 0x800 || (r >= 0xD800 && r < 0xE000):
		return 4, true
	}
	return 3, true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// plainRun returns the index of the first control character, quote or
// backslash at or after i (len(src) if none) and the bytes before it ORed
// together. It goes 8 bytes at a time, so that a long text or base64 image is
// cheap to validate and a short one costs one step. It is a function of its
// own, not inlined, because in String's body the compiler spills this loop's
// registers on every turn.
//
//go:noinline
func plainRun[T Text](src T, i int) (int, uint64) {
	var seen uint64
	for ; i+8 <= len(src); i += 8 {
		w := load64(src, i)
		if m := special8(w); m != 0 {
			n := bits.TrailingZeros64(m) &^ 7 // the bits of the bytes before it
			return i + n/8, seen | w&(1<<n-1)
		}
		seen |= w
	}
	for ; i < len(src); i++ {
		c := src[i]
		if c < 0x20 || c == '"' || c == '\\' {
			break
		}
		seen |= uint64(c)
	}
	return i, seen
}

const (
	loBits = 0x0101010101010101
	hiBits = 0x8080808080808080
)

// load64 reads src[i:i+8] little-endian, as one load (the compiler merges the
// byte loads), whether src is a string or a []byte.
func load64[T Text](src T, i int) uint64 {
	b := src[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// special8 flags the bytes of w that are below 0x20, '"' or '\\': their bit 7
// is set in the result (the "has zero byte" bit trick on w, w^'"' and
// w^'\\'). Bytes above a flagged one may be flagged wrongly, so only the lowest
// flag is exact, which is the one plainRun uses.
func special8(w uint64) uint64 {
	q, bs := w^(loBits*'"'), w^(loBits*'\\')
	return ((w-loBits*0x20)&^w | (q-loBits)&^q | (bs-loBits)&^bs) & hiBits
}
