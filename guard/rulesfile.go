package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// RulesError is a problem in a rules file, with the place it is at.
type RulesError struct {
	// File is the path given to LoadRules; empty from ParseRules.
	File string
	// Line and Column (1-based, Column in bytes) locate the offending JSON
	// value or member, or the byte where a syntax error was found.
	Line, Column int
	// Path names the place in the document, as categories["hate"].terms[3];
	// empty for a syntax error or a problem with the whole document.
	Path string
	// Msg says what is wrong.
	Msg string
}

// Error returns "guard: rules file FILE:LINE:COLUMN: PATH: MSG" (without
// "FILE:" from ParseRules, without "PATH: " when there is none).
func (e *RulesError) Error() string {
	var b strings.Builder
	b.WriteString("guard: rules file ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	fmt.Fprintf(&b, "%d:%d: ", e.Line, e.Column)
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadRules reads and compiles the rules file at path (GATEWAY_GUARD_RULES),
// in the format of ParseRules. A file that cannot be read gives the
// *os.PathError, which names it; a bad one a *RulesError whose File is path.
func LoadRules(path string) (*Rules, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("guard.LoadRules: %w", err)
	}
	r, err := ParseRules(data)
	if re, ok := errors.AsType[*RulesError](err); ok {
		re.File = path
	}
	return r, err
}

// ParseRules compiles a rules file:
//
//	{"categories": {
//	  "violence":  {"terms": ["kill them all", "massacre"]},
//	  "self-harm": {"terms": ["kill myself"], "patterns": ["(?i)\\bend\\s+my\\s+life\\b"]},
//	  "privacy":   {"patterns": ["\\b\\d{3}-\\d{2}-\\d{4}\\b"]}
//	}}
//
// Category names are free strings (OpenAI's moderation names are
// recommended), not empty, without a comma (Param joins names with commas),
// and distinct once lowercased. Each category has optional "terms" and
// "patterns", arrays of strings; a category with neither flags nothing. A term
// must not be empty once normalised (see Rules). A pattern is RE2 syntax and
// must not be able to match the empty string. Unknown members, repeated
// members and values of the wrong type are errors; null counts as absent
// except for "categories", which is required.
//
// Every error is a *RulesError naming the line, column and place
// (categories["hate"].patterns[2]) of the offending value.
func ParseRules(data []byte) (*Rules, error) {
	if bom := "\xef\xbb\xbf"; bytes.HasPrefix(data, []byte(bom)) {
		// Some editors begin a UTF-8 file with a byte order mark; blanks
		// keep the columns of line 1.
		data = append([]byte("   "), data[len(bom):]...)
	}
	p := &rulesParser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	cats, err := p.document()
	if err != nil {
		return nil, err
	}
	return p.compile(cats)
}

// fileCategory is a category as read from the file, with the offsets of its
// values.
type fileCategory struct {
	name, path string
	terms      []fileString
	patterns   []fileString
}

type fileString struct {
	s   string
	off int
}

type rulesParser struct {
	data []byte
	dec  *json.Decoder
}

func (p *rulesParser) errAt(off int, path, format string, args ...any) *RulesError {
	off = min(max(off, 0), len(p.data))
	line := 1 + bytes.Count(p.data[:off], []byte{'\n'})
	col := off - (bytes.LastIndexByte(p.data[:off], '\n') + 1) + 1
	return &RulesError{Line: line, Column: col, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// next returns the next token and the offset where it begins.
func (p *rulesParser) next() (json.Token, int, error) {
	off := int(p.dec.InputOffset())
	for off < len(p.data) && strings.IndexByte(" \t\r\n,:", p.data[off]) >= 0 {
		off++
	}
	tok, err := p.dec.Token()
	if err == nil {
		return tok, off, nil
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return nil, off, p.errAt(int(se.Offset)-1, "", "invalid JSON: %v", se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return nil, off, p.errAt(len(p.data), "", "invalid JSON: unexpected end of file")
	}
	return nil, off, p.errAt(off, "", "invalid JSON: %v", err)
}

// key reads an object member's name.
func (p *rulesParser) key() (string, int, error) {
	tok, off, err := p.next()
	if err != nil {
		return "", off, err
	}
	return tok.(string), off, nil // the decoder accepts only strings here
}

// close reads the token that ends an object or array.
func (p *rulesParser) close() error {
	_, _, err := p.next()
	return err
}

func (p *rulesParser) document() ([]fileCategory, error) {
	tok, off, err := p.next()
	if err != nil {
		if len(bytes.TrimSpace(p.data)) == 0 {
			return nil, p.errAt(0, "", "empty file (want a JSON object with categories)")
		}
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, p.errAt(off, "", "want a JSON object with categories")
	}
	var cats []fileCategory
	found := false
	for p.dec.More() {
		name, koff, err := p.key()
		if err != nil {
			return nil, err
		}
		if name != "categories" {
			return nil, p.errAt(koff, "", "unknown field %q (want categories)", name)
		}
		if found {
			return nil, p.errAt(koff, "", "field categories given twice")
		}
		found = true
		if cats, err = p.categories(); err != nil {
			return nil, err
		}
	}
	if err := p.close(); err != nil {
		return nil, err
	}
	if !found {
		return nil, p.errAt(off, "", "missing field categories")
	}
	if rest := bytes.TrimLeft(p.data[p.dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, p.errAt(len(p.data)-len(rest), "", "data after the JSON object")
	}
	return cats, nil
}

func (p *rulesParser) categories() ([]fileCategory, error) {
	tok, off, err := p.next()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, p.errAt(off, "categories", "want an object of categories")
	}
	var cats []fileCategory
	first := map[string]int{} // canonical name -> key offset
	for p.dec.More() {
		name, koff, err := p.key()
		if err != nil {
			return nil, err
		}
		path := fmt.Sprintf("categories[%q]", name)
		switch canon := canonicalName(name); {
		case strings.TrimSpace(name) == "":
			return nil, p.errAt(koff, path, "empty category name")
		case strings.Contains(name, ","):
			return nil, p.errAt(koff, path, "a category name cannot hold a comma")
		case first[canon] > 0:
			return nil, p.errAt(koff, path, "category %q given twice (first at line %d)",
				canon, p.errAt(first[canon]-1, "", "").Line)
		default:
			first[canon] = koff + 1
		}
		c, err := p.category(name, path)
		if err != nil {
			return nil, err
		}
		cats = append(cats, c)
	}
	return cats, p.close()
}

func (p *rulesParser) category(name, path string) (fileCategory, error) {
	c := fileCategory{name: name, path: path}
	tok, off, err := p.next()
	if err != nil {
		return c, err
	}
	if tok != json.Delim('{') {
		return c, p.errAt(off, path, "want an object with terms and patterns")
	}
	seen := map[string]bool{}
	for p.dec.More() {
		field, koff, err := p.key()
		if err != nil {
			return c, err
		}
		var dst *[]fileString
		switch field {
		case "terms":
			dst = &c.terms
		case "patterns":
			dst = &c.patterns
		default:
			return c, p.errAt(koff, path, "unknown field %q (want terms or patterns)", field)
		}
		if seen[field] {
			return c, p.errAt(koff, path, "field %s given twice", field)
		}
		seen[field] = true
		if *dst, err = p.strings(path + "." + field); err != nil {
			return c, err
		}
	}
	return c, p.close()
}

// strings reads an array of strings, or null.
func (p *rulesParser) strings(path string) ([]fileString, error) {
	tok, off, err := p.next()
	if err != nil || tok == nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, p.errAt(off, path, "want an array of strings")
	}
	var out []fileString
	for p.dec.More() {
		tok, off, err := p.next()
		if err != nil {
			return nil, err
		}
		s, ok := tok.(string)
		if !ok {
			return nil, p.errAt(off, fmt.Sprintf("%s[%d]", path, len(out)), "want a string")
		}
		out = append(out, fileString{s: s, off: off})
	}
	return out, p.close()
}

// compile normalises the terms, compiles the patterns and builds the scanner.
func (p *rulesParser) compile(cats []fileCategory) (*Rules, error) {
	slices.SortFunc(cats, func(a, b fileCategory) int { return strings.Compare(canonicalName(a.name), canonicalName(b.name)) })
	r := &Rules{norm: newNormalizer()}
	var keys []string
	var patLits [][]string
	for ci, c := range cats {
		r.cats = append(r.cats, ruleCategory{name: canonicalName(c.name), native: c.name})
		for i, t := range c.terms {
			k := r.norm.term(t.s)
			if k == "" {
				return nil, p.errAt(t.off, fmt.Sprintf("%s.terms[%d]", c.path, i), "empty term")
			}
			first, _ := utf8.DecodeRuneInString(k)
			last, _ := utf8.DecodeLastRuneInString(k)
			r.terms = append(r.terms, ruleTerm{cat: ci, first: first, last: last})
			keys = append(keys, k)
		}
		for i, e := range c.patterns {
			pat, lits, err := compilePattern(e.s)
			if err != nil {
				return nil, p.errAt(e.off, fmt.Sprintf("%s.patterns[%d]", c.path, i), "invalid pattern: %v", err)
			}
			pat.cat = ci
			r.pats = append(r.pats, pat)
			patLits = append(patLits, lits)
		}
	}
	// The literals the patterns need follow the terms among the keys.
	litID := map[string]int32{}
	for pi, lits := range patLits {
		for _, l := range lits {
			id, ok := litID[l]
			if !ok {
				id = int32(len(keys))
				litID[l] = id
				keys = append(keys, l)
				r.litPats = append(r.litPats, nil)
			}
			k := int(id) - len(r.terms)
			r.litPats[k] = append(r.litPats[k], int32(pi))
			r.pats[pi].needs = append(r.pats[pi].needs, id)
		}
	}
	sc, err := newScanner(keys)
	if err != nil {
		return nil, p.errAt(0, "", "%v", err)
	}
	r.sc = sc
	return r, nil
}

// RulesFile holds the rules of a rules file behind an atomic pointer, so that
// Reload (gatewayd calls it on SIGHUP) swaps in new rules while requests are
// classified: a Classify sees either the old rules or the new ones, never a
// mix. It is a Classifier (ClassifierRules) and safe for concurrent use.
type RulesFile struct {
	path    string
	mu      sync.Mutex // serializes Reload
	cur     atomic.Pointer[Rules]
	reloads atomic.Uint64 // successful Reloads: the Version
}

var _ Classifier = (*RulesFile)(nil)

// NewRulesFile loads the rules file at path. It fails with LoadRules's error
// (naming the file, and for a bad file the place); gatewayd then refuses to
// start.
func NewRulesFile(path string) (*RulesFile, error) {
	r, err := LoadRules(path)
	if err != nil {
		return nil, err
	}
	f := &RulesFile{path: path}
	f.cur.Store(r)
	return f, nil
}

// Path returns the path of the rules file.
func (f *RulesFile) Path() string { return f.path }

// Rules returns the current rules, which later reloads do not change.
func (f *RulesFile) Rules() *Rules { return f.cur.Load() }

// Classify classifies in with the current rules (Rules.Classify).
func (f *RulesFile) Classify(ctx context.Context, in Input) (Verdict, error) {
	return f.cur.Load().Classify(ctx, in)
}

// Reload re-reads the rules file. On success the new rules serve every later
// Classify, and Version grows so that cached verdicts are forgotten; on failure the old rules stay in place and Reload returns
// LoadRules's error. Concurrent Reloads are serialized.
func (f *RulesFile) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := LoadRules(f.path)
	if err != nil {
		return err
	}
	f.cur.Store(r)
	f.reloads.Add(1)
	return nil
}
