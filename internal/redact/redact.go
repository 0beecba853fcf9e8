// Package redact decides what a log line may say of text that came from
// outside the gateway: an upstream's answer, a client's request, an error
// that quotes either.
//
// The first defence is structural and belongs to the callers: a log line
// holds only fields the gateway constructs (ids, codes, statuses, sizes,
// durations), and an upstream answer is logged as Body's summary, never as
// text. Quotes and Opaque serve the same end for an error whose own text
// quotes bytes from outside (net/http's and mime/multipart's parse errors):
// Quotes drops what is quoted, Opaque gives the error the gateway's words
// while keeping it for errors.Is and errors.As.
//
// String is the second line of defence, for the few places where free text
// still reaches a line (an error's cause): it removes bearer tokens, API keys
// and the values of members that carry secrets or message content. It
// recognises shapes, so it cannot know every secret; it must not be the
// reason a line is safe.
//
// None of them is for the path of a successful request: they are called
// when something failed and is about to be logged.
package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
)

// Redacted replaces what String removes.
const Redacted = "[redacted]"

// String returns s with bearer tokens, API-key-shaped words (sk-..., and the
// like) and the values of secret or content members replaced by Redacted. A
// member is a name followed by ':' or '=' (JSON, headers, query strings,
// name: value text). Secret names end in authorization, key, apikey, token,
// secret, password or cookie, in any of these forms; content names end in
// content, text, arguments, input, prompt, messages, message, value or
// instructions, and count only quoted (JSON) or before '='. A value is a
// JSON string, object or array, or else the text up to the next line end,
// quote, ',', ';', '&', '}' or ']'. Cut JSON (a string or bracket that never
// closes) is redacted to the end of s. s is returned as it is, without
// allocating, when nothing matches.
func String(s string) string {
	var out []byte // nil until something is redacted
	done := 0      // s[:done] is in out
	for i := 0; i < len(s); i++ {
		from, to := -1, -1
		switch c := s[i]; {
		case c == ':' || c == '=':
			if name, quoted := keyBefore(s, i); !sensitive(name, quoted || c == '=') {
				continue
			}
			from, to = valueSpan(s, skipSpace(s, i+1))
		case (c == 'b' || c == 'B') && wordStart(s, i) && hasPrefixFold(s[i:], "bearer"):
			j := i + len("bearer")
			if k := skipSpace(s, j); k > j {
				from, to = k, tokenEnd(s, k)
			}
		case wordStart(s, i):
			if n := keyShaped(s[i:]); n > 0 {
				from, to = i, i+n
			}
		}
		if from < 0 || to <= from {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(s)+len(Redacted))
		}
		out = append(out, s[done:from]...)
		out = append(out, Redacted...)
		done = to
		i = to - 1
	}
	if out == nil {
		return s
	}
	return string(append(out, s[done:]...))
}

// Error is String of err's text; "" for nil.
func Error(err error) string {
	if err == nil {
		return ""
	}
	return String(err.Error())
}

// Body describes an upstream answer body for a log line without any of its
// text: its length, the type and code of an OpenAI-style error object when
// they are short identifiers (or a number, for code), and the first 12 hex
// digits of its SHA-256, which tell two bodies apart and let an operator
// match one against a capture of the upstream's traffic:
//
//	183 bytes, error type=invalid_request_error code=invalid_api_key, sha256:5d41402abc4b
func Body(b []byte) string {
	sum := sha256.Sum256(b)
	out := make([]byte, 0, 96)
	out = strconv.AppendInt(out, int64(len(b)), 10)
	out = append(out, " bytes"...)
	if typ, code := errorFields(b); typ != "" || code != "" {
		out = append(out, ", error"...)
		if typ != "" {
			out = append(out, " type="...)
			out = append(out, typ...)
		}
		if code != "" {
			out = append(out, " code="...)
			out = append(out, code...)
		}
	}
	out = append(out, ", sha256:"...)
	out = hex.AppendEncode(out, sum[:6])
	return string(out)
}

// errorFields returns the type and code of b's error object, each "" unless
// it is an identifier (a number, for code).
func errorFields(b []byte) (typ, code string) {
	var env struct {
		Error struct {
			Type json.RawMessage `json:"type"`
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &env) != nil {
		return "", ""
	}
	return identifier(env.Error.Type, false), identifier(env.Error.Code, true)
}

// identifier returns raw, a JSON string, when it holds 1 to 48 letters,
// digits, '_', '.' or '-', starts with a letter and is not shaped like an
// API key; or raw itself when number is set and it is an integer of at most
// 6 digits. Anything else is "".
func identifier(raw json.RawMessage, number bool) string {
	if number && len(raw) > 0 && len(raw) <= 6 && strings.Trim(string(raw), "0123456789") == "" {
		return string(raw)
	}
	if len(raw) < 3 || len(raw) > 50 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return ""
	}
	s := string(raw[1 : len(raw)-1])
	if !isLetter(s[0]) || keyShaped(s) > 0 {
		return ""
	}
	for i := range len(s) {
		if c := s[i]; !isLetter(c) && !isDigit(c) && c != '_' && c != '.' && c != '-' {
			return ""
		}
	}
	return s
}

// Quotes returns s with the text of every double-quoted string replaced by
// "…". The standard library quotes the foreign bytes it reports in its errors
// (net/http's answers that are not HTTP, net/textproto's header lines,
// mime/multipart's part lines), so such an error's text through Quotes still
// says what went wrong but no longer holds what the other side sent. A quote
// that is not closed runs to the end of s. s is returned as it is, without
// allocating, when it holds no quote.
func Quotes(s string) string {
	i := strings.IndexByte(s, '"')
	if i < 0 {
		return s
	}
	out := make([]byte, 0, len(s))
	for i >= 0 {
		out = append(out, s[:i+1]...)
		out = append(out, "…"...)
		end := closeQuote(s, i+1, '"')
		if end >= len(s) {
			return string(out)
		}
		out = append(out, '"')
		s = s[end+1:]
		i = strings.IndexByte(s, '"')
	}
	return string(append(out, s...))
}

// Opaque returns an error that reads text and unwraps to err, for a cause
// whose own text quotes bytes from outside the gateway; nil for nil.
func Opaque(err error, text string) error {
	if err == nil {
		return nil
	}
	return &opaque{err: err, text: text}
}

type opaque struct {
	err  error
	text string
}

func (e *opaque) Error() string { return e.text }
func (e *opaque) Unwrap() error { return e.err }
