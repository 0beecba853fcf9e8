package openai

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseObject: parseObject accepts exactly the bodies encoding/json reads
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
		obj, err := parseObject(body)
		if (err != nil) != wantErr {
			t.Fatalf("parseObject(%q) error %v, encoding/json error %v", body, err, wantErr)
		}
		if err != nil {
			return
		}
		if len(obj) != len(want) {
			t.Fatalf("parseObject(%q) has %d keys, encoding/json %d", body, len(obj), len(want))
		}
		for _, m := range obj {
			if !bytes.Equal(bytes.TrimSpace(want[m.key]), m.raw) {
				t.Fatalf("parseObject(%q)[%q] = %s, encoding/json %s", body, m.key, m.raw, want[m.key])
			}
		}
	})
}
