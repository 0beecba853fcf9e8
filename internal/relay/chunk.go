package relay

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chatgw/gateway/internal/jsonscan"
	"github.com/chatgw/gateway/internal/wire"
)

// A fast path for Capture.addChunk. Decoding every chunk of a stream with
// json.Unmarshal into streamChunk was the largest CPU cost of a captured
// (/c1) stream: reflection, a validation pass and an allocation per string.
// fastChunk walks the chunk once with internal/jsonscan, validating it as
// encoding/json would, and notes where the few values the capture needs are,
// without allocating. Whatever it is not sure to read exactly as
// json.Unmarshal would (tool calls, keys that differ from a field name only in
// case or are escaped, repeated keys, strings it reads that have \u escapes
// or invalid UTF-8, a value of an unexpected type) makes it give up, and
// addChunk decodes that chunk with json.Unmarshal as before.

// chunkChoice is what fastChunk keeps of one element of choices with index 0.
type chunkChoice struct {
	role, content, finish string // raw string literals (quoted); "" when absent or null
}

// fastChunk is a walk over one chunk's data.
type fastChunk struct {
	s  string
	sc jsonscan.Scanner[string]

	id, model, usage string // raw values; "" when absent or null (usage: any value)
	created          int64
	choices          []chunkChoice // those with index 0, in order
}

// errGiveUp ends a walk: the chunk is for json.Unmarshal.
var errGiveUp = errors.New("relay: chunk needs json.Unmarshal")

// parse walks data; false means json.Unmarshal must decide (the chunk may
// still be valid, or not JSON at all).
func (f *fastChunk) parse(data string) bool {
	f.s = data
	f.sc.Reset(data)
	f.id, f.model, f.usage, f.created = "", "", "", 0
	f.choices = f.choices[:0]
	i := f.sc.Space(0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	var seen [5]bool
	end, err := f.sc.Object(i, func(key jsonscan.Key, v int) (int, error) {
		k, end, err := f.field(key, v, seen[:], "id", "model", "created", "choices", "usage")
		if k < 0 {
			return end, err
		}
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
			end, err = f.sc.Value(v)
			if err == nil && data[v:end] != "null" {
				f.usage = data[v:end]
			}
			return end, err
		}
	})
	return err == nil && f.sc.Space(end) == len(data)
}

func (f *fastChunk) choiceArray(i int) (int, error) {
	if strings.HasPrefix(f.s[i:], "null") {
		return i + 4, nil
	}
	if f.s[i] != '[' {
		return i, errGiveUp
	}
	return f.sc.Array(i, func(_, v int) (int, error) {
		if f.s[v] != '{' {
			return v, errGiveUp
		}
		var (
			ch    chunkChoice
			index int64
			seen  [3]bool
		)
		end, err := f.sc.Object(v, func(key jsonscan.Key, v int) (int, error) {
			k, end, err := f.field(key, v, seen[:], "index", "delta", "finish_reason")
			if k < 0 {
				return end, err
			}
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
	return f.sc.Object(i, func(key jsonscan.Key, v int) (int, error) {
		k, end, err := f.field(key, v, seen[:], "role", "content", "tool_calls")
		if k < 0 {
			return end, err
		}
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

// field returns the index among names of the key of the member whose value
// is at v, for its first occurrence. Otherwise it returns -1 and what the
// member's walk returns: the end of the value, skipped, for another key;
// errGiveUp for a repeated key (the last one wins in json.Unmarshal) or a key
// that encoding/json might still match to a name (case-insensitively, or once
// unescaped).
func (f *fastChunk) field(key jsonscan.Key, v int, seen []bool, names ...string) (k, end int, err error) {
	name := f.s[key.Start+1 : key.End-1] // escapes not decoded
	for j, n := range names {
		if name == n {
			if seen[j] {
				return -1, v, errGiveUp
			}
			seen[j] = true
			return j, v, nil
		}
	}
	if key.Escaped {
		return -1, v, errGiveUp
	}
	for _, n := range names {
		if strings.EqualFold(name, n) {
			return -1, v, errGiveUp
		}
	}
	end, err = f.sc.Value(v)
	return -1, end, err
}

// strOrNull reads a string literal (raw, quoted) or null at i into *dst. It
// gives up on \u escapes and invalid UTF-8, which encoding/json decodes by
// rules of its own (surrogates, U+FFFD), so that the literals it keeps need
// only jsonscan.Unquote's simple decoding.
func (f *fastChunk) strOrNull(i int, dst *string) (int, error) {
	switch f.s[i] {
	case '"':
		end, str, err := f.sc.String(i)
		if err != nil {
			return end, err
		}
		if str.UnicodeEscaped || str.NonASCII && !utf8.ValidString(f.s[i:end]) {
			return i, errGiveUp
		}
		*dst = f.s[i:end]
		return end, nil
	case 'n':
		*dst = ""
		return f.sc.Value(i)
	}
	return i, errGiveUp
}

// int64OrNull reads an integer that fits an int64, or null, at i into *dst.
func (f *fastChunk) int64OrNull(i int, dst *int64) (int, error) {
	if f.s[i] == 'n' {
		return f.sc.Value(i)
	}
	end, err := f.sc.Number(i)
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

// addFast folds a chunk that fastChunk read into the capture, as addChunk's
// json.Unmarshal path would.
func (c *Capture) addFast(f *fastChunk) {
	if c.ID == "" { // unquoted only while the capture has no id yet
		c.setHead(wire.Meta{ID: unquoteOrEmpty(f.id), Model: unquoteOrEmpty(f.model), Created: f.created}, nil)
	}
	if isJSONObject(json.RawMessage(f.usage)) {
		c.Usage = json.RawMessage(f.usage)
	}
	for _, ch := range f.choices {
		if ch.role != "" {
			if role := jsonscan.Unquote(ch.role); role != "" && role != c.Role {
				c.Role = strings.Clone(role)
			}
		}
		if ch.content != "" && !c.UsageOnly {
			n := c.content.Len()
			jsonscan.UnquoteTo(&c.content, ch.content)
			c.size += int64(c.content.Len() - n)
		}
		if ch.finish != "" {
			if fr := jsonscan.Unquote(ch.finish); fr != "" && fr != c.FinishReason {
				c.FinishReason = strings.Clone(fr)
			}
		}
	}
}

func unquoteOrEmpty(raw string) string {
	if raw == "" {
		return ""
	}
	return strings.Clone(jsonscan.Unquote(raw))
}
