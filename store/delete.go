package store

import "bytes"

// DeleteMatching deletes the keys of bucket that start with prefix and that
// match accepts (nil accepts every key), and returns the first error of
// match, Scan or Delete. The keys are collected first and deleted after the
// scan, because a Scan's callback must not change the bucket it scans.
func DeleteMatching(tx Tx, bucket, prefix []byte, match func(key, value []byte) (bool, error)) error {
	var keys [][]byte
	err := tx.Scan(bucket, prefix, false, func(k, v []byte) (bool, error) {
		ok := true
		if match != nil {
			var err error
			if ok, err = match(k, v); err != nil {
				return false, err
			}
		}
		if ok {
			keys = append(keys, bytes.Clone(k))
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Delete(bucket, k); err != nil {
			return err
		}
	}
	return nil
}
