package store

import (
	"encoding/json"
	"fmt"
)

// Most families store their records as JSON. GetJSON, PutJSON and ScanJSON
// encode and decode them alike, and name the bucket and key of a record that
// does not decode, so a corrupt record can be found from the log line.

// GetJSON decodes the value of key in bucket into v and reports whether there
// was one. When there is none it returns false and nil and leaves v alone, so a
// caller can start from v's zero value for an absent record. A value that does
// not decode into v gives false and an error naming bucket and key.
func GetJSON(tx Tx, bucket, key []byte, v any) (bool, error) {
	raw := tx.Get(bucket, key)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("store.GetJSON: bucket %q, key %q: %w", bucket, key, err)
	}
	return true, nil
}

// PutJSON sets key in bucket to v encoded as JSON. It returns json.Marshal's
// error (wrapped) or Tx.Put's error (unchanged).
func PutJSON(tx Tx, bucket, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store.PutJSON: bucket %q, key %q: %w", bucket, key, err)
	}
	return tx.Put(bucket, key, b)
}

// ScanJSON is Tx.Scan for a bucket of JSON records: it calls fn with each key
// of bucket that starts with prefix and its value decoded into a T. Scanning
// stops early when fn returns false or an error, which ScanJSON returns
// unchanged, or at a value that does not decode, with an error naming bucket
// and key. As with Scan, key is valid only until the transaction ends.
func ScanJSON[T any](tx Tx, bucket, prefix []byte, reverse bool, fn func(key []byte, v T) (bool, error)) error {
	return tx.Scan(bucket, prefix, reverse, func(k, raw []byte) (bool, error) {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return false, fmt.Errorf("store.ScanJSON: bucket %q, key %q: %w", bucket, k, err)
		}
		return fn(k, v)
	})
}
