package auth

// This file holds the JSON walker of the token-file parser: it keeps the byte
// offset of every value so that errors can name lines, which encoding/json does
// not do for semantic errors (unknown fields, bad values).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// parser walks a JSON document keeping the byte offset of every value, so that
// errors can name lines. Values are sub-slices of data.
type parser struct {
	data []byte
}

// jval is a JSON value and the offset of its first byte in the document.
type jval struct {
	off int
	raw []byte
}

// jfield is an object member: its name, the offset of its key and its value.
type jfield struct {
	name   string
	keyOff int
	v      jval
}

func (p *parser) line(off int) int {
	off = min(max(off, 0), len(p.data))
	return 1 + bytes.Count(p.data[:off], []byte{'\n'})
}

func (p *parser) errAt(off int, format string, args ...any) error {
	return &ParseError{Line: p.line(off), Msg: fmt.Sprintf(format, args...)}
}

// document checks that data is exactly one JSON value and returns it.
func (p *parser) document() (jval, error) {
	dec := json.NewDecoder(bytes.NewReader(p.data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		switch {
		case err == io.EOF:
			return jval{}, p.errAt(len(p.data), "empty file (want a JSON object)")
		case err == io.ErrUnexpectedEOF:
			return jval{}, p.errAt(len(p.data), "unexpected end of file")
		}
		return jval{}, p.syntax(0, err)
	}
	end := int(dec.InputOffset())
	if _, err := dec.Token(); err != io.EOF {
		return jval{}, p.errAt(skipSpace(p.data, end), "data after the top-level object")
	}
	return jval{off: skipSpace(p.data, 0), raw: raw}, nil
}

// syntax converts a decoder error at base into a ParseError.
func (p *parser) syntax(base int, err error) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return p.errAt(base+int(se.Offset), "invalid JSON: %v", se)
	}
	return p.errAt(base, "invalid JSON: %v", err)
}

// skipSpace returns the offset of the first byte at or after i that is not JSON
// white space or a separator (',' or ':').
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n', ',', ':':
			i++
		default:
			return i
		}
	}
	return i
}

// object returns the members of an object in order. A repeated member is an
// error; null members are dropped (absent).
func (p *parser) object(v jval, path string) ([]jfield, error) {
	if len(v.raw) == 0 || v.raw[0] != '{' {
		return nil, p.errAt(v.off, "%s: want an object", path)
	}
	dec := json.NewDecoder(bytes.NewReader(v.raw))
	if _, err := dec.Token(); err != nil {
		return nil, p.syntax(v.off, err)
	}
	var fields []jfield
	seen := map[string]int{}
	for dec.More() {
		keyOff := v.off + skipSpace(v.raw, int(dec.InputOffset()))
		tok, err := dec.Token()
		if err != nil {
			return nil, p.syntax(v.off, err)
		}
		name, _ := tok.(string)
		valOff := v.off + skipSpace(v.raw, int(dec.InputOffset()))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, p.syntax(v.off, err)
		}
		if first, dup := seen[name]; dup {
			return nil, p.errAt(keyOff, "%s: field %q given twice (first at line %d)", path, name, p.line(first))
		}
		seen[name] = keyOff
		if string(raw) == "null" {
			continue
		}
		fields = append(fields, jfield{name: name, keyOff: keyOff, v: jval{off: valOff, raw: raw}})
	}
	return fields, nil
}

// array returns the elements of an array.
func (p *parser) array(v jval, path string) ([]jval, error) {
	if len(v.raw) == 0 || v.raw[0] != '[' {
		return nil, p.errAt(v.off, "%s: want an array", path)
	}
	dec := json.NewDecoder(bytes.NewReader(v.raw))
	if _, err := dec.Token(); err != nil {
		return nil, p.syntax(v.off, err)
	}
	var elems []jval
	for dec.More() {
		off := v.off + skipSpace(v.raw, int(dec.InputOffset()))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, p.syntax(v.off, err)
		}
		elems = append(elems, jval{off: off, raw: raw})
	}
	return elems, nil
}

func (p *parser) str(v jval, path string) (string, error) {
	var s string
	if len(v.raw) == 0 || v.raw[0] != '"' || json.Unmarshal(v.raw, &s) != nil {
		return "", p.errAt(v.off, "%s: want a string", path)
	}
	return s, nil
}

// strs returns a non-nil slice of strings and the offset of each.
func (p *parser) strs(v jval, path string) ([]string, []int, error) {
	elems, err := p.array(v, path)
	if err != nil {
		return nil, nil, err
	}
	ss, offs := make([]string, len(elems)), make([]int, len(elems))
	for i, e := range elems {
		if ss[i], err = p.str(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return nil, nil, err
		}
		offs[i] = e.off
	}
	return ss, offs, nil
}

func (p *parser) boolean(v jval, path string) (bool, error) {
	var b bool
	if json.Unmarshal(v.raw, &b) != nil {
		return false, p.errAt(v.off, "%s: want true or false", path)
	}
	return b, nil
}

func (p *parser) integer(v jval, path string) (int64, error) {
	var n int64
	if json.Unmarshal(v.raw, &n) != nil {
		return 0, p.errAt(v.off, "%s: want an integer", path)
	}
	return n, nil
}

func (p *parser) number(v jval, path string, dst *float64) error {
	if json.Unmarshal(v.raw, dst) != nil {
		return p.errAt(v.off, "%s: want a number", path)
	}
	return nil
}
