package httpx_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// TestDecodeFloats: present numbers are set, absent and null members leave
// their destination nil, and the first member of another type answers
// invalid_field naming it, in the order given.
func TestDecodeFloats(t *testing.T) {
	tests := []struct {
		body      string
		temp, top *float64
		err       *errcat.Error
	}{
		{body: `{}`},
		{body: `{"temperature":null,"top_p":0.5}`, top: ptr(0.5)},
		{body: `{"temperature":2.5,"top_p":1}`, temp: ptr(2.5), top: ptr(1.0)},
		{body: `{"temperature":"hot"}`, err: errcat.New(errcat.InvalidField, "temperature", "temperature must be a number.")},
		{body: `{"temperature":"hot","top_p":[]}`, err: errcat.New(errcat.InvalidField, "temperature", "temperature must be a number.")},
		{body: `{"top_p":true}`, err: errcat.New(errcat.InvalidField, "top_p", "top_p must be a number.")},
	}
	for _, tt := range tests {
		var top map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tt.body), &top); err != nil {
			t.Fatal(err)
		}
		var temp, topP *float64
		err := httpx.DecodeFloats(top, httpx.Float{Name: "temperature", Dst: &temp}, httpx.Float{Name: "top_p", Dst: &topP})
		if diff := cmp.Diff(tt.err, errOrNil(err)); diff != "" {
			t.Errorf("%s: error mismatch (-want +got):\n%s", tt.body, diff)
		}
		if tt.err == nil {
			if diff := cmp.Diff([]*float64{tt.temp, tt.top}, []*float64{temp, topP}); diff != "" {
				t.Errorf("%s: numbers mismatch (-want +got):\n%s", tt.body, diff)
			}
		}
	}
}

// TestDecodeInt32: an integer int32 holds is accepted, zero and negative
// ones too (the pre-flight checks answer them); anything else answers
// invalid_field naming the member.
func TestDecodeInt32(t *testing.T) {
	bad := errcat.New(errcat.InvalidField, "max_tokens", "max_tokens must be an integer.")
	tests := []struct {
		raw  string
		want *int32
		err  *errcat.Error
	}{
		{raw: ``},
		{raw: `null`},
		{raw: `256`, want: ptr(int32(256))},
		{raw: `0`, want: ptr(int32(0))},
		{raw: `-3`, want: ptr(int32(-3))},
		{raw: `1e3`, want: ptr(int32(1000))},
		{raw: `2147483647`, want: ptr(int32(2147483647))},
		{raw: `2147483648`, err: bad},
		{raw: `-2147483649`, err: bad},
		{raw: `1.5`, err: bad},
		{raw: `"10"`, err: bad},
	}
	for _, tt := range tests {
		got, err := httpx.DecodeInt32(json.RawMessage(tt.raw), "max_tokens")
		if diff := cmp.Diff(tt.err, errOrNil(err)); diff != "" {
			t.Errorf("%q: error mismatch (-want +got):\n%s", tt.raw, diff)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q: value mismatch (-want +got):\n%s", tt.raw, diff)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// errOrNil is err as the *errcat.Error it must be, nil for none.
func errOrNil(err error) *errcat.Error {
	if err == nil {
		return nil
	}
	return errcat.As(err)
}
