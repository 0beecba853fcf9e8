package redact

import "strings"

// keyBefore returns the member name that ends just before s[i], a ':' or
// '=': letters, digits, '_', '-' and '.', possibly quoted ("name", 'name',
// or \"name\" inside a JSON string), possibly followed by blanks. quoted
// reports the quotes.
func keyBefore(s string, i int) (name string, quoted bool) {
	j := skipSpaceBack(s, i-1)
	if j >= 0 && (s[j] == '"' || s[j] == '\'') {
		quoted = true
		j--
		if j >= 0 && s[j] == '\\' {
			j--
		}
	}
	end := j + 1
	for j >= 0 && isKeyChar(s[j]) {
		j--
	}
	return s[j+1 : end], quoted
}

// sensitive reports whether a member of this name holds a secret or
// content, by its last part. A secret name (after '_', '-' or '.': x-api-key,
// confirm_token) counts in any form; a content name (after '_' or '.':
// system_prompt, error.message) only in a member, a quoted name or a name=
// pair, because in plain text "name: value" is as often the gateway's own
// words (a router alias such as embed-text:v1.5) as a member.
func sensitive(name string, member bool) bool {
	if name == "" {
		return false
	}
	if oneOf(name[strings.LastIndexAny(name, "_-.")+1:],
		"authorization", "key", "apikey", "token", "secret", "password", "cookie") {
		return true
	}
	return member && oneOf(name[strings.LastIndexAny(name, "_.")+1:],
		"content", "text", "arguments", "input", "prompt", "messages", "message", "value", "instructions")
}

// oneOf reports whether s is one of words, ignoring case.
func oneOf(s string, words ...string) bool {
	for _, w := range words {
		if strings.EqualFold(s, w) {
			return true
		}
	}
	return false
}

// valueSpan returns where the value starting at s[j] lies: inside the quotes
// of a string, the whole of an object or array, or the bare text up to the
// next delimiter. from == to when there is nothing to redact.
func valueSpan(s string, j int) (from, to int) {
	if j >= len(s) {
		return j, j
	}
	switch c := s[j]; {
	case c == '"' || c == '\'':
		return j + 1, closeQuote(s, j+1, c)
	case c == '\\' && j+1 < len(s) && s[j+1] == '"':
		return j + 2, closeEscapedQuote(s, j+2)
	case c == '{' || c == '[':
		return j, closeBracket(s, j)
	}
	to = j
	for to < len(s) && strings.IndexByte("\n\r\"',;&}]", s[to]) < 0 {
		to++
	}
	for to > j && s[to-1] == ' ' {
		to--
	}
	return j, to
}

// closeQuote returns the index of the quote q that ends the string whose
// text starts at s[k], or len(s) when it does not end.
func closeQuote(s string, k int, q byte) int {
	for ; k < len(s); k++ {
		switch s[k] {
		case '\\':
			k++
		case q:
			return k
		}
	}
	return len(s)
}

// closeEscapedQuote returns the index of the \" that ends a JSON string
// written inside another JSON string (\"...\"), whose text starts at s[k],
// or len(s). Inside it an escaped quote is \\\" and an escaped backslash
// \\\\: a run of backslashes before a quote ends the string when its length
// is 1 modulo 4.
func closeEscapedQuote(s string, k int) int {
	for k < len(s) {
		if s[k] != '\\' {
			k++
			continue
		}
		r := 0
		for k+r < len(s) && s[k+r] == '\\' {
			r++
		}
		if k+r < len(s) && s[k+r] == '"' && r%4 == 1 {
			return k + r - 1
		}
		k += r + 1
	}
	return len(s)
}

// closeBracket returns the index just after the bracket that closes the one
// at s[j], skipping strings, or len(s) when it is not closed.
func closeBracket(s string, j int) int {
	depth := 0
	for k := j; k < len(s); k++ {
		switch s[k] {
		case '"':
			k = closeQuote(s, k+1, '"')
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return k + 1
			}
		}
	}
	return len(s)
}

// tokenEnd returns the index just after the bearer token starting at s[k]:
// a bearer token holds no blank, quote or separator.
func tokenEnd(s string, k int) int {
	for k < len(s) && strings.IndexByte(" \t\r\n\"'\\,;", s[k]) < 0 {
		k++
	}
	return k
}

// keyShaped returns the length of the API key at the start of s, 0 when s
// does not start with one: sk-, pk-, rk-, gsk-, xai- (or _) and at least 8
// letters, digits, '-' or '_' (the providers' key shapes), or a JWT (eyJ and
// at least 17 base64url characters or dots).
func keyShaped(s string) int {
	if len(s) < 9 || strings.IndexByte("sprgxe", s[0]) < 0 {
		return 0
	}
	if strings.HasPrefix(s, "eyJ") {
		n := 3
		for n < len(s) && (isLetter(s[n]) || isDigit(s[n]) || s[n] == '-' || s[n] == '_' || s[n] == '.') {
			n++
		}
		if n >= 20 {
			return n
		}
		return 0
	}
	for _, p := range [...]string{"sk", "pk", "rk", "gsk", "xai"} {
		if len(s) <= len(p) || s[:len(p)] != p || (s[len(p)] != '-' && s[len(p)] != '_') {
			continue
		}
		n := len(p) + 1
		for n < len(s) && (isLetter(s[n]) || isDigit(s[n]) || s[n] == '-' || s[n] == '_') {
			n++
		}
		if n-len(p)-1 >= 8 {
			return n
		}
	}
	return 0
}

// wordStart reports whether s[i] starts a word: s[i-1] is no letter, digit
// or '_'.
func wordStart(s string, i int) bool {
	return i == 0 || !(isLetter(s[i-1]) || isDigit(s[i-1]) || s[i-1] == '_')
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func skipSpace(s string, k int) int {
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	return k
}

func skipSpaceBack(s string, k int) int {
	for k >= 0 && (s[k] == ' ' || s[k] == '\t') {
		k--
	}
	return k
}

func isKeyChar(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_' || c == '-' || c == '.'
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
