package preflight

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
)

// errSyntax reports a body that is not valid JSON (RFC 8259).
var errSyntax = errors.New("preflight: invalid JSON")

// maxDepth bounds the nesting of the body, as encoding/json does.
const maxDepth = 10000

// scanner validates JSON while walking it, handing out byte offsets into b so
// that values can be forwarded without being decoded or re-encoded. It is a
// recursive-descent validator: every byte of the body is looked at once, except
// where a caller walks a value again on purpose.
type scanner struct {
	b     []byte
	depth int
	// key is the raw key (with quotes) of the member whose memberFunc is
	// running; valid until that function walks a nested object.
	key span
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// ws returns the index of the first non-space byte at or after i.
func (s *scanner) ws(i int) int {
	for i < len(s.b) && isSpace(s.b[i]) {
		i++
	}
	return i
}

// value validates the value starting at i and returns its end.
func (s *scanner) value(i int) (int, error) {
	if i >= len(s.b) {
		return i, errSyntax
	}
	switch c := s.b[i]; c {
	case '{':
		return s.object(i, nil)
	case '[':
		return s.array(i, nil)
	case '"':
		end, _, err := s.str(i)
		return end, err
	case 't':
		return s.lit(i, "true")
	case 'f':
		return s.lit(i, "false")
	case 'n':
		return s.lit(i, "null")
	default:
		if c == '-' || isDigit(c) {
			return s.number(i)
		}
		return i, errSyntax
	}
}

// memberFunc handles one object member: key is the member name (unescaped),
// v the start of its value; it validates the value and returns its end.
type memberFunc func(key []byte, v int) (int, error)

// object walks the object starting at i ('{'), calling fn for each member (nil
// fn only validates), and returns the object's end.
func (s *scanner) object(i int, fn memberFunc) (int, error) {
	b := s.b
	if s.depth++; s.depth > maxDepth {
		return i, errSyntax
	}
	i = s.ws(i + 1)
	if i < len(b) && b[i] == '}' {
		s.depth--
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, errSyntax
		}
		kEnd, _, err := s.str(i)
		if err != nil {
			return kEnd, err
		}
		key := b[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(unquote(b[i:kEnd]))
		}
		s.key = span{i, kEnd}
		i = s.ws(kEnd)
		if i >= len(b) || b[i] != ':' {
			return i, errSyntax
		}
		i = s.ws(i + 1)
		var end int
		if fn != nil {
			end, err = fn(key, i)
		} else {
			end, err = s.value(i)
		}
		if err != nil {
			return end, err
		}
		i = s.ws(end)
		if i >= len(b) {
			return i, errSyntax
		}
		switch b[i] {
		case ',':
			i = s.ws(i + 1)
		case '}':
			s.depth--
			return i + 1, nil
		default:
			return i, errSyntax
		}
	}
}

// elemFunc handles element n of an array starting at v and returns its end.
type elemFunc func(n, v int) (int, error)

// array walks the array starting at i ('['), calling fn for each element (nil
// fn only validates), and returns the array's end.
func (s *scanner) array(i int, fn elemFunc) (int, error) {
	b := s.b
	if s.depth++; s.depth > maxDepth {
		return i, errSyntax
	}
	i = s.ws(i + 1)
	if i < len(b) && b[i] == ']' {
		s.depth--
		return i + 1, nil
	}
	for n := 0; ; n++ {
		var end int
		var err error
		if fn != nil {
			end, err = fn(n, i)
		} else {
			end, err = s.value(i)
		}
		if err != nil {
			return end, err
		}
		i = s.ws(end)
		if i >= len(b) {
			return i, errSyntax
		}
		switch b[i] {
		case ',':
			i = s.ws(i + 1)
		case ']':
			s.depth--
			return i + 1, nil
		default:
			return i, errSyntax
		}
	}
}

// str validates the string starting at i ('"') and returns its end and the
// length in bytes of its decoded UTF-8 text.
func (s *scanner) str(i int) (end, n int, err error) {
	b := s.b
	start := i + 1
	escaped := 0 // bytes saved by decoding escapes
	for i = start; i < len(b); {
		// Skip 8 plain bytes at a time (no control character, quote or
		// backslash), so that a long base64 image is cheap to validate.
		for i+8 <= len(b) && plain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		switch c {
		case '"':
			return i + 1, i - start - escaped, nil
		case '\\':
			if i+1 >= len(b) {
				return i, 0, errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
				escaped++
			case 'u':
				if i+5 >= len(b) {
					return i, 0, errSyntax
				}
				r := 0
				for _, h := range b[i+2 : i+6] {
					d := hexVal(h)
					if d < 0 {
						return i, 0, errSyntax
					}
					r = r<<4 | d
				}
				// \uXXXX is 6 bytes for 1-3 UTF-8 bytes; a surrogate half
				// counts 2 (a pair makes one 4-byte rune).
				switch {
				case r < 0x80:
					escaped += 5
				case r < 0x800 || (r >= 0xD800 && r < 0xE000):
					escaped += 4
				default:
					escaped += 3
				}
				i += 6
			default:
				return i, 0, errSyntax
			}
		default: // control character
			return i, 0, errSyntax
		}
	}
	return i, 0, errSyntax
}

// plain8 reports whether none of the 8 bytes of w is below 0x20, '"' or '\\'
// (the "has zero byte" bit trick on w, w^'"' and w^'\\').
func plain8(w uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q, bs := w^(lo*'"'), w^(lo*'\\')
	return ((w-lo*0x20)&^w|(q-lo)&^q|(bs-lo)&^bs)&hi == 0
}

func (s *scanner) number(i int) (int, error) {
	b := s.b
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, errSyntax
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, errSyntax
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, errSyntax
		}
		i = j
	}
	return i, nil
}

func (s *scanner) lit(i int, want string) (int, error) {
	if !bytes.HasPrefix(s.b[i:], []byte(want)) {
		return i, errSyntax
	}
	return i + len(want), nil
}

func digits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

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

// validJSON reports whether b is exactly one JSON value.
func validJSON(b []byte) bool {
	s := scanner{b: b}
	i := s.ws(0)
	end, err := s.value(i)
	return err == nil && s.ws(end) == len(b)
}

// unquote decodes a valid JSON string literal (with its quotes).
func unquote(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// strIs reports whether raw, a JSON string literal, decodes to lit; it does not
// allocate for a literal without escapes.
func strIs(raw []byte, lit string) bool {
	if len(raw) < 2 || raw[0] != '"' {
		return false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:len(raw)-1]) == lit
	}
	return unquote(raw) == lit
}
