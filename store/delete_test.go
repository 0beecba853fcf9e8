package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
)

func TestDeleteMatching(t *testing.T) {
	errBad := errors.New("bad key")
	bucket := []byte("test/del")
	for _, tc := range []struct {
		name    string
		prefix  string
		match   func(k, v []byte) (bool, error)
		want    []string // keys left
		wantErr error
	}{
		{name: "all", want: nil},
		{name: "prefix", prefix: "a", want: []string{"b1"}},
		{name: "match", match: func(_, v []byte) (bool, error) { return string(v) == "x", nil }, want: []string{"a2"}},
		{name: "match error keeps everything", match: func(k, _ []byte) (bool, error) {
			if string(k) == "a2" {
				return false, errBad
			}
			return true, nil
		}, want: []string{"a1", "a2", "b1"}, wantErr: errBad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memstore.New()
			defer s.Close()
			ctx := context.Background()
			if err := s.Update(ctx, func(tx store.Tx) error {
				for k, v := range map[string]string{"a1": "x", "a2": "y", "b1": "x"} {
					if err := tx.Put(bucket, []byte(k), []byte(v)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			err := s.Update(ctx, func(tx store.Tx) error {
				return store.DeleteMatching(tx, bucket, []byte(tc.prefix), tc.match)
			})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("DeleteMatching error = %v, want %v", err, tc.wantErr)
			}
			var left []string
			_ = s.View(ctx, func(tx store.Tx) error {
				left = nil
				return tx.Scan(bucket, nil, false, func(k, _ []byte) (bool, error) {
					left = append(left, string(k))
					return true, nil
				})
			})
			if diff := cmp.Diff(tc.want, left); diff != "" {
				t.Errorf("keys left mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
