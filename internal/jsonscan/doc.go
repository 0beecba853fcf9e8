// Package jsonscan is the validating JSON walk under the gateway's hot-path
// readers (internal/preflight's request walk, internal/relay's chunk fast
// path). It hands out byte offsets into the text instead of decoded values, so
// that a caller can look into the few members it needs and forward or skip the
// rest without decoding, re-encoding or allocating.
//
// # What it accepts
//
// Exactly what encoding/json's Valid accepts (RFC 8259, with encoding/json's
// nesting limit of MaxDepth): Valid(b) == json.Valid(b) for every b, which
// FuzzValid checks. Like encoding/json's scanner it does not check that
// strings are valid UTF-8; String reports the strings that may not be
// (StringInfo.NonASCII), for a caller that decodes them by itself.
//
// # Use
//
//	s := jsonscan.New(body)
//	var model []byte // the raw value of the member "model"
//	end, err := s.Object(s.Space(0), func(key jsonscan.Key, v int) (int, error) {
//		end, err := s.Value(v) // validates the value and finds its end
//		if string(body[key.Start:key.End]) == `"model"` {
//			model = body[v:end]
//		}
//		return end, err
//	})
//	ok := err == nil && s.Space(end) == len(body) // one object, nothing after it
//
// A Scanner walks string or []byte text (generic, so that neither caller
// copies its input); its methods take the index where a value starts and
// return the index just past its end. The walk is a measured part of every
// relayed chunk and every chat request (docs/performance.md), hence its
// shape: string and []byte each compiled on their own and no interface calls,
// one callback per member or element and none per token, strings passed over
// 8 bytes at a time, and nothing allocated.
//
// Errors are ErrSyntax, or whatever a callback returned, unchanged.
package jsonscan
