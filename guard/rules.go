package guard

import (
	"context"
	"unicode/utf8"
)

// Rules is the rules classifier (ClassifierRules): per category, terms and
// RE2 patterns from a rules file (LoadRules, ParseRules). It is deterministic,
// offline and immutable, so safe for concurrent use; RulesFile swaps in a
// reloaded one.
//
// A category is flagged when one of its terms or patterns matches one of the
// input's texts (each text on its own):
//
//   - a term matches a whole word or phrase, case-insensitively, after both
//     the term and the text are normalised: Unicode NFKC (full-width
//     "ｂｏｍｂ" and decomposed "café" meet their plain forms), default-ignorable
//     code points removed (a zero-width space inside a word does not hide it),
//     full Unicode case folding, and every run of white space read as one
//     space ("kill  yourself" across a line break matches "kill yourself").
//     Whole word: a term that begins or ends with a word character (a letter,
//     mark, number or '_') needs a non-word character or the text's edge on
//     that side, so "ass" does not match in "class", while "c++" matches in
//     "c++20". Characters of scripts written without spaces (Han, Hiragana,
//     Katakana, Thai, Lao, Khmer, Myanmar) count as words of their own, so
//     such a term matches inside a longer run of them;
//   - a pattern is an RE2 expression (Go's regexp) searched in the text after
//     NFKC and the removal of default-ignorable code points, but neither case
//     folding nor white space collapsing: add (?i) for case-insensitive
//     matching and use \s+ between words.
//
// Each flagged category gives one Category: Name is the rule file's category
// lowercased, Native as written, Score 1, Classifier "rules". Categories come
// in Name order. Images are not classified.
//
// Cost: the terms, and the literals the patterns need, are found in one pass
// of an Aho-Corasick automaton over the text; a pattern runs only on the
// stretches of text that could hold a match of it; ASCII text is matched in
// place, other text is normalised first (a copy or two). BenchmarkRules
// measures a 32 KB prompt.
type Rules struct {
	cats  []ruleCategory
	terms []ruleTerm // scanner keys 0..len(terms)-1
	pats  []*pattern
	// litPats[k] lists the patterns that need scanner key len(terms)+k.
	litPats [][]int32
	sc      *scanner
	norm    normalizer
}

var _ Classifier = (*Rules)(nil)

type ruleCategory struct {
	name, native string
}

type ruleTerm struct {
	cat         int
	first, last rune // of the normalised term, for the word boundaries
}

// maxHits is how many places of the literals a pattern needs are kept per
// text; past it the pattern looks at every long enough run (matchRuns).
const maxHits = 256

// Categories returns the canonical names of the rules' categories, sorted.
func (r *Rules) Categories() []string {
	names := make([]string, len(r.cats))
	for i, c := range r.cats {
		names[i] = c.name
	}
	return names
}

// Classify flags the categories of the terms and patterns that match in
// in.Texts. It fails only when ctx is done before it starts.
func (r *Rules) Classify(ctx context.Context, in Input) (Verdict, error) {
	if err := ctx.Err(); err != nil {
		return Verdict{}, err
	}
	st := ruleState{
		flagged: make([]bool, len(r.cats)),
		seen:    make([]bool, len(r.pats)),
		hits:    make([][]int32, len(r.pats)),
		over:    make([]bool, len(r.pats)),
	}
	for _, t := range in.Texts {
		if st.n == len(r.cats) {
			break
		}
		if t != "" {
			r.classify(t, &st)
		}
	}
	var v Verdict
	for i, f := range st.flagged {
		if f {
			v.Categories = append(v.Categories, Category{
				Name: r.cats[i].name, Score: 1, Native: r.cats[i].native, Classifier: ClassifierRules,
			})
		}
	}
	return v, nil
}

// ruleState is what one Classify has found so far.
type ruleState struct {
	flagged []bool // by category
	n       int    // categories flagged
	// By pattern, for the current text: whether a literal it needs was seen,
	// where (start offsets, up to maxHits) and whether there were more.
	seen []bool
	hits [][]int32
	over []bool
}

func (st *ruleState) flag(cat int) {
	if !st.flagged[cat] {
		st.flagged[cat] = true
		st.n++
	}
}

// classify looks for the rules in one text.
func (r *Rules) classify(s string, st *ruleState) {
	for i := range r.pats {
		st.seen[i], st.hits[i], st.over[i] = false, st.hits[i][:0], false
	}
	// ASCII text is its own NFKC form, has no ignorable runes and folds to
	// lowercase, which the scanner applies as it reads: no copy needed.
	ascii := isASCII(s)
	pat, txt := s, s
	if !ascii {
		pat, txt = r.norm.texts(s)
	}
	if !r.scan(txt, st) {
		return
	}
	for i, p := range r.pats {
		if st.flagged[p.cat] || p.needs != nil && !st.seen[i] {
			continue
		}
		var ok bool
		if ascii && p.needs != nil && !st.over[i] {
			// The term text is the pattern text: the places of the
			// literals are places in pat.
			ok = p.matchHits(pat, st.hits[i])
		} else {
			ok = p.matchRuns(pat)
		}
		if ok {
			st.flag(p.cat)
		}
	}
}

// scan runs the automaton over the term text t, flagging the categories of
// the terms found and noting the literals the patterns need. It reports
// whether some category is still not flagged.
//
// One automaton step is a load that depends on the previous one, so one
// machine reading t from start to end waits on memory at every byte. scan
// runs two machines in the same loop instead, one on each half of t, whose
// loads overlap. The second starts in the initial state at the half, so it
// finds every occurrence that begins in its half; the first then reads on
// past the half until it is back in the initial state, finding those that
// began in its half and end in the other (from there on it would be in the
// second machine's state). An occurrence found by both is handled twice,
// which changes nothing.
func (r *Rules) scan(t string, st *ruleState) bool {
	sc := r.sc
	delta, class, nclass := sc.delta, &sc.class, sc.nclass
	half := len(t) / 2
	a, b := t[:half], t[half:]
	s1, s2 := uint32(0), uint32(0)
	for i := 0; i < len(a); i++ {
		x1 := delta[s1+uint32(class[a[i]])]
		x2 := delta[s2+uint32(class[b[i]])]
		s1, s2 = x1&^outBit, x2&^outBit
		if (x1|x2)&outBit == 0 {
			continue
		}
		if x1&outBit != 0 {
			r.found(t, sc.out[s1/nclass], i+1, st)
		}
		if x2&outBit != 0 {
			r.found(t, sc.out[s2/nclass], half+i+1, st)
		}
		if st.n == len(r.cats) {
			return false
		}
	}
	// The second machine's last byte when len(t) is odd, then the first
	// machine's run into the second half.
	for i := len(a); i < len(b); i++ {
		x := delta[s2+uint32(class[b[i]])]
		if s2 = x &^ outBit; x&outBit != 0 {
			r.found(t, sc.out[s2/nclass], half+i+1, st)
		}
	}
	for i := half; i < len(t) && s1 != 0; i++ {
		x := delta[s1+uint32(class[t[i]])]
		if s1 = x &^ outBit; x&outBit != 0 {
			r.found(t, sc.out[s1/nclass], i+1, st)
		}
	}
	return st.n < len(r.cats)
}

// found handles the occurrences of scanner keys ids that end at end in t.
func (r *Rules) found(t string, ids []int32, end int, st *ruleState) {
	for _, id := range ids {
		r.found1(t, id, end, st)
	}
}

func (r *Rules) found1(t string, id int32, end int, st *ruleState) {
	if int(id) < len(r.terms) {
		tm := r.terms[id]
		if st.flagged[tm.cat] {
			return
		}
		start := r.sc.start(t, id, end)
		if start > 0 {
			if prev, _ := utf8.DecodeLastRuneInString(t[:start]); joins(prev, tm.first) {
				return
			}
		}
		if end < len(t) {
			if next, _ := utf8.DecodeRuneInString(t[end:]); joins(tm.last, next) {
				return
			}
		}
		st.flag(tm.cat)
		return
	}
	start := int32(end - len(r.sc.keys[id]))
	for _, pi := range r.litPats[int(id)-len(r.terms)] {
		if st.flagged[r.pats[pi].cat] {
			continue
		}
		st.seen[pi] = true
		if len(st.hits[pi]) < maxHits {
			st.hits[pi] = append(st.hits[pi], start)
		} else {
			st.over[pi] = true
		}
	}
}

// matchHits reports whether p matches in one of the runs of matchable bytes
// that hold the given offsets of literals it needs: every match holds one.
func (p *pattern) matchHits(s string, hits []int32) bool {
	lo, hi := 0, 0 // the run last tried
	for _, h := range hits {
		if i := int(h); i < lo || i >= hi {
			var ok bool
			if ok, lo, hi = p.matchAt(s, i); ok {
				return true
			}
		}
	}
	return false
}
