package errcat_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/chatgw/gateway/errcat"
)

func TestFromStore(t *testing.T) {
	cause := errors.New("disk full")
	full := errcat.New(errcat.MemoryBucketFull, "value", "Full.")
	tests := []struct {
		name     string
		err      error
		wantCode errcat.Code // "" means FromStore returns nil
		wantSame error       // when set, FromStore returns this very *Error
	}{
		{name: "nil stays nil", err: nil},
		{name: "an *Error passes as is", err: full, wantCode: errcat.MemoryBucketFull, wantSame: full},
		{name: "a wrapped *Error is unwrapped", err: fmt.Errorf("memstore.Update: %w", full), wantCode: errcat.MemoryBucketFull, wantSame: full},
		{name: "any other failure is storage_error", err: cause, wantCode: errcat.StorageError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := errcat.FromStore(tc.err)
			if tc.wantCode == "" {
				if got != nil {
					t.Fatalf("FromStore(%v) = %v, want nil", tc.err, got)
				}
				return
			}
			if code := errcat.CodeOf(got); code != tc.wantCode {
				t.Errorf("CodeOf(FromStore(%v)) = %q, want %q", tc.err, code, tc.wantCode)
			}
			if tc.wantSame != nil && got != tc.wantSame {
				t.Errorf("FromStore(%v) = %#v, want the *Error itself", tc.err, got)
			}
			if !errors.Is(got, tc.err) && tc.wantSame == nil {
				t.Errorf("FromStore(%v) = %v, does not unwrap to the cause", tc.err, got)
			}
		})
	}
}
