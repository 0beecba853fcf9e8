package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
)

func TestViewValueAndUpdateValue(t *testing.T) {
	errFn := errors.New("fn failed")
	errDisk := errors.New("disk on fire")
	bucket, key := []byte("test/value"), []byte("k")
	read := func(store.Tx) (int, error) { return 7, nil }
	// write writes key and returns 7 with err (the result must not leak out
	// with an error).
	write := func(err error) func(store.Tx) (int, error) {
		return func(tx store.Tx) (int, error) {
			if err := tx.Put(bucket, key, []byte("v")); err != nil {
				return 7, err
			}
			return 7, err
		}
	}
	tests := []struct {
		name        string
		update      bool
		fn          func(store.Tx) (int, error)
		inject      error // the store fails the transaction before fn runs
		want        int
		wantErr     error
		wantWritten bool
	}{
		{name: "View returns fn's result", fn: read, want: 7},
		{name: "View: a write is ErrReadOnly, zero result", fn: write(nil), wantErr: store.ErrReadOnly},
		{name: "View: the store's error, zero result", fn: read, inject: errDisk, wantErr: errDisk},
		{name: "Update returns fn's result and commits", update: true, fn: write(nil), want: 7, wantWritten: true},
		{name: "Update: fn's error, zero result, nothing written", update: true, fn: write(errFn), wantErr: errFn},
		{name: "Update: the store's error, zero result", update: true, fn: write(nil), inject: errDisk, wantErr: errDisk},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := memstore.New()
			defer s.Close()
			ctx := context.Background()
			if tc.inject != nil {
				s.FailNext(tc.inject)
			}
			var got int
			var err error
			if tc.update {
				got, err = store.UpdateValue(ctx, s, tc.fn)
			} else {
				got, err = store.ViewValue(ctx, s, tc.fn)
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("error = %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("result = %d, want %d", got, tc.want)
			}
			var written bool
			if err := s.View(ctx, func(tx store.Tx) error {
				written = tx.Get(bucket, key) != nil
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if written != tc.wantWritten {
				t.Errorf("written = %v, want %v", written, tc.wantWritten)
			}
		})
	}
}
