package guard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/guard"
)

// mustParse compiles a rules file or fails the test.
func mustParse(t testing.TB, data string) *guard.Rules {
	t.Helper()
	r, err := guard.ParseRules([]byte(data))
	if err != nil {
		t.Fatalf("ParseRules: %v", err)
	}
	return r
}

// classify returns the Param of r's verdict on texts.
func classify(t testing.TB, c guard.Classifier, texts ...string) string {
	t.Helper()
	v, err := c.Classify(context.Background(), guard.Input{Texts: texts})
	if err != nil {
		t.Fatalf("Classify(%q): %v", texts, err)
	}
	return v.Param()
}

const termRules = `{"categories": {
  "violence":  {"terms": ["massacre", "kill them all", "tue\u0301 les", "ﬁre them"]},
  "Harassment": {"terms": ["ass", "@everyone"]},
  "self-harm": {"terms": ["kill myself", "自杀"]},
  "illicit":   {"terms": ["Straße", "c++ exploit"]}
}}`

func TestRulesTerms(t *testing.T) {
	r := mustParse(t, termRules)
	tests := []struct {
		name  string
		texts []string
		want  string
	}{
		{"word", []string{"the massacre began"}, "violence"},
		{"word at the edges", []string{"massacre"}, "violence"},
		{"word before punctuation", []string{"a massacre."}, "violence"},
		{"inside a longer word", []string{"massacres and premassacre"}, ""},
		{"substring of a word", []string{"a class act, passing"}, ""},
		{"short word alone", []string{"what an ass!"}, "harassment"},
		{"underscore joins words", []string{"ass_hat"}, ""},
		{"digit joins words", []string{"ass2"}, ""},
		{"upper case", []string{"MASSACRE"}, "violence"},
		{"mixed case", []string{"MaSsAcRe"}, "violence"},
		{"phrase", []string{"I will kill them all"}, "violence"},
		{"phrase across a line break and spaces", []string{"kill\n  them\t\tall"}, "violence"},
		{"phrase with a no-break space", []string{"kill\u00a0them all"}, "violence"},
		{"phrase with an ideographic space", []string{"kill\u3000them all"}, "violence"},
		{"phrase with a line separator", []string{"kill\u2028them all"}, "violence"},
		{"phrase broken by punctuation", []string{"kill them, all"}, ""},
		{"phrase split over two texts", []string{"kill them", "all"}, ""},
		{"full-width letters", []string{"ｍａｓｓａｃｒｅ"}, "violence"},
		{"full-width capitals", []string{"ＭＡＳＳＡＣＲＥ!"}, "violence"},
		{"zero-width space inside", []string{"mas\u200bsacre"}, "violence"},
		{"soft hyphen inside", []string{"mas\u00adsacre"}, "violence"},
		{"combining mark after: another word", []string{"massacre\u0301"}, ""},
		{"decomposed text, composed term", []string{"il a tue\u0301 les"}, "violence"},
		{"composed text, decomposed term", []string{"il a tué les"}, "violence"},
		{"ligature in the text", []string{"ﬁre them"}, "violence"},
		{"ligature in the term", []string{"FIRE THEM"}, "violence"},
		{"case folding beyond lowercase", []string{"STRASSE"}, "illicit"},
		{"case folding of the term's own letter", []string{"strasse"}, "illicit"},
		{"term ending in punctuation", []string{"a c++ exploit!"}, "illicit"},
		{"term starting with punctuation", []string{"hi x@everyone"}, "harassment"},
		{"term starting with punctuation, word after", []string{"@everyones"}, ""},
		{"unspaced script inside a run", []string{"我想自杀了"}, "self-harm"},
		{"several categories", []string{"kill myself", "massacre", "ass"}, "harassment,self-harm,violence"},
		{"clean", []string{"a perfectly ordinary request", ""}, ""},
		{"nothing", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(t, r, tt.texts...); got != tt.want {
				t.Errorf("Classify(%q) = %q, want %q", tt.texts, got, tt.want)
			}
		})
	}
}

func TestRulesVerdict(t *testing.T) {
	r := mustParse(t, termRules)
	v, err := r.Classify(context.Background(), guard.Input{Texts: []string{"massacre, ass"}, Images: []string{"https://x/y.png"}})
	if err != nil {
		t.Fatal(err)
	}
	want := guard.Verdict{Categories: []guard.Category{
		{Name: "harassment", Score: 1, Native: "Harassment", Classifier: "rules"},
		{Name: "violence", Score: 1, Native: "violence", Classifier: "rules"},
	}}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("Classify mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"harassment", "illicit", "self-harm", "violence"}, r.Categories()); diff != "" {
		t.Errorf("Categories mismatch (-want +got):\n%s", diff)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Classify(ctx, guard.Input{Texts: []string{"x"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Classify on a cancelled context: %v, want context.Canceled", err)
	}
}

func TestRulesPatterns(t *testing.T) {
	r := mustParse(t, `{"categories": {
	  "self-harm": {"patterns": ["(?i)\\b(end|take)\\s+my\\s+(own\\s+)?life\\b"]},
	  "privacy":   {"patterns": ["\\b\\d{3}-\\d{2}-\\d{4}\\b", "(?m)^SECRET:"]},
	  "illicit":   {"patterns": ["Bomb", "wea\\x{0070}on$"]},
	  "hate":      {"patterns": ["(?i)h[a4@]te\\s*(them|you)"]}
	}}`)
	tests := []struct {
		name string
		text string
		want string
	}{
		{"case-insensitive pattern", "I want to END MY   life.", "self-harm"},
		{"optional group", "take my own life", "self-harm"},
		{"word boundary holds", "extend my life", ""},
		{"word boundary at the end", "end my lifetime", ""},
		{"digits", "ssn 123-45-6789 ok", "privacy"},
		{"too many digits", "ssn 123-45-67890", ""},
		{"full-width digits are NFKC digits", "１２３-４５-６７８９", "privacy"},
		{"multi-line anchor", "hello\nSECRET: x", "privacy"},
		{"multi-line anchor not at a line start", "hello SECRET: x", ""},
		{"case-sensitive pattern", "a Bomb", "illicit"},
		{"case-sensitive pattern, other case", "a bomb", ""},
		{"full-width letters, case kept", "a Ｂｏｍｂ", "illicit"},
		{"end of text", "a weapon", "illicit"},
		{"not the end of text", "a weapon here", ""},
		{"class of look-alikes", "I h4te you", "hate"},
		{"zero-width space removed before patterns", "I h\u200bate them", "hate"},
		{"clean", "nothing to see", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(t, r, tt.text); got != tt.want {
				t.Errorf("Classify(%q) = %q, want %q", tt.text, got, tt.want)
			}
			// The same far into a long text, past the scanner's halves and
			// with non-ASCII text before (the normalising path).
			long := strings.Repeat("filler text, nothing else. ", 200) + tt.text
			if got := classify(t, r, long); got != tt.want {
				t.Errorf("Classify(long text ending in %q) = %q, want %q", tt.text, got, tt.want)
			}
			if got := classify(t, r, "é "+long); got != tt.want {
				t.Errorf("Classify(long non-ASCII text ending in %q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// Many places of a literal a pattern needs: more than the scanner keeps.
func TestRulesPatternManyLiterals(t *testing.T) {
	r := mustParse(t, `{"categories": {"self-harm": {"patterns": ["(?i)\\bend\\s+my\\s+life\\b"]}}}`)
	text := strings.Repeat("my life, ", 1000)
	if got := classify(t, r, text); got != "" {
		t.Errorf("Classify(many literals) = %q, want clean", got)
	}
	if got := classify(t, r, text+"end my life"); got != "self-harm" {
		t.Errorf("Classify(many literals, then a match) = %q, want self-harm", got)
	}
}

// writeFile writes data to path or fails the test.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestParseRulesErrors(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		line     int
		col      int
		path     string
		contains string
	}{
		{"empty file", "", 1, 1, "", "empty file"},
		{"white space only", "  \n ", 1, 1, "", "empty file"},
		{"not an object", `["x"]`, 1, 1, "", "want a JSON object"},
		{"syntax error", "{\"categories\": {\n  \"a\": {\"terms\": [\"x\" \"y\"]}}}", 2, 22, "", "invalid JSON"},
		{"cut short", "{\"categories\": {\n", 2, 1, "", "unexpected end"},
		{"data after the object", `{"categories": {}} {}`, 1, 20, "", "data after"},
		{"missing categories", `{}`, 1, 1, "", "missing field categories"},
		{"unknown top-level field", "{\"categories\": {},\n \"version\": 2}", 2, 2, "", `unknown field "version"`},
		{"categories twice", `{"categories": {}, "categories": {}}`, 1, 20, "", "given twice"},
		{"categories not an object", `{"categories": []}`, 1, 16, "categories", "want an object"},
		{"empty category name", `{"categories": {"": {"terms": ["x"]}}}`, 1, 17, `categories[""]`, "empty category name"},
		{"blank category name", `{"categories": {"  ": {}}}`, 1, 17, `categories["  "]`, "empty category name"},
		{"comma in a category name", `{"categories": {"a,b": {}}}`, 1, 17, `categories["a,b"]`, "comma"},
		{"category twice, other case", "{\"categories\": {\"hate\": {},\n \"Hate\": {}}}", 2, 2, `categories["Hate"]`, "given twice (first at line 1)"},
		{"category not an object", `{"categories": {"a": ["x"]}}`, 1, 22, `categories["a"]`, "want an object"},
		{"unknown category field", `{"categories": {"a": {"words": []}}}`, 1, 23, `categories["a"]`, `unknown field "words"`},
		{"terms twice", `{"categories": {"a": {"terms": [], "terms": []}}}`, 1, 36, `categories["a"]`, "given twice"},
		{"terms not an array", `{"categories": {"a": {"terms": "x"}}}`, 1, 32, `categories["a"].terms`, "want an array"},
		{"term not a string", `{"categories": {"a": {"terms": ["x", 3]}}}`, 1, 38, `categories["a"].terms[1]`, "want a string"},
		{"empty term", "{\"categories\": {\"a\": {\"terms\": [\"x\",\n  \"\"]}}}", 2, 3, `categories["a"].terms[1]`, "empty term"},
		{"blank term", `{"categories": {"a": {"terms": [" \t "]}}}`, 1, 33, `categories["a"].terms[0]`, "empty term"},
		{"invisible term", `{"categories": {"a": {"terms": ["\u200b"]}}}`, 1, 33, `categories["a"].terms[0]`, "empty term"},
		{"bad pattern", "{\"categories\": {\n \"a\": {\"patterns\": [\"ok\", \"(x\"]}}}", 2, 27, `categories["a"].patterns[1]`, "missing closing )"},
		{"pattern not RE2", `{"categories": {"a": {"patterns": ["(?=x)"]}}}`, 1, 36, `categories["a"].patterns[0]`, "invalid pattern"},
		{"pattern matching nothing", `{"categories": {"a": {"patterns": ["x*"]}}}`, 1, 36, `categories["a"].patterns[0]`, "empty string"},
		{"pattern of assertions only", `{"categories": {"a": {"patterns": ["^\\b$"]}}}`, 1, 36, `categories["a"].patterns[0]`, "empty string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := guard.ParseRules([]byte(tt.data))
			re, ok := errors.AsType[*guard.RulesError](err)
			if !ok {
				t.Fatalf("ParseRules: %v, want a *RulesError", err)
			}
			got := [3]any{re.Line, re.Column, re.Path}
			if want := [3]any{tt.line, tt.col, tt.path}; got != want {
				t.Errorf("ParseRules: line, column, path = %v, want %v (%v)", got, want, err)
			}
			if !strings.Contains(re.Msg, tt.contains) {
				t.Errorf("ParseRules: %v, want it to say %q", err, tt.contains)
			}
		})
	}
}

func TestParseRulesAccepts(t *testing.T) {
	for _, data := range []string{
		`{"categories": {}}`,
		`{"categories": {"a": {}}}`,
		`{"categories": {"a": {"terms": null, "patterns": null}}}`,
		`{"categories": {"a": {"terms": [], "patterns": []}}}`,
		` {"categories": {"a": {"terms": ["x"]}}}` + "\n",
		"\ufeff" + `{"categories": {}}`,
	} {
		if _, err := guard.ParseRules([]byte(data)); err != nil {
			t.Errorf("ParseRules(%s): %v", data, err)
		}
	}
}

func TestLoadRules(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	if _, err := guard.LoadRules(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("LoadRules(missing file) = %v, want an error naming it", err)
	}
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, "{\"categories\": {\n \"a\": {\"patterns\": [\"(x\"]}}}")
	_, err := guard.LoadRules(bad)
	if re, ok := errors.AsType[*guard.RulesError](err); !ok || re.File != bad {
		t.Fatalf("LoadRules(bad file) = %v, want a *RulesError with File %s", err, bad)
	}
	want := "guard: rules file " + bad + `:2:21: categories["a"].patterns[0]: invalid pattern: `
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("LoadRules(bad file) = %q, want it to begin %q", err, want)
	}
	good := filepath.Join(dir, "rules.json")
	writeFile(t, good, termRules)
	r, err := guard.LoadRules(good)
	if err != nil {
		t.Fatal(err)
	}
	if got := classify(t, r, "massacre"); got != "violence" {
		t.Errorf("Classify = %q, want violence", got)
	}
}

func TestRulesFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	writeFile(t, path, `{"categories": {"violence": {"terms": ["massacre"]}}}`)
	f, err := guard.NewRulesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Path() != path {
		t.Errorf("Path() = %s, want %s", f.Path(), path)
	}
	if got := classify(t, f, "massacre"); got != "violence" {
		t.Errorf("Classify = %q, want violence", got)
	}
	old := f.Rules()

	// A bad file keeps the old rules.
	writeFile(t, path, `{"categories": {"violence": {"terms": ["bloodbath"], "patterns": ["(x"]}}}`)
	if err := f.Reload(); !errors.As(err, new(*guard.RulesError)) {
		t.Fatalf("Reload(bad file) = %v, want a *RulesError", err)
	}
	if f.Rules() != old {
		t.Error("Reload(bad file) replaced the rules")
	}
	if got := classify(t, f, "massacre bloodbath"); got != "violence" {
		t.Errorf("Classify after a bad reload = %q, want the old rules' violence", got)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := f.Reload(); err == nil {
		t.Fatal("Reload(missing file) succeeded")
	}

	// A good file replaces them, while classifications go on.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, text := range []string{"massacre", "ＭＡＳＳＡＣＲＥ é"} {
					if got := classify(t, f, text); got != "violence" && got != "" {
						t.Errorf("Classify during reloads = %q", got)
					}
				}
			}
		})
	}
	for _, terms := range []string{`["bloodbath"]`, `["massacre"]`, `["bloodbath"]`} {
		writeFile(t, path, `{"categories": {"violence": {"terms": `+terms+`}}}`)
		if err := f.Reload(); err != nil {
			t.Fatalf("Reload: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	if got := classify(t, f, "massacre"); got != "" {
		t.Errorf("Classify(old term) after reload = %q, want clean", got)
	}
	if got := classify(t, f, "bloodbath"); got != "violence" {
		t.Errorf("Classify(new term) after reload = %q, want violence", got)
	}
	if old == f.Rules() {
		t.Error("Rules() unchanged after a good reload")
	}
	if _, err := guard.NewRulesFile(path + ".missing"); err == nil {
		t.Error("NewRulesFile(missing file) succeeded")
	}
}

// Any bytes give rules or a *RulesError, never a panic.
func FuzzParseRules(f *testing.F) {
	f.Add([]byte(termRules))
	f.Add([]byte(`{"categories": {"a": {"terms": ["x"], "patterns": ["(?i)a\\s+b"]}}}`))
	f.Add([]byte(`{"categories": {"a": {"terms": [1]}}}`))
	f.Add([]byte(`{"categories": {"a": {"terms": ["x"]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := guard.ParseRules(data)
		if err != nil {
			if _, ok := errors.AsType[*guard.RulesError](err); !ok {
				t.Fatalf("ParseRules: %v is not a *RulesError", err)
			}
			return
		}
		classify(t, r, "a massacre, x y a b \u00e9", "")
	})
}
