package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
)

// The package's store accesses share these helpers so that they report
// failures alike: an *errcat.Error a transaction returns (such as
// memory_bucket_full) reaches the client as is, anything else is
// storage_error, and a corrupt record reads "memory: <what>: <cause>".

// inTx runs fn in a transaction of run (a Store's View or Update) and returns
// fn's result, or the zero T and fn's or the store's error through storeErr.
// Results travel as fn's return values rather than through captured variables,
// so each store call reads as one expression.
func inTx[T any](ctx context.Context, run func(context.Context, func(store.Tx) error) error, fn func(store.Tx) (T, error)) (T, error) {
	var out T
	err := run(ctx, func(tx store.Tx) error {
		var err error
		out, err = fn(tx)
		return err
	})
	if err != nil {
		var zero T
		return zero, storeErr(err)
	}
	return out, nil
}

// storeErr passes on the *errcat.Error a transaction function returned (such as
// memory_bucket_full) and turns every other failure into storage_error.
func storeErr(err error) error {
	if err == nil {
		return nil
	}
	var e *errcat.Error
	if errors.As(err, &e) {
		return e
	}
	return errcat.Storage(err)
}

// putJSON stores v as JSON under key of bucket.
func putJSON(tx store.Tx, bucket, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Put(bucket, key, b)
}

// decodeJSON decodes the stored record raw into v; what names the record in
// the error.
func decodeJSON(raw []byte, v any, what string) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("memory: %s: %w", what, err)
	}
	return nil
}

// getJSON decodes the record under key of bucket into v. It reports false and
// leaves v alone when there is none, so a caller can start from v's zero value
// for an absent record.
func getJSON(tx store.Tx, bucket, key []byte, v any, what string) (bool, error) {
	raw := tx.Get(bucket, key)
	if raw == nil {
		return false, nil
	}
	if err := decodeJSON(raw, v, what); err != nil {
		return false, err
	}
	return true, nil
}
