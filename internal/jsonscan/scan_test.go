package jsonscan_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chatgw/gateway/internal/jsonscan"
	"github.com/google/go-cmp/cmp"
)

// corpus is JSON text, valid or not, that the tests compare with
// encoding/json and the fuzz tests start from.
var corpus = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e10`, `1E-2`, `-12.5E+3`, `true`, `false`, `null`,
	` {"a" : [1, 2, {"b": null}]} `, "\t[\r\n]\n",
	`{"a":"\u00e9\n\t\"\\\/\b\f\r"}`, `"\ud83d\ude00"`, `"\ud83d"`, `"` + strings.Repeat("abcdefgh", 20) + `"`,
	`"é"`, "\"\xff\"", "\"\xe2\x82\"", `"\u0000"`, `"\uDEAD\uBEEF"`,
	`{`, `}`, `[`, `]`, `[1,]`, `[,1]`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{"a"}`, `{1:2}`, `{"a":1 "b":2}`,
	`01`, `-01`, `1.`, `.5`, `-`, `1e`, `1e+`, `+1`, `0x1`, `1.5.5`, `tru`, `nul`, `nulL`, `True`, `truex`,
	`"abc`, `"\x"`, `"\u12"`, `"\u12G4"`, `"\`, `"a\`,
	`"` + strings.Repeat("a", 13) + "\x01" + `"`, `"` + strings.Repeat("a", 17) + "\n" + `"`,
	`"` + strings.Repeat("b", 9) + `\` + `"`, `"` + strings.Repeat("c", 8) + `"` + `x`,
	`[1] [2]`, `{"a":1}x`, `1 2`, ``, ` `,
	strings.Repeat("[", 20) + strings.Repeat("]", 20),
	strings.Repeat("[", jsonscan.MaxDepth) + strings.Repeat("]", jsonscan.MaxDepth),
	strings.Repeat("[", jsonscan.MaxDepth+1) + strings.Repeat("]", jsonscan.MaxDepth+1),
	strings.Repeat(`{"a":`, jsonscan.MaxDepth) + "1" + strings.Repeat("}", jsonscan.MaxDepth),
	strings.Repeat(`{"a":`, jsonscan.MaxDepth+1) + "1" + strings.Repeat("}", jsonscan.MaxDepth+1),
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, in := range corpus {
		want := json.Valid([]byte(in))
		if got := jsonscan.Valid(in); got != want {
			t.Errorf("Valid(%.40q) = %v, want %v", in, got, want)
		}
		if got := jsonscan.Valid([]byte(in)); got != want {
			t.Errorf("Valid([]byte(%.40q)) = %v, want %v", in, got, want)
		}
	}
}

func TestString(t *testing.T) {
	long := strings.Repeat("é", 30)
	tests := []struct {
		in   string
		end  int
		info jsonscan.StringInfo
		err  error
	}{
		{`""`, 2, jsonscan.StringInfo{}, nil},
		{`"abc" tail`, 5, jsonscan.StringInfo{Len: 3}, nil},
		{`"line\nbreak \"q\""`, 19, jsonscan.StringInfo{Len: 14, Escaped: true}, nil},
		{`"\u00e9x"`, 9, jsonscan.StringInfo{Len: 3, Escaped: true, UnicodeEscaped: true}, nil},
		{`"\ud83d\ude00"`, 14, jsonscan.StringInfo{Len: 4, Escaped: true, UnicodeEscaped: true}, nil},
		{`"\u20ac\n\\"`, 12, jsonscan.StringInfo{Len: 5, Escaped: true, UnicodeEscaped: true}, nil},
		{`"` + long + `"`, 62, jsonscan.StringInfo{Len: 60, NonASCII: true}, nil},
		{"\"abcdefghij\xff\"", 13, jsonscan.StringInfo{Len: 11, NonASCII: true}, nil},
		{`"abc`, 4, jsonscan.StringInfo{}, jsonscan.ErrSyntax},
		{`"a\qb"`, 2, jsonscan.StringInfo{}, jsonscan.ErrSyntax},
		{`"a\u12x4"`, 2, jsonscan.StringInfo{}, jsonscan.ErrSyntax},
		{"\"abcdefghijk\tl\"", 12, jsonscan.StringInfo{}, jsonscan.ErrSyntax},
	}
	for _, tt := range tests {
		s := jsonscan.New(tt.in)
		end, info, err := s.String(0)
		if end != tt.end || !errors.Is(err, tt.err) {
			t.Errorf("String(%s) = %d, %v; want %d, %v", tt.in, end, err, tt.end, tt.err)
		}
		if diff := cmp.Diff(tt.info, info); diff != "" {
			t.Errorf("String(%s) info mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestNumber(t *testing.T) {
	tests := []struct {
		in  string
		end int
		err error
	}{
		{"0", 1, nil}, {"-0,", 2, nil}, {"120]", 3, nil}, {"1.25e-3}", 7, nil}, {"1E9", 3, nil},
		{"01", 1, nil}, // a number ends before the second digit; the caller finds the garbage
		{"-", 1, jsonscan.ErrSyntax}, {"1.", 2, jsonscan.ErrSyntax}, {"1e+", 3, jsonscan.ErrSyntax},
		{"+1", 0, jsonscan.ErrSyntax}, {".5", 0, jsonscan.ErrSyntax},
	}
	for _, tt := range tests {
		s := jsonscan.New([]byte(tt.in))
		if end, err := s.Number(0); end != tt.end || !errors.Is(err, tt.err) {
			t.Errorf("Number(%s) = %d, %v; want %d, %v", tt.in, end, err, tt.end, tt.err)
		}
	}
}

// walk lists what Object and Array hand to their callbacks, descending into
// every object and array.
func walk(s *jsonscan.Scanner[string], src string, i int, out *[]string) (int, error) {
	switch src[i] {
	case '{':
		return s.Object(i, func(key jsonscan.Key, v int) (int, error) {
			k := "key " + src[key.Start:key.End]
			if key.Escaped {
				k += " escaped"
			}
			*out = append(*out, k)
			return walk(s, src, v, out)
		})
	case '[':
		return s.Array(i, func(n, v int) (int, error) {
			*out = append(*out, "elem "+string(rune('0'+n)))
			return walk(s, src, v, out)
		})
	}
	end, err := s.Value(i)
	*out = append(*out, "value "+src[i:end])
	return end, err
}

func TestWalk(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  error
	}{
		{`{}`, nil, nil},
		{` [ ] `, nil, nil},
		{`{"a" : 1 , "b\n":[true, "x"] }`, []string{"key \"a\"", "value 1", "key \"b\\n\" escaped", "elem 0", "value true", "elem 1", "value \"x\""}, nil},
		{`[{"k":null}, -2.5]`, []string{"elem 0", "key \"k\"", "value null", "elem 1", "value -2.5"}, nil},
		{`{"a":`, nil, jsonscan.ErrSyntax}, // no callback for a value past the end
		{`[1,`, []string{"elem 0", "value 1"}, jsonscan.ErrSyntax},
		{`{"a":1,}`, []string{"key \"a\"", "value 1"}, jsonscan.ErrSyntax},
		{`{"a" 1}`, nil, jsonscan.ErrSyntax},
		{`[1 2]`, []string{"elem 0", "value 1"}, jsonscan.ErrSyntax},
	}
	for _, tt := range tests {
		var got []string
		s := jsonscan.New(tt.in)
		i := s.Space(0)
		end, err := walk(&s, tt.in, i, &got)
		if !errors.Is(err, tt.err) {
			t.Errorf("walk(%s) error = %v, want %v", tt.in, err, tt.err)
		}
		if err == nil && s.Space(end) != len(tt.in) {
			t.Errorf("walk(%s) ended at %d, want the end", tt.in, end)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("walk(%s) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestCallbackError(t *testing.T) {
	stop := errors.New("stop")
	s := jsonscan.New(`{"a":1,"b":2}`)
	end, err := s.Object(0, func(key jsonscan.Key, v int) (int, error) {
		if key.Start == 7 {
			return v, stop
		}
		return s.Value(v)
	})
	if end != 11 || err != stop {
		t.Errorf("Object = %d, %v; want 11, %v", end, err, stop)
	}
}

func TestReset(t *testing.T) {
	var s jsonscan.Scanner[string]
	s.Reset(strings.Repeat("[", jsonscan.MaxDepth+1)) // fails deep inside
	if _, err := s.Value(0); err == nil {
		t.Fatal("Value of too deep an array: no error")
	}
	s.Reset(`[[1]]`)
	if end, err := s.Value(0); end != 5 || err != nil {
		t.Errorf("Value after Reset = %d, %v; want 5, nil", end, err)
	}
}

func TestValidDoesNotAllocate(t *testing.T) {
	in := []byte(` {"a":[1,-2.5e3,true,false,null,"x\n\u00e9` + strings.Repeat("y", 40) + `"],"b":{}} `)
	if n := testing.AllocsPerRun(100, func() { jsonscan.Valid(in) }); n != 0 {
		t.Errorf("Valid allocates %v times, want 0", n)
	}
}

func FuzzValid(f *testing.F) {
	for _, in := range corpus {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		want := json.Valid([]byte(in))
		if got := jsonscan.Valid(in); got != want {
			t.Errorf("Valid(%q) = %v, want %v", in, got, want)
		}
		if got := jsonscan.Valid([]byte(in)); got != want {
			t.Errorf("Valid([]byte(%q)) = %v, want %v", in, got, want)
		}
	})
}

// FuzzString checks String against json.Unmarshal into a string: the same
// literals accepted, and a StringInfo that tells the truth about them.
func FuzzString(f *testing.F) {
	for _, in := range corpus {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if in == "" || in[0] != '"' {
			return
		}
		s := jsonscan.New(in)
		end, info, err := s.String(0)
		var text string
		jsonErr := json.Unmarshal([]byte(in), &text)
		if ok := err == nil && s.Space(end) == len(in); ok != (jsonErr == nil) {
			t.Fatalf("String(%q) = %d, %v; json.Unmarshal: %v", in, end, err, jsonErr)
		}
		if jsonErr != nil {
			return
		}
		lit := in[:end]
		if info.Escaped != strings.Contains(lit, `\`) {
			t.Errorf("String(%q).Escaped = %v", in, info.Escaped)
		}
		if info.NonASCII != strings.ContainsFunc(lit, func(r rune) bool { return r >= utf8.RuneSelf }) {
			t.Errorf("String(%q).NonASCII = %v", in, info.NonASCII)
		}
		if utf8.ValidString(lit) && !strings.ContainsRune(text, utf8.RuneError) && info.Len != len(text) {
			t.Errorf("String(%q).Len = %d, want %d", in, info.Len, len(text))
		}
		if !info.UnicodeEscaped && utf8.ValidString(lit) && unescape(lit) != text {
			t.Errorf("String(%q): without \\u escapes it decodes to %q, json.Unmarshal to %q", in, unescape(lit), text)
		}
	})
}

// unescape decodes a literal without \u escapes, as a caller that trusts
// StringInfo.UnicodeEscaped would.
func unescape(lit string) string {
	r := strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\/`, `/`, `\b`, "\b", `\f`, "\f", `\n`, "\n", `\r`, "\r", `\t`, "\t")
	return r.Replace(lit[1 : len(lit)-1])
}
