package jsonscan

import "errors"

// ErrSyntax reports text that is not valid JSON where a value was walked.
var ErrSyntax = errors.New("jsonscan: invalid JSON")

// MaxDepth is the deepest nesting of objects and arrays a Scanner accepts,
// encoding/json's own limit: deeper text is ErrSyntax, as json.Valid says.
const MaxDepth = 10000

// Text is the input a Scanner walks. Both kinds are walked in place: the
// relay's chunks arrive as strings, request bodies as byte slices.
type Text interface{ string | []byte }

// Key is an object member's key as written: src[Start:End] is the literal,
// quotes included. Without a backslash escape (Escaped false) the member's
// name is the text between the quotes, src[Start+1:End-1], as it is.
type Key struct {
	Start, End int
	Escaped    bool
}

// Scanner walks one JSON text. The zero Scanner walks empty text; New or Reset
// gives it its text. It counts the objects and arrays it is inside of, so
// after an error ends a walk midway only Reset makes it fit for another. A
// Scanner is not safe for concurrent use.
type Scanner[T Text] struct {
	src   T
	depth int // objects and arrays open around the current index
}

// New returns a Scanner of src.
func New[T Text](src T) Scanner[T] { return Scanner[T]{src: src} }

// Reset makes s walk src from the start, so that one Scanner can be reused
// for many texts.
func (s *Scanner[T]) Reset(src T) { s.src, s.depth = src, 0 }

// Valid reports whether src is exactly one JSON value, with optional
// whitespace around it; it agrees with json.Valid and does not allocate.
func Valid[T Text](src T) bool {
	s := New(src)
	end, err := s.Value(s.Space(0))
	return err == nil && s.Space(end) == len(src)
}

// Space returns the index of the first byte at or after i that is not JSON
// whitespace, or len of the text.
func (s *Scanner[T]) Space(i int) int {
	for i < len(s.src) && isSpace(s.src[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Value validates the value that starts at i (no whitespace before it) and
// returns the index just past it. ErrSyntax when there is no valid value
// there, including at the end of the text.
func (s *Scanner[T]) Value(i int) (int, error) {
	if i >= len(s.src) {
		return i, ErrSyntax
	}
	switch s.src[i] {
	case '{':
		return s.Object(i, nil)
	case '[':
		return s.Array(i, nil)
	case '"':
		end, _, err := s.String(i)
		return end, err
	case 't':
		return s.literal(i, "true")
	case 'f':
		return s.literal(i, "false")
	case 'n':
		return s.literal(i, "null")
	default:
		return s.Number(i)
	}
}

// Object walks the object that starts at i ('{') and returns the index just
// past its '}'. For each member it calls fn with the member's key (as
// written, escapes not decoded) and the index v < len of the text where the
// value starts; fn must walk that value (Value, or any method that ends past
// it) and return its end. A nil fn only validates. An error of fn ends the
// walk and is returned as it is.
func (s *Scanner[T]) Object(i int, fn func(key Key, v int) (int, error)) (int, error) {
	i, more, err := s.open(i, '{', '}')
	for more {
		var key Key
		if key, i, err = s.key(i); err != nil {
			return i, err
		}
		if fn != nil {
			i, err = fn(key, i)
		} else {
			i, err = s.Value(i)
		}
		if err != nil {
			return i, err
		}
		i, more, err = s.next(i, '}')
	}
	return i, err
}

// Array walks the array that starts at i ('[') and returns the index just
// past its ']'. For each element it calls fn with the element's position n
// (0, 1, ...) and the index v < len of the text where it starts; fn must walk
// the element and return its end. A nil fn only validates. An error of fn
// ends the walk and is returned as it is.
func (s *Scanner[T]) Array(i int, fn func(n, v int) (int, error)) (int, error) {
	i, more, err := s.open(i, '[', ']')
	for n := 0; more; n++ {
		if i >= len(s.src) {
			return i, ErrSyntax
		}
		if fn != nil {
			i, err = fn(n, i)
		} else {
			i, err = s.Value(i)
		}
		if err != nil {
			return i, err
		}
		i, more, err = s.next(i, ']')
	}
	return i, err
}

// open enters the object or array at i and reports whether a member or
// element follows (at the returned index) or the container was empty (the
// index is past close).
func (s *Scanner[T]) open(i int, open, close byte) (int, bool, error) {
	if i >= len(s.src) || s.src[i] != open {
		return i, false, ErrSyntax
	}
	if s.depth++; s.depth > MaxDepth {
		return i, false, ErrSyntax
	}
	i = s.Space(i + 1)
	if i < len(s.src) && s.src[i] == close {
		s.depth--
		return i + 1, false, nil
	}
	return i, true, nil
}

// key reads a member's key and colon at i and returns the key and the index
// of the value, which is within the text.
func (s *Scanner[T]) key(i int) (Key, int, error) {
	if i >= len(s.src) || s.src[i] != '"' {
		return Key{}, i, ErrSyntax
	}
	end, str, err := s.String(i)
	if err != nil {
		return Key{}, end, err
	}
	v := s.Space(end)
	if v >= len(s.src) || s.src[v] != ':' {
		return Key{}, v, ErrSyntax
	}
	if v = s.Space(v + 1); v >= len(s.src) {
		return Key{}, v, ErrSyntax
	}
	return Key{i, end, str.Escaped}, v, nil
}

// next reads what follows a member or element ending at i: a comma, then
// more (true) at the returned index, or close, which leaves the container.
func (s *Scanner[T]) next(i int, close byte) (int, bool, error) {
	i = s.Space(i)
	if i >= len(s.src) {
		return i, false, ErrSyntax
	}
	switch s.src[i] {
	case ',':
		return s.Space(i + 1), true, nil
	case close:
		s.depth--
		return i + 1, false, nil
	}
	return i, false, ErrSyntax
}

// Number validates the number that starts at i and returns the index just
// past it; ErrSyntax when there is none. The text from i to there is one that
// strconv.ParseFloat reads, and strconv.ParseInt too for an integer.
func (s *Scanner[T]) Number(i int) (int, error) {
	src := s.src
	if i < len(src) && src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && src[i] >= '1' && src[i] <= '9':
		i = s.digits(i)
	default:
		return i, ErrSyntax
	}
	if i < len(src) && src[i] == '.' {
		j := s.digits(i + 1)
		if j == i+1 {
			return j, ErrSyntax
		}
		i = j
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		j := s.digits(i)
		if j == i {
			return j, ErrSyntax
		}
		i = j
	}
	return i, nil
}

func (s *Scanner[T]) digits(i int) int {
	for i < len(s.src) && s.src[i] >= '0' && s.src[i] <= '9' {
		i++
	}
	return i
}

// literal checks that want (true, false or null) is at i.
func (s *Scanner[T]) literal(i int, want string) (int, error) {
	if len(s.src)-i < len(want) || string(s.src[i:i+len(want)]) != want {
		return i, ErrSyntax
	}
	return i + len(want), nil
}
