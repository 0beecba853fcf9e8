package guard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/chatgw/gateway/guard"
)

// The rules classifier against a plain reference: every term looked for at
// every place of the normalised text, every pattern run on the whole
// normalised text. Random texts from small pieces make matches, near misses
// and long texts (the scanner's two halves, more literal places than it keeps)
// frequent, in ASCII and in the normalising path.

var refTerms = []string{"ab", "a b", "b-a", "c", "ba", "é", "ab1", "-a", "b-", "a_b", "ｂa", "c a"}

var refPatterns = []string{
	`(?i)a\s+b`, `\bab\b`, `^b`, `(?m)^c`, `b$`, `\d@`, `a.c`, `[ab]{3}`, `(?i)éb`, `-\bb`,
	`\Bc`, `(?i)B-A`, `ab|ba\d`, `x+y?c`, `a\nb`, `(?s)a.b`, `c\z`, `\Ab`, `(?i)\bba+\b`,
	`[^ab\s]{4}`, `é\b`, `(ab){3}`, `\d{2,}`,
}

var refRegexps = func() []*regexp.Regexp {
	var res []*regexp.Regexp
	for _, p := range refPatterns {
		res = append(res, regexp.MustCompile(p))
	}
	return res
}()

var refPieces = []string{
	"a", "b", "c", "ab", "ba", " ", "  ", "\n", "\t", "-", "1", "2", "@", ".", "é", "e\u0301",
	"ｂ", "A", "B", "\u200b", "_", "x", "y", "\u00a0",
}

func refRules(t testing.TB) *guard.Rules {
	cats := map[string]map[string][]string{}
	for i, term := range refTerms {
		cats[fmt.Sprintf("t%02d", i)] = map[string][]string{"terms": {term}}
	}
	for i, p := range refPatterns {
		cats[fmt.Sprintf("p%02d", i)] = map[string][]string{"patterns": {p}}
	}
	data, err := json.Marshal(map[string]any{"categories": cats})
	if err != nil {
		t.Fatal(err)
	}
	return mustParse(t, string(data))
}

// refFlagged returns the categories refRules should flag in text.
func refFlagged(text string) []string {
	pat := strings.ReplaceAll(norm.NFKC.String(text), "\u200b", "")
	fold := func(s string) string { return strings.Join(strings.Fields(cases.Fold().String(s)), " ") }
	term := fold(pat)
	word := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) }
	var got []string
	for i, k := range refTerms {
		k = fold(norm.NFKC.String(k))
		first, _ := utf8.DecodeRuneInString(k)
		last, _ := utf8.DecodeLastRuneInString(k)
		for at := 0; at+len(k) <= len(term); at++ {
			if !strings.HasPrefix(term[at:], k) {
				continue
			}
			prev, _ := utf8.DecodeLastRuneInString(term[:at])
			next, _ := utf8.DecodeRuneInString(term[at+len(k):])
			if (at == 0 || !word(prev) || !word(first)) && (at+len(k) == len(term) || !word(next) || !word(last)) {
				got = append(got, fmt.Sprintf("t%02d", i))
				break
			}
		}
	}
	for i, re := range refRegexps {
		if re.MatchString(pat) {
			got = append(got, fmt.Sprintf("p%02d", i))
		}
	}
	slices.Sort(got)
	return got
}

func TestRulesMatchReference(t *testing.T) {
	r := refRules(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 4000 {
		size := rng.IntN(30)
		switch {
		case n%1000 == 0:
			size = 4000 // more places of a literal than the scanner keeps
		case n%20 == 0:
			size = 100 + rng.IntN(400)
		}
		var b strings.Builder
		for range size {
			b.WriteString(refPieces[rng.IntN(len(refPieces))])
		}
		text := b.String()
		v, err := r.Classify(context.Background(), guard.Input{Texts: []string{text}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range v.Categories {
			got = append(got, c.Name)
		}
		if diff := cmp.Diff(refFlagged(text), got); diff != "" {
			t.Fatalf("Classify(%q) mismatch (-reference +got):\n%s", text, diff)
		}
	}
}
