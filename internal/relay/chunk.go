package relay

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A fast path for Capture.addChunk. Decoding every chunk of a stream with
// json.Unmarshal into streamChunk was the largest CPU cost of a captured
// (/c1) stream: reflection, a validation pass and an allocation per string.
// fastChunk walks the chunk once, validating it as encoding/json would, and
// notes where the few values the capture needs are, without allocating.
// Whatever it is not sure to read exactly as json.Unmarshal would (tool
// calls, keys that differ from a field name only in case, repeated keys,
// \u escapes, invalid UTF-8, a value of an unexpected type) makes it give up,
// and addChunk decodes that chunk with json.Unmarshal as before.

// chunkChoice is what fastChunk keeps of one element of choices with index 0.
type chunkChoice struct {
	role, content, finish string // raw string literals (quoted); "" when absent or null
}

// fastChunk is a walk over one chunk's data.
type fastChunk struct {
	s     string
	depth int

	id, model, usage string // raw values; "" when absent or null (usage: any value)
	created          int64
	choices          []chunkChoice // those with index 0, in order
}

// errGiveUp ends a walk: the chunk is for json.Unmarshal.
var errGiveUp = errors.New("relay: chunk needs json.Unmarshal")

// giveUpField is fieldIndex's answer for a key that only json.Unmarshal
// matches right.
const giveUpField = -2

// parse walks data; false means json.Unmarshal must decide (the chunk may
// still be valid, or not JSON at all).
func (f *fastChunk) parse(data string) bool {
	f.s, f.depth = data, 0
	f.id, f.model, f.usage, f.created = "", "", "", 0
	f.choices = f.choices[:0]
	i := f.ws(0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	var seen [5]bool
	end, err := f.object(i, func(key string, v int) (int, error) {
		k := fieldIndex(key, "id", "model", "created", "choices", "usage")
		if k == giveUpField {
			return v, errGiveUp
		}
		if k < 0 {
			return f.value(v)
		}
		if seen[k] {
			return v, errGiveUp
		}
		seen[k] = true
		switch k {
		case 0:
			return f.strOrNull(v, &f.id)
		case 1:
			return f.strOrNull(v, &f.model)
		case 2:
			return f.int64OrNull(v, &f.created)
		case 3:
			return f.choiceArray(v)
		default:
			end, err := f.value(v)
			if err == nil && data[v:end] != "null" {
				f.usage = data[v:end]
			}
			return end, err
		}
	})
	return err == nil && f.ws(end) == len(data)
}

func (f *fastChunk) choiceArray(i int) (int, error) {
	if strings.HasPrefix(f.s[i:], "null") {
		return i + 4, nil
	}
	if f.s[i] != '[' {
		return i, errGiveUp
	}
	return f.array(i, func(v int) (int, error) {
		if f.s[v] != '{' {
			return v, errGiveUp
		}
		var (
			ch    chunkChoice
			index int64
			seen  [3]bool
		)
		end, err := f.object(v, func(key string, v int) (int, error) {
			k := fieldIndex(key, "index", "delta", "finish_reason")
			if k == giveUpField {
				return v, errGiveUp
			}
			if k < 0 {
				return f.value(v)
			}
			if seen[k] {
				return v, errGiveUp
			}
			seen[k] = true
			switch k {
			case 0:
				return f.int64OrNull(v, &index)
			case 1:
				return f.delta(v, &ch)
			default:
				return f.strOrNull(v, &ch.finish)
			}
		})
		if err == nil && index == 0 {
			f.choices = append(f.choices, ch)
		}
		return end, err
	})
}

func (f *fastChunk) delta(i int, ch *chunkChoice) (int, error) {
	if strings.HasPrefix(f.s[i:], "null") {
		return i + 4, nil
	}
	if f.s[i] != '{' {
		return i, errGiveUp
	}
	var seen [3]bool
	return f.object(i, func(key string, v int) (int, error) {
		k := fieldIndex(key, "role", "content", "tool_calls")
		if k == giveUpField {
			return v, errGiveUp
		}
		if k < 0 {
			return f.value(v)
		}
		if seen[k] {
			return v, errGiveUp
		}
		seen[k] = true
		switch k {
		case 0:
			return f.strOrNull(v, &ch.role)
		case 1:
			return f.strOrNull(v, &ch.content)
		default:
			if strings.HasPrefix(f.s[v:], "null") {
				return v + 4, nil
			}
			return v, errGiveUp // tool calls: json.Unmarshal
		}
	})
}

// fieldIndex returns the index of key among names, -1 for another key, and
// giveUpField for a key that encoding/json might still match to a name
// (case-insensitively, or once unescaped).
func fieldIndex(key string, names ...string) int {
	for k, n := range names {
		if key == n {
			return k
		}
	}
	for _, n := range names {
		if strings.EqualFold(key, n) || strings.IndexByte(key, '\\') >= 0 {
			return giveUpField
		}
	}
	return -1
}

// strOrNull reads a string literal (raw, quoted) or null at i into *dst.
func (f *fastChunk) strOrNull(i int, dst *string) (int, error) {
	switch f.s[i] {
	case '"':
		end, err := f.str(i)
		if err == nil {
			*dst = f.s[i:end]
		}
		return end, err
	case 'n':
		*dst = ""
		return f.lit(i, "null")
	}
	return i, errGiveUp
}

// int64OrNull reads an integer that fits an int64, or null, at i into *dst.
func (f *fastChunk) int64OrNull(i int, dst *int64) (int, error) {
	if f.s[i] == 'n' {
		return f.lit(i, "null")
	}
	end, err := f.number(i)
	if err != nil {
		return end, err
	}
	n, perr := strconv.ParseInt(f.s[i:end], 10, 64)
	if perr != nil { // a fraction, an exponent or out of range
		return end, errGiveUp
	}
	*dst = n
	return end, nil
}

// The validating walk, as internal/preflight's scanner, over a string.

// maxChunkDepth bounds nesting, as encoding/json does.
const maxChunkDepth = 10000

func (f *fastChunk) ws(i int) int {
	for i < len(f.s) && isSpace(f.s[i]) {
		i++
	}
	return i
}

func (f *fastChunk) value(i int) (int, error) {
	if i >= len(f.s) {
		return i, errGiveUp
	}
	switch c := f.s[i]; c {
	case '{':
		return f.object(i, nil)
	case '[':
		return f.array(i, nil)
	case '"':
		return f.str(i)
	case 't':
		return f.lit(i, "true")
	case 'f':
		return f.lit(i, "false")
	case 'n':
		return f.lit(i, "null")
	default:
		return f.number(i)
	}
}

// object walks the object at i, calling fn (nil: validate only) for each
// member with its key (raw, unquoted but not unescaped) and value start.
func (f *fastChunk) object(i int, fn func(key string, v int) (int, error)) (int, error) {
	s := f.s
	if f.depth++; f.depth > maxChunkDepth {
		return i, errGiveUp
	}
	i = f.ws(i + 1)
	if i < len(s) && s[i] == '}' {
		f.depth--
		return i + 1, nil
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return i, errGiveUp
		}
		kEnd, err := f.str(i)
		if err != nil {
			return kEnd, err
		}
		key := s[i+1 : kEnd-1]
		i = f.ws(kEnd)
		if i >= len(s) || s[i] != ':' {
			return i, errGiveUp
		}
		i = f.ws(i + 1)
		if i >= len(s) {
			return i, errGiveUp
		}
		var end int
		if fn != nil {
			end, err = fn(key, i)
		} else {
			end, err = f.value(i)
		}
		if err != nil {
			return end, err
		}
		i = f.ws(end)
		if i >= len(s) {
			return i, errGiveUp
		}
		switch s[i] {
		case ',':
			i = f.ws(i + 1)
		case '}':
			f.depth--
			return i + 1, nil
		default:
			return i, errGiveUp
		}
	}
}

// array walks the array at i, calling fn (nil: validate only) for each
// element's start.
func (f *fastChunk) array(i int, fn func(v int) (int, error)) (int, error) {
	s := f.s
	if f.depth++; f.depth > maxChunkDepth {
		return i, errGiveUp
	}
	i = f.ws(i + 1)
	if i < len(s) && s[i] == ']' {
		f.depth--
		return i + 1, nil
	}
	for {
		if i >= len(s) {
			return i, errGiveUp
		}
		var end int
		var err error
		if fn != nil {
			end, err = fn(i)
		} else {
			end, err = f.value(i)
		}
		if err != nil {
			return end, err
		}
		i = f.ws(end)
		if i >= len(s) {
			return i, errGiveUp
		}
		switch s[i] {
		case ',':
			i = f.ws(i + 1)
		case ']':
			f.depth--
			return i + 1, nil
		default:
			return i, errGiveUp
		}
	}
}

// str validates the string literal at i and returns its end. Escapes other
// than \u are accepted (unquoteTo decodes them); \u and bytes that are not
// valid UTF-8 give up, since encoding/json has its own rules for them.
func (f *fastChunk) str(i int) (int, error) {
	s := f.s
	for i++; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(s) {
				return i, errGiveUp
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			default:
				return i, errGiveUp
			}
		case c < 0x20:
			return i, errGiveUp
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size <= 1 {
				return i, errGiveUp
			}
			i += size
		}
	}
	return i, errGiveUp
}

func (f *fastChunk) number(i int) (int, error) {
	s := f.s
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(s, i)
	default:
		return i, errGiveUp
	}
	if i < len(s) && s[i] == '.' {
		j := digits(s, i+1)
		if j == i+1 {
			return j, errGiveUp
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(s, i)
		if j == i {
			return j, errGiveUp
		}
		i = j
	}
	return i, nil
}

func digits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func (f *fastChunk) lit(i int, want string) (int, error) {
	if !strings.HasPrefix(f.s[i:], want) {
		return i, errGiveUp
	}
	return i + len(want), nil
}

// unquoteTo appends the text of raw, a string literal that str accepted, to b.
func unquoteTo(b *strings.Builder, raw string) {
	raw = raw[1 : len(raw)-1]
	for {
		i := strings.IndexByte(raw, '\\')
		if i < 0 {
			b.WriteString(raw)
			return
		}
		b.WriteString(raw[:i])
		b.WriteByte(unescape(raw[i+1]))
		raw = raw[i+2:]
	}
}

// unquote returns the text of raw, a string literal that str accepted; it
// allocates only when raw has escapes.
func unquote(raw string) string {
	if strings.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	var b strings.Builder
	unquoteTo(&b, raw)
	return b.String()
}

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

// addFast folds a chunk that fastChunk read into the capture, as addChunk's
// json.Unmarshal path would.
func (c *Capture) addFast(f *fastChunk) {
	if c.ID == "" {
		c.setMeta(unquoteOrEmpty(f.id), unquoteOrEmpty(f.model), f.created)
	}
	if isJSONObject(json.RawMessage(f.usage)) {
		c.Usage = json.RawMessage(f.usage)
	}
	for _, ch := range f.choices {
		if ch.role != "" {
			if role := unquote(ch.role); role != "" && role != c.Role {
				c.Role = strings.Clone(role)
			}
		}
		if ch.content != "" {
			unquoteTo(&c.content, ch.content)
		}
		if ch.finish != "" {
			if fr := unquote(ch.finish); fr != "" && fr != c.FinishReason {
				c.FinishReason = strings.Clone(fr)
			}
		}
	}
}

func unquoteOrEmpty(raw string) string {
	if raw == "" {
		return ""
	}
	return strings.Clone(unquote(raw))
}
