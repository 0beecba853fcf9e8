package upstream

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/chatgw/gateway/internal/jsonscan"
)

// A catalog file's errors name the line, the column and the field, so that
// an operator finds the mistake in a file of many models at once.

// fieldError is a rule a catalog breaks at path ("models", 3, "backends",
// 0, "provider").
type fieldError struct {
	path []any
	msg  string
	key  int // the offset of the member's key in the file when the key is at fault; 0 for its value
}

func (e *fieldError) Error() string { return "catalog: " + pathString(e.path) + ": " + e.msg }

// at is the error with the line and column of its place in data, the file
// the catalog was decoded from.
func (e *fieldError) at(data []byte) error {
	off := e.key
	if off == 0 {
		off = locate(data, e.path)
	}
	line, col := lineCol(data, off)
	return fmt.Errorf("catalog: line %d, column %d: %s: %s", line, col, pathString(e.path), e.msg)
}

// pathString writes a path as models[3].backends[0].provider.
func pathString(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(p) + "]")
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		}
	}
	return b.String()
}

// locate returns the offset in data of the value at path, or of the
// deepest value on its way that exists (a missing member: its object). The
// bare-array form has no "models" member: the path's first step is skipped.
func locate(data []byte, path []any) int {
	sc := jsonscan.New(data)
	at := sc.Space(0)
	if at < len(data) && data[at] == '[' && len(path) > 0 && path[0] == "models" {
		path = path[1:]
	}
	for _, step := range path {
		next := -1
		switch step := step.(type) {
		case string:
			if at >= len(data) || data[at] != '{' {
				return at
			}
			sc.Object(at, func(k jsonscan.Key, v int) (int, error) {
				if next < 0 && jsonscan.Unquote(data[k.Start:k.End]) == step {
					next = v
				}
				return sc.Value(v)
			})
		case int:
			if at >= len(data) || data[at] != '[' {
				return at
			}
			sc.Array(at, func(n, v int) (int, error) {
				if n == step {
					next = v
				}
				return sc.Value(v)
			})
		}
		if next < 0 {
			return at
		}
		at = next
	}
	return at
}

// lineCol is the line and the column (in bytes), both from 1, of offset off
// in data.
func lineCol(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	return line, off - (bytes.LastIndexByte(before, '\n') + 1) + 1
}

// checkKeys finds the first member of data whose name is not a field of its
// place in the catalog format, compared exactly (encoding/json would match
// "Alias" to alias). It leaves everything else to the decoder.
func checkKeys(data []byte) *fieldError {
	sc := jsonscan.New(data)
	at := sc.Space(0)
	if at >= len(data) {
		return nil
	}
	var bad *fieldError
	models := func(i int) {
		sc.Array(i, func(n, v int) (int, error) {
			if bad == nil && data[v] == '{' {
				bad = checkModel(&sc, data, v, []any{"models", n})
			}
			return sc.Value(v)
		})
	}
	switch data[at] {
	case '[':
		models(at)
	case '{':
		bad = checkObject(&sc, data, at, nil, catalogFields(), func(key string, v int) *fieldError {
			if key == "models" && data[v] == '[' {
				models(v)
			}
			return bad
		})
	}
	return bad
}

// checkModel checks the members of the model at i and of its objects.
func checkModel(sc *jsonscan.Scanner[[]byte], data []byte, i int, path []any) *fieldError {
	return checkObject(sc, data, i, path, modelFields(), func(key string, v int) *fieldError {
		p := append(slices.Clip(path), key)
		switch {
		case key == "modalities" && data[v] == '{':
			return checkObject(sc, data, v, p, modalityFields(), nil)
		case key == "constraints" && data[v] == '{':
			return checkObject(sc, data, v, p, constraintFields(), nil)
		case key == "backends" && data[v] == '[':
			var bad *fieldError
			sc.Array(v, func(n, e int) (int, error) {
				if bad == nil && data[e] == '{' {
					bad = checkObject(sc, data, e, append(slices.Clip(p), n), backendFields(), nil)
				}
				return sc.Value(e)
			})
			return bad
		}
		return nil
	})
}

// checkObject checks that each member name of the object at i is among
// names, then calls inner (when not nil) on each, stopping at the first
// error.
func checkObject(sc *jsonscan.Scanner[[]byte], data []byte, i int, path []any, names []string, inner func(key string, v int) *fieldError) *fieldError {
	var bad *fieldError
	sc.Object(i, func(k jsonscan.Key, v int) (int, error) {
		if bad != nil {
			return sc.Value(v)
		}
		key := jsonscan.Unquote(data[k.Start:k.End])
		switch {
		case !slices.Contains(names, key):
			bad = &fieldError{path: append(slices.Clip(path), key), key: k.Start,
				msg: fmt.Sprintf("unknown field %q (want one of %s)", key, strings.Join(names, ", "))}
		case inner != nil:
			bad = inner(key, v)
		}
		return sc.Value(v)
	})
	return bad
}

// The member names of each place of the catalog format: the JSON names of
// the Go types, so that the two cannot differ.
func catalogFields() []string    { return jsonNames(reflect.TypeFor[Catalog]()) }
func modelFields() []string      { return jsonNames(reflect.TypeFor[ModelInfo]()) }
func modalityFields() []string   { return jsonNames(reflect.TypeFor[Modalities]()) }
func constraintFields() []string { return jsonNames(reflect.TypeFor[Constraints]()) }
func backendFields() []string    { return jsonNames(reflect.TypeFor[BackendInfo]()) }

// jsonNames is the JSON member names of struct type t's exported fields.
func jsonNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "-" && name != "" {
			out = append(out, name)
		}
	}
	return out
}
