package main

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBadEnvironmentValues: a value that does not parse is reported by
// its variable's name, never by the Go field's, with the value quoted.
func TestBadEnvironmentValues(t *testing.T) {
	tests := []struct {
		name, value, want string
	}{
		{"GATEWAY_RATE_PER_SECOND", "fast", `GATEWAY_RATE_PER_SECOND: "fast" is not a number`},
		{"GATEWAY_RATE_PER_SECOND", "1e999", `GATEWAY_RATE_PER_SECOND: "1e999" is out of range`},
		{"GATEWAY_RATE_BURST", "2.5", `GATEWAY_RATE_BURST: "2.5" is not a whole number`},
		{"GATEWAY_RATE_BURST", "99999999999999999999", `GATEWAY_RATE_BURST: "99999999999999999999" is out of range`},
		{"GATEWAY_BODY_LIMIT_BYTES", "32MB", `GATEWAY_BODY_LIMIT_BYTES: "32MB" is not a whole number`},
		{"GATEWAY_UPSTREAM_TIMEOUT", "600", `GATEWAY_UPSTREAM_TIMEOUT: "600" is not a duration such as 30s, 5m or 1h30m`},
		{"GATEWAY_RATE_LIMIT_FAIL_OPEN", "yes", `GATEWAY_RATE_LIMIT_FAIL_OPEN: "yes" is not true or false`},
		{"GATEWAY_MAX_CONNS", "a\nb", `GATEWAY_MAX_CONNS: "a\nb" is not a whole number`},
		{"GATEWAY_LOG_LEVEL", "loud", `GATEWAY_LOG_LEVEL: "loud" is not a level: debug, info, warn or error`},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			_, err := loadConfig(context.Background(), nil, envOf(map[string]string{tt.name: tt.value}), &bytes.Buffer{})
			if err == nil {
				t.Fatal("loadConfig succeeded")
			}
			if diff := cmp.Diff("environment: "+tt.want, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEveryVariableNamedInItsError: for every variable of config that is not
// a string, a value that does not parse gives an *envValueError naming that
// variable, and no Go field name.
func TestEveryVariableNamedInItsError(t *testing.T) {
	ct := reflect.TypeFor[config]()
	n := 0
	for i := range ct.NumField() {
		f := ct.Field(i)
		env, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if env == "" || f.Type.Kind() == reflect.String {
			continue
		}
		n++
		name := "GATEWAY_" + env
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(context.Background(), nil, envOf(map[string]string{name: "not-a-value"}), &bytes.Buffer{})
			var ve *envValueError
			if !errors.As(err, &ve) || ve.Var != name {
				t.Fatalf("error %v, want an *envValueError of %s", err, name)
			}
			if strings.Contains(err.Error(), f.Name) {
				t.Errorf("error %q names the Go field %s", err, f.Name)
			}
		})
	}
	if n < 15 {
		t.Errorf("only %d variables that are not strings: has config lost its env tags?", n)
	}
}

// TestRenameEnvErrorKeepsOtherErrors: an error that is not go-envconfig's
// wrapping of the named variable's field is returned as it is, so that no
// error is pinned on the wrong variable.
func TestRenameEnvErrorKeepsOtherErrors(t *testing.T) {
	other := errors.New("RateBurst: something else")
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"GATEWAY_RATE_PER_SECOND", other},
		{"GATEWAY_NO_SUCH", other},
		{"GATEWAY_RATE_BURST", errors.New("no cause")},
	} {
		if got := renameEnvError(tc.err, tc.name, envOf(nil)); got != tc.err {
			t.Errorf("renameEnvError(%v, %s) = %v, want it unchanged", tc.err, tc.name, got)
		}
	}
}
