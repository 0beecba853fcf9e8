package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// Keys made of several components (tenant, user, conversation id, sequence
// number...) must sort the way their components do and must not let one id
// match as a prefix of another ("user1" must not find "user10"'s records).
// Joining strings with a separator gets both wrong as soon as an id contains
// the separator; the helpers below get them right for any bytes.
//
// A key is built by appending components to a slice:
//
//	key := store.AppendString(nil, tenant)
//	key = store.AppendString(key, user)
//	key = store.AppendUint64(key, seq)
//
// Keys built from the same kinds of components in the same order compare
// (bytes.Compare, hence Scan) in the order of their components: strings in byte
// order, a string before every longer string it is a prefix of, integers
// numerically. The first components of a key, encoded the same way, are a Scan
// prefix that matches exactly the keys whose leading components are equal.
// ReadString and ReadUint64 take the components apart again.

// AppendString appends s to dst as one component of an order-preserving
// composite key and returns the extended slice. Each 0x00 byte of s is written
// as 0x00 0xff and the component ends with 0x00 0x01 (CockroachDB's encoding of
// byte strings), so any string, including the empty string and strings
// containing 0x00, keeps its order and cannot run into the next component.
func AppendString(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, 0x00)
		if i < 0 {
			break
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, 0x00, 0xff)
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, 0x00, 0x01)
}

// AppendUint64 appends n to dst as one component of an order-preserving
// composite key (8 bytes, big-endian) and returns the extended slice. Use it for
// sequence numbers, and for times after 1970 as uint64(t.UnixNano()); Scan with
// reverse set then lists newest first.
func AppendUint64(dst []byte, n uint64) []byte {
	return binary.BigEndian.AppendUint64(dst, n)
}

// AppendNewestFirst appends the time unixNano (after 1970) to dst as a key
// component that sorts newest first in ascending order, for indexes listed
// newest first without a reverse Scan, and returns the extended slice.
func AppendNewestFirst(dst []byte, unixNano int64) []byte {
	return AppendUint64(dst, math.MaxUint64-uint64(unixNano))
}

// ReadString decodes the string component that key starts with, as written by
// AppendString, and returns it with the rest of key. A key that does not start
// with a well-formed string component gives an error wrapping ErrInvalid.
func ReadString(key []byte) (s string, rest []byte, err error) {
	var b []byte
	for {
		i := bytes.IndexByte(key, 0x00)
		if i < 0 || i+1 == len(key) {
			return "", nil, fmt.Errorf("store.ReadString: %w: unterminated string component", ErrInvalid)
		}
		b = append(b, key[:i]...)
		switch key[i+1] {
		case 0x01:
			return string(b), key[i+2:], nil
		case 0xff:
			b = append(b, 0x00)
			key = key[i+2:]
		default:
			return "", nil, fmt.Errorf("store.ReadString: %w: byte %#x after 0x00", ErrInvalid, key[i+1])
		}
	}
}

// ReadUint64 decodes the integer component that key starts with, as written by
// AppendUint64, and returns it with the rest of key. A key shorter than 8 bytes
// gives an error wrapping ErrInvalid.
func ReadUint64(key []byte) (n uint64, rest []byte, err error) {
	if len(key) < 8 {
		return 0, nil, fmt.Errorf("store.ReadUint64: %w: %d bytes left, want 8", ErrInvalid, len(key))
	}
	return binary.BigEndian.Uint64(key), key[8:], nil
}

// PrefixEnd returns the smallest key greater than every key that starts with
// prefix, or nil when there is none (prefix empty or made only of 0xff bytes).
// The keys with a prefix are those k with prefix <= k < PrefixEnd(prefix).
func PrefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
