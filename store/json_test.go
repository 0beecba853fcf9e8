package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
)

// record is a JSON record as families store them.
type record struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

var bucketJSON = []byte("test/records")

// seed returns a store whose bucketJSON holds the given raw values.
func seed(t *testing.T, values map[string]string) store.Store {
	t.Helper()
	s := memstore.New()
	t.Cleanup(func() { s.Close() })
	err := s.Update(context.Background(), func(tx store.Tx) error {
		for k, v := range values {
			if err := tx.Put(bucketJSON, []byte(k), []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGetJSON(t *testing.T) {
	s := seed(t, map[string]string{"good": `{"name":"a","n":1}`, "bad": `{"name":`, "wrong": `[1]`})
	tests := []struct {
		key     string
		want    record
		wantOK  bool
		wantErr string // substring of the error; "" means none
	}{
		{key: "good", want: record{Name: "a", N: 1}, wantOK: true},
		{key: "absent", want: record{Name: "start"}}, // v left alone
		{key: "bad", wantErr: `store.GetJSON: bucket "test/records", key "bad": `},
		{key: "wrong", wantErr: `store.GetJSON: bucket "test/records", key "wrong": `},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			got := record{Name: "start"}
			var ok bool
			err := s.View(context.Background(), func(tx store.Tx) (err error) {
				ok, err = store.GetJSON(tx, bucketJSON, []byte(tc.key), &got)
				return err
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || ok {
					t.Fatalf("GetJSON(%q) = %v, %v, want false and an error containing %q", tc.key, ok, err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.wantOK {
				t.Fatalf("GetJSON(%q) = %v, %v, want %v, nil", tc.key, ok, err, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GetJSON(%q) mismatch (-want +got):\n%s", tc.key, diff)
			}
		})
	}
}

func TestPutJSON(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		v       any
		want    string // the stored value
		wantErr error  // errors.Is target; nil means success
		wantMsg string // substring of the error, when wantErr is nil but an error is expected
	}{
		{name: "record", key: "k", v: record{Name: "a", N: 2}, want: `{"name":"a","n":2}`},
		{name: "Put's error unchanged", key: "", v: record{}, wantErr: store.ErrInvalid},
		{name: "unencodable value", key: "k", v: func() {}, wantMsg: `store.PutJSON: bucket "test/records", key "k": `},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := seed(t, nil)
			ctx := context.Background()
			err := s.Update(ctx, func(tx store.Tx) error {
				return store.PutJSON(tx, bucketJSON, []byte(tc.key), tc.v)
			})
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("PutJSON error = %v, want %v", err, tc.wantErr)
				}
				return
			case tc.wantMsg != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("PutJSON error = %v, want one containing %q", err, tc.wantMsg)
				}
				return
			case err != nil:
				t.Fatalf("PutJSON: %v", err)
			}
			var got string
			_ = s.View(ctx, func(tx store.Tx) error {
				got = string(tx.Get(bucketJSON, []byte(tc.key)))
				return nil
			})
			if got != tc.want {
				t.Errorf("stored %q, want %q", got, tc.want)
			}
		})
	}
}

func TestScanJSON(t *testing.T) {
	errStop := errors.New("stop")
	good := map[string]string{
		"a1": `{"name":"one","n":1}`,
		"a2": `{"name":"two","n":2}`,
		"b1": `{"name":"other","n":3}`,
	}
	withBad := map[string]string{"a1": good["a1"], "a2": `not json`, "a3": good["a1"]}
	tests := []struct {
		name     string
		values   map[string]string
		prefix   string
		reverse  bool
		stopAt   string // fn returns false at this key
		failAt   string // fn returns errStop at this key
		wantKeys []string
		want     []record
		wantErr  error  // errors.Is target
		wantMsg  string // substring of the error
	}{
		{name: "prefix in order", values: good, prefix: "a", wantKeys: []string{"a1", "a2"},
			want: []record{{"one", 1}, {"two", 2}}},
		{name: "reverse", values: good, prefix: "a", reverse: true, wantKeys: []string{"a2", "a1"},
			want: []record{{"two", 2}, {"one", 1}}},
		{name: "fn stops early", values: good, stopAt: "a1", wantKeys: []string{"a1"}, want: []record{{"one", 1}}},
		{name: "fn's error unchanged", values: good, failAt: "a2", wantKeys: []string{"a1", "a2"},
			want: []record{{"one", 1}, {"two", 2}}, wantErr: errStop},
		{name: "a bad value stops the scan", values: withBad, wantKeys: []string{"a1"}, want: []record{{"one", 1}},
			wantMsg: `store.ScanJSON: bucket "test/records", key "a2": `},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := seed(t, tc.values)
			var keys []string
			var got []record
			err := s.View(context.Background(), func(tx store.Tx) error {
				keys, got = nil, nil // the store may run the callback again
				return store.ScanJSON(tx, bucketJSON, []byte(tc.prefix), tc.reverse, func(k []byte, r record) (bool, error) {
					keys = append(keys, string(k))
					got = append(got, r)
					if string(k) == tc.failAt {
						return false, errStop
					}
					return string(k) != tc.stopAt, nil
				})
			})
			switch {
			case tc.wantErr != nil:
				if err != tc.wantErr {
					t.Errorf("ScanJSON error = %v, want %v unchanged", err, tc.wantErr)
				}
			case tc.wantMsg != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Errorf("ScanJSON error = %v, want one containing %q", err, tc.wantMsg)
				}
			case err != nil:
				t.Errorf("ScanJSON: %v", err)
			}
			if diff := cmp.Diff(tc.wantKeys, keys); diff != "" {
				t.Errorf("ScanJSON keys mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ScanJSON values mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
