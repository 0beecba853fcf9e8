package guard

import (
	"regexp/syntax"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The literals a pattern needs, which decide whether it runs at all.
func TestNeededLiterals(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`massacre`, []string{"massacre"}},
		{`(?i)MASSACRE`, []string{"massacre"}},
		{`(?i)\bhow\s+to\s+(make|build)\s+a\s+bomb`, []string{"bomb"}}, // the longest shortest literal
		{`(?i)\bhow\s+to\s+(make|build)`, []string{"build", "make"}},
		{`(?i)\bk[i1!]ll\s+(your|ur)self\b`, []string{"urself", "yourself"}},
		{`(?i)\bk[i1!]ll\b`, []string{"k!ll", "k1ll", "kill"}},
		{`\b\d{3}-\d{2}-\d{4}\b`, []string{"-"}},
		{`(?i)[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}`, []string{"@"}},
		{`(ab){3}`, []string{"ababab"}},
		{`ab?c`, []string{"abc", "ac"}},
		{`x+y`, []string{"x"}},
		{`a.c`, []string{"a"}},
		{`abc|d.f`, []string{"abc", "d"}},
		{`Straße`, []string{"stra"}}, // non-ASCII runes break literals
		{`ab\sc`, []string{"ab"}},    // so does white space
		{`(?i)é+b`, []string{"b"}},   //
		{`foo|.*bar|[0-9]`, nil},     // a branch that needs nothing
		{`[a-z]{5}`, nil},            // classes too large
		{`\d+`, nil},                 //
		{`a*b*c+`, []string{"c"}},    //
		{`(?:abc|abd)(?:efg|efh)`, []string{"abcefg", "abcefh", "abdefg", "abdefh"}},
	}
	for _, tt := range tests {
		re, err := syntax.Parse(tt.expr, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, needed(re.Simplify()).req); diff != "" {
			t.Errorf("needed(%s) mismatch (-want +got):\n%s", tt.expr, diff)
		}
	}
}

func TestPatternBytesAndLength(t *testing.T) {
	tests := []struct {
		expr     string
		minLen   int
		can      string // ASCII bytes that can be matched
		nonASCII bool
	}{
		{`ab`, 2, "ab", false},
		{`(?i)ab`, 2, "ABab", false},
		{`(?i)k`, 1, "Kk", true}, // the Kelvin sign
		{`[a-c]\d{2,3}`, 3, "0123456789abc", false},
		{`x|yz`, 1, "xyz", false},
		{`\bé`, 1, "", true},
	}
	for _, tt := range tests {
		p, _, err := compilePattern(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		var can []byte
		for b := range 128 {
			if p.can[b] {
				can = append(can, byte(b))
			}
		}
		if p.minLen != tt.minLen || string(can) != tt.can || p.can[0xC3] != tt.nonASCII {
			t.Errorf("compilePattern(%s): minLen %d, bytes %q, non-ASCII %v; want %d, %q, %v",
				tt.expr, p.minLen, can, p.can[0xC3], tt.minLen, tt.can, tt.nonASCII)
		}
	}
}
