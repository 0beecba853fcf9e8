package httpx_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// FuzzParseObject: ParseObject accepts exactly the bodies encoding/json reads
// as one object, and gives each key the value encoding/json gives it (the
// last one of a repeated key).
func FuzzParseObject(f *testing.F) {
	for _, seed := range []string{
		`{"model":"lm-embed","input":["a","b"]}`,
		` {"a":1,"a":2} `,
		`{"k\u0065y":"v","x":{"y":[1,2]}}`,
		`{}`, `[]`, `"s"`, `{"a":1} {}`, `{"a":`, `{"a":1,}`, "{\"a\":\"\xff\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want map[string]json.RawMessage
		wantErr := json.Unmarshal(body, &want) != nil || !bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{"))
		obj, err := httpx.ParseObject(body)
		if (err != nil) != wantErr {
			t.Fatalf("ParseObject(%q) error %v, encoding/json error %v", body, err, wantErr)
		}
		if err != nil {
			return
		}
		if len(obj) != len(want) {
			t.Fatalf("ParseObject(%q) has %d keys, encoding/json %d", body, len(obj), len(want))
		}
		for _, m := range obj {
			if !bytes.Equal(bytes.TrimSpace(want[m.Key]), m.Raw) {
				t.Fatalf("ParseObject(%q)[%q] = %s, encoding/json %s", body, m.Key, m.Raw, want[m.Key])
			}
		}
	})
}

func TestObjectModelAndBuild(t *testing.T) {
	tests := []struct {
		body string
		want string // Build(Model(), drop ttl_hours), or the error's code and param
	}{
		{`{"prompt":"p","model":"m","ttl_hours":2,"n":1}`, `{"model":"m","prompt":"p","n":1}`},
		{`{"model":"m","model":"m2"}`, `{"model":"m2"}`},
		{`{"prompt":"p"}`, "missing_field model"},
		{`{"model":null}`, "missing_field model"},
		{`{"model":""}`, "missing_field model"},
		{`{"model":["m"]}`, "invalid_field model"},
	}
	for _, tt := range tests {
		obj, err := httpx.ParseObject([]byte(tt.body))
		if err != nil {
			t.Fatalf("ParseObject(%s): %v", tt.body, err)
		}
		var got string
		if alias, err := obj.Model(); err != nil {
			e := errcat.As(err)
			got = string(e.Code) + " " + e.Param
		} else {
			got = string(obj.Build(alias, map[string]bool{"ttl_hours": true}))
		}
		if got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.body, got, tt.want)
		}
	}
}
