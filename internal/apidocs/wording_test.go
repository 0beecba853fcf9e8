package apidocs_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// internalNote matches wording that belongs to the project's own notes and
// code, not to what a user of the API reads: the decision log, issue numbers,
// the contract's clauses, the code's layers.
var internalNote = regexp.MustCompile(`(?i)\bDECISIONS\b|decisions\.md|contract\.md|\bissue \d|\bspec (Codes|Authentication|Versioning|Catalog)\b|interface description|\bmiddleware\b|\bhandler\b|\berrcat\b|\bhttpx\b|\bTODO\b|\bFIXME\b`)

// TestUserFacingTextHasNoInternalNotes: the texts of openapi.json (every
// string value, descriptions and examples) and of the HTML pages speak to the
// API's users; x-rust-api-applied stays, as the documented alias of
// gw-applied.
func TestUserFacingTextHasNoInternalNotes(t *testing.T) {
	var doc any
	if err := json.Unmarshal([]byte(asset(t, "openapi.json")), &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(x, path+"/"+k)
			}
		case []any:
			for _, x := range v {
				walk(x, path+"/*")
			}
		case string:
			if m := internalNote.FindString(v); m != "" {
				t.Errorf("openapi.json %s says %q: %.120s", path, m, v)
			}
		}
	}
	walk(doc, "")
	for _, page := range []string{"landing.html", "playground.html", "reference.html"} {
		text := asset(t, page)
		if m := internalNote.FindString(text); m != "" {
			t.Errorf("%s says %q", page, m)
		}
	}
	if !strings.Contains(asset(t, "openapi.json"), `"x-rust-api-applied"`) {
		t.Error("openapi.json no longer documents the x-rust-api-applied alias")
	}
}
