package guard

// This file holds what makes a rule pattern cheap on a long text. Go's regexp
// has no DFA: an unanchored search runs its NFA over the whole text, about a
// millisecond for 32 KB. Two facts computed from the pattern's syntax let
// Rules run it on a few short pieces instead, with the same answer:
//
//   - the literals it needs: strings of which every match contains one (the
//     scanner finds them in the same pass as the terms); a text with none of
//     them cannot match;
//   - the bytes it can match: every match lies within one run of such bytes,
//     so the pattern runs only on runs that are long enough for its shortest
//     match (and, when it needs literals, that hold one).

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pattern is one compiled rule pattern.
type pattern struct {
	cat int
	re  *regexp.Regexp
	// needs lists literal ids (scanner keys) of which every match holds one;
	// nil when the pattern needs none that can be searched for.
	needs []int32
	// can[b] reports whether b can be a byte of a match. All bytes from 0x80
	// up share one answer: whether any non-ASCII rune can be matched.
	can [256]bool
	// minLen is the fewest runes (so bytes) a match has; at least 1.
	minLen int
}

// compilePattern parses expr as RE2 syntax (regexp.Compile) and analyses it.
// lits are the literals the pattern needs (lowercase, ASCII, no white space),
// nil when it needs none. It refuses a pattern that can match the empty
// string: it would flag texts for no content, and a match of no bytes lies in
// no run of bytes.
func compilePattern(expr string) (p *pattern, lits []string, err error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, nil, err
	}
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, nil, err
	}
	p = &pattern{re: re, minLen: minRunes(tree)}
	if p.minLen == 0 {
		return nil, nil, errEmptyMatch
	}
	markBytes(tree, &p.can)
	lits = needed(tree.Simplify()).req
	return p, lits, nil
}

// errEmptyMatch is compilePattern's error for a pattern that matches "".
var errEmptyMatch = &patternError{"can match the empty string, which would flag any text"}

type patternError struct{ msg string }

func (e *patternError) Error() string { return e.msg }

// minRunes returns the fewest runes a match of re has (saturating).
func minRunes(re *syntax.Regexp) int {
	const most = 1 << 20
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL, syntax.OpNoMatch:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minRunes(re.Sub[0])
	case syntax.OpRepeat:
		return min(most, re.Min*minRunes(re.Sub[0]))
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n = min(most, n+minRunes(s))
		}
		return n
	case syntax.OpAlternate:
		n := most
		for _, s := range re.Sub {
			n = min(n, minRunes(s))
		}
		return n
	}
	return 0 // empty match, assertions, star, quest
}

// markBytes sets can[b] for every byte b that can be part of a match of re.
func markBytes(re *syntax.Regexp, can *[256]bool) {
	nonASCII := func() {
		for b := utf8.RuneSelf; b < 256; b++ {
			can[b] = true
		}
	}
	mark := func(r rune) {
		if r < utf8.RuneSelf {
			can[r] = true
		} else {
			nonASCII()
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			mark(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					mark(f)
				}
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			for r := lo; r <= min(hi, utf8.RuneSelf-1); r++ {
				can[r] = true
			}
			if hi >= utf8.RuneSelf {
				nonASCII()
			}
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		for b := range can {
			can[b] = re.Op == syntax.OpAnyChar || b != '\n' || can[b]
		}
	}
	for _, s := range re.Sub {
		markBytes(s, can)
	}
}

// lits is what needed knows of a node: exact, when ok, is every string it
// can match (at most maxExact, in the form of literalForm); req, when not nil,
// are literals of which every match holds one.
type lits struct {
	exact []string
	ok    bool
	req   []string
}

const (
	maxExact    = 16  // strings in an exact set
	maxExactLen = 128 // bytes in one of them
	maxClass    = 8   // runes in a class taken as an exact set
)

// breakByte stands, in an exact string, for a rune that no literal may
// contain: a non-ASCII rune (case folding may turn it into more or other
// runes in the term text) or white space (the scanner reads runs of it as one
// ' ').
const breakByte = 0

// literalForm returns r as it stands in an exact string.
func literalForm(r rune) string {
	if r >= utf8.RuneSelf || r == breakByte || asciiSpace(byte(r)) {
		return string(rune(breakByte))
	}
	return strings.ToLower(string(r))
}

// needed analyses a simplified syntax tree (no OpRepeat left).
//
// Why a literal found in the term text means a match is possible and its
// absence means none is: a literal is lowercase ASCII without white space.
// The runes a pattern's ASCII letter can match in the pattern text, which is
// NFKC, are ASCII (the non-ASCII case variants of 'k' and 's', the Kelvin and
// long s signs, do not survive NFKC), and case folding maps each ASCII rune to
// its lowercase, one byte, so the term text holds the literal where the
// pattern text held any case variant of it.
func needed(re *syntax.Regexp) lits {
	switch re.Op {
	case syntax.OpLiteral:
		var b strings.Builder
		for _, r := range re.Rune {
			b.WriteString(literalForm(r))
		}
		return exactly(b.String())
	case syntax.OpCharClass:
		var set []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1]-re.Rune[i] >= maxClass {
				return lits{}
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				set = append(set, literalForm(r))
			}
		}
		if len(set) > maxClass {
			return lits{}
		}
		slices.Sort(set)
		set = slices.Compact(set)
		return lits{exact: set, ok: true, req: pieces(set)}
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return exactly("")
	case syntax.OpCapture:
		return needed(re.Sub[0])
	case syntax.OpQuest:
		sub := needed(re.Sub[0])
		if !sub.ok || len(sub.exact) >= maxExact {
			return lits{}
		}
		set := append(slices.Clone(sub.exact), "")
		return lits{exact: set, ok: true}
	case syntax.OpPlus:
		return lits{req: needed(re.Sub[0]).req}
	case syntax.OpConcat:
		return concat(re.Sub)
	case syntax.OpAlternate:
		var exact, req []string
		exactOK, reqOK := true, true
		for _, s := range re.Sub {
			sub := needed(s)
			if exactOK && sub.ok && len(exact)+len(sub.exact) <= maxExact {
				exact = append(exact, sub.exact...)
			} else {
				exactOK = false
			}
			if sub.req == nil {
				reqOK = false
			}
			req = append(req, sub.req...)
		}
		switch {
		case exactOK:
			slices.Sort(exact)
			exact = slices.Compact(exact)
			return lits{exact: exact, ok: true, req: pieces(exact)}
		case reqOK:
			slices.Sort(req)
			return lits{req: slices.Compact(req)}
		}
		return lits{}
	}
	return lits{} // star, any character, no match
}

// exactly returns the lits of a node that matches s only.
func exactly(s string) lits {
	set := []string{s}
	return lits{exact: set, ok: true, req: pieces(set)}
}

// concat joins adjacent exact sets while they stay small, and needs the best
// of the literal sets it sees.
func concat(subs []*syntax.Regexp) lits {
	cur := []string{""}
	whole := true // cur is the exact set of every sub so far
	var cands [][]string
	for _, s := range subs {
		sub := needed(s)
		if sub.ok && len(cur)*len(sub.exact) <= maxExact && longest(cur)+longest(sub.exact) <= maxExactLen {
			next := make([]string, 0, len(cur)*len(sub.exact))
			for _, a := range cur {
				for _, b := range sub.exact {
					next = append(next, a+b)
				}
			}
			cur = next
			continue
		}
		whole = false
		cands = append(cands, pieces(cur))
		if sub.ok {
			cur = sub.exact
		} else {
			cands = append(cands, sub.req)
			cur = []string{""}
		}
	}
	if whole {
		slices.Sort(cur)
		cur = slices.Compact(cur)
		return lits{exact: cur, ok: true, req: pieces(cur)}
	}
	cands = append(cands, pieces(cur))
	return lits{req: best(cands)}
}

func longest(set []string) int {
	n := 0
	for _, s := range set {
		n = max(n, len(s))
	}
	return n
}

// pieces returns, for an exact set, the longest literal (a run without
// breakByte) of each string; nil when some string has none, so that the set
// requires nothing.
func pieces(set []string) []string {
	out := make([]string, 0, len(set))
	for _, s := range set {
		p := ""
		for _, f := range strings.Split(s, string(rune(breakByte))) {
			if len(f) > len(p) {
				p = f
			}
		}
		if p == "" {
			return nil
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// best returns the most selective literal set: the one whose shortest literal
// is longest, then the smallest; nil when none requires anything.
func best(cands [][]string) []string {
	var b []string
	bmin := 0
	for _, c := range cands {
		if c == nil {
			continue
		}
		m := len(c[0])
		for _, s := range c {
			m = min(m, len(s))
		}
		if b == nil || m > bmin || m == bmin && len(c) < len(b) {
			b, bmin = c, m
		}
	}
	return b
}

// matchRun reports whether p matches within s[lo:hi], a maximal run of bytes p
// can match: it runs p on the run and the rune on each side of it, which no
// match can take but which \b, ^ and $ look at, so the answer is the one the
// whole text would give for a match within the run.
func (p *pattern) matchRun(s string, lo, hi int) bool {
	if hi-lo < p.minLen {
		return false
	}
	if lo > 0 {
		_, n := utf8.DecodeLastRuneInString(s[:lo])
		lo -= n
	}
	if hi < len(s) {
		_, n := utf8.DecodeRuneInString(s[hi:])
		hi += n
	}
	return p.re.MatchString(s[lo:hi])
}

// matchAt reports whether p matches in the run of matchable bytes holding
// s[i], and where that run is (an empty one when s[i] cannot be matched).
func (p *pattern) matchAt(s string, i int) (ok bool, lo, hi int) {
	if !p.can[s[i]] {
		return false, i, i
	}
	lo, hi = i, i+1
	for lo > 0 && p.can[s[lo-1]] {
		lo--
	}
	for hi < len(s) && p.can[s[hi]] {
		hi++
	}
	return p.matchRun(s, lo, hi), lo, hi
}

// matchRuns reports whether p matches anywhere in s, looking only at runs of
// matchable bytes at least minLen long. It finds them skipping ahead: when the
// byte minLen-1 after a run's possible start cannot be matched, no long
// enough run starts before it.
func (p *pattern) matchRuns(s string) bool {
	n := p.minLen
	i := 0 // s[i-1], if any, cannot be matched
	for i+n <= len(s) {
		j := i + n - 1
		if !p.can[s[j]] {
			i = j + 1
			continue
		}
		k := j - 1
		for k >= i && p.can[s[k]] {
			k--
		}
		if k >= i {
			i = k + 1
			continue
		}
		end := j + 1
		for end < len(s) && p.can[s[end]] {
			end++
		}
		if p.matchRun(s, i, end) {
			return true
		}
		i = end + 1
	}
	return false
}
