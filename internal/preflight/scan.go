package preflight

import (
	"bytes"
	"errors"

	"github.com/chatgw/gateway/internal/jsonscan"
)

// errSyntax reports a body that is not valid JSON (RFC 8259).
var errSyntax = errors.New("preflight: invalid JSON")

// scanner is the validating walk over the body (see internal/jsonscan):
// values are located by byte offsets into the body, so that they can be
// forwarded without being decoded or re-encoded.
type scanner = jsonscan.Scanner[[]byte]

// keyName returns the name of the member key k of b: the bytes between its
// quotes, decoded (a copy) only when the client escaped some of them.
func keyName(b []byte, k jsonscan.Key) []byte {
	if k.Escaped {
		return unquoteKey(b, k)
	}
	return b[k.Start+1 : k.End-1]
}

// unquoteKey is keyName for an escaped key, apart so that keyName, which runs
// for every key, is inlined.
//
//go:noinline
func unquoteKey(b []byte, k jsonscan.Key) []byte { return []byte(jsonscan.Unquote(b[k.Start:k.End])) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// strIs reports whether raw, a JSON string literal, decodes to lit; it does not
// allocate for a literal without escapes.
func strIs(raw []byte, lit string) bool {
	if len(raw) < 2 || raw[0] != '"' {
		return false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:len(raw)-1]) == lit
	}
	return jsonscan.Unquote(raw) == lit
}
