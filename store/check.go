package store

import "fmt"

// CheckPut returns the error, wrapping ErrInvalid, that Tx.Put must return for
// these arguments, or nil when they are acceptable. Implementations call it so
// that they all reject the same arguments (bbolt's rules).
func CheckPut(bucket, key, value []byte) error {
	switch {
	case len(bucket) == 0:
		return fmt.Errorf("%w: empty bucket name", ErrInvalid)
	case len(bucket) > MaxKeySize:
		return fmt.Errorf("%w: bucket name of %d bytes, over %d", ErrInvalid, len(bucket), MaxKeySize)
	case len(key) == 0:
		return fmt.Errorf("%w: empty key", ErrInvalid)
	case len(key) > MaxKeySize:
		return fmt.Errorf("%w: key of %d bytes, over %d", ErrInvalid, len(key), MaxKeySize)
	case value == nil:
		return fmt.Errorf("%w: nil value", ErrInvalid)
	}
	return nil
}
