package jsonscan

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestUnquote(t *testing.T) {
	for _, raw := range []string{
		`""`, `"plain"`, `"a\"b"`, `"tab\there\n"`, `"\\\/\b\f\r"`, `"caf\u00e9"`,
		`"\ud83d\ude00 pair"`, `"\ud83d lone half"`, `"mixed \n and \u0041"`, `"escaped backslash then u: \\u0041"`, `"ünïcode"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("test literal %s: %v", raw, err)
		}
		if got := Unquote(raw); got != want {
			t.Errorf("Unquote(%s) = %q, want %q", raw, got, want)
		}
		if got := Unquote([]byte(raw)); got != want {
			t.Errorf("Unquote([]byte(%s)) = %q, want %q", raw, got, want)
		}
	}
}

func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"a"`, `"a\nb"`, `"\u00e9"`, `"\"\\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var want string
		if !utf8.ValidString(raw) || len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' || json.Unmarshal([]byte(raw), &want) != nil {
			return // only valid string literals of valid UTF-8 (see Unquote)
		}
		if got := Unquote(raw); got != want {
			t.Errorf("Unquote(%q) = %q, encoding/json reads %q", raw, got, want)
		}
	})
}
