package errcat_test

import (
	"encoding/json"
	"html"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/errcat"
)

func TestCatalogHandler(t *testing.T) {
	h := errcat.CatalogHandler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/errors", nil))

	if rec.Code != 200 {
		t.Fatalf("status = %d, want 200", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	raw := rec.Body.Bytes()

	// Wire shape: exactly these keys, typical_param null when the code names no field.
	var shape struct {
		Version *int             `json:"version"`
		Count   *int             `json:"count"`
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal(raw, &shape); err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"count", "entries", "version"}, sortedKeys(top)); diff != "" {
		t.Errorf("top-level keys mismatch (-want +got):\n%s", diff)
	}
	entries := errcat.Entries()
	if shape.Version == nil || *shape.Version != 1 || shape.Count == nil || *shape.Count != len(entries) || len(shape.Entries) != len(entries) {
		t.Fatalf("version %v count %v with %d entries, want 1, %d, %d", shape.Version, shape.Count, len(shape.Entries), len(entries), len(entries))
	}
	wantKeys := []string{"code", "description", "http_status", "remediation", "title", "type", "typical_param"}
	for i, e := range shape.Entries {
		if diff := cmp.Diff(wantKeys, sortedKeys(e)); diff != "" {
			t.Errorf("entry %d keys mismatch (-want +got):\n%s", i, diff)
		}
		if tp, ok := e["typical_param"]; !ok || (entries[i].TypicalParam == nil) != (tp == nil) {
			t.Errorf("entry %s: typical_param = %v, want %v", entries[i].Code, tp, entries[i].TypicalParam)
		}
	}

	// Content: the whole catalog, in order.
	var got errcat.Catalog
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(errcat.Published(), got); diff != "" {
		t.Errorf("GET /errors mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(raw), "Bearer <token>") {
		t.Error("body escapes < and > (want them readable)")
	}

	// The body is computed once: a second request answers the same bytes.
	rec2 := httptest.NewRecorder()
	h.ServeHTTP(rec2, httptest.NewRequest("GET", "/errors", nil))
	if !slices.Equal(raw, rec2.Body.Bytes()) {
		t.Error("second response differs")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var sectionRE = regexp.MustCompile(`(?s)<section id="([^"]+)">(.*?)</section>`)

func TestDocsHandler(t *testing.T) {
	rec := httptest.NewRecorder()
	errcat.DocsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/docs/errors", nil))

	if rec.Code != 200 {
		t.Fatalf("status = %d, want 200", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q, want text/html; charset=utf-8", ct)
	}
	page := rec.Body.String()
	if strings.Contains(page, "`") {
		t.Error("page holds a raw backtick: a code span was not rendered")
	}

	sections := make(map[string]string)
	var ids []string
	for _, m := range sectionRE.FindAllStringSubmatch(page, -1) {
		ids = append(ids, m[1])
		sections[m[1]] = m[2]
	}
	var codes []string
	for _, e := range errcat.Entries() {
		codes = append(codes, string(e.Code))
	}
	if diff := cmp.Diff(codes, ids); diff != "" {
		t.Fatalf("section ids mismatch (-want +got):\n%s", diff)
	}

	for _, e := range errcat.Entries() {
		t.Run(string(e.Code), func(t *testing.T) {
			if !strings.Contains(page, `href="#`+string(e.Code)+`"`) {
				t.Errorf("no link to #%s", e.Code)
			}
			s := sections[string(e.Code)]
			param := "none"
			if e.TypicalParam != nil {
				param = "<code>" + html.EscapeString(*e.TypicalParam) + "</code>"
			}
			for _, want := range []string{
				html.EscapeString(e.Title),
				"<dd>" + strconv.Itoa(e.HTTPStatus) + "</dd>",
				"<dd><code>" + string(e.Type) + "</code></dd>",
				"<dd>" + param + "</dd>",
				string(errcat.Markdown(e.Description)),
				string(errcat.Markdown(e.Remediation)),
			} {
				if !strings.Contains(s, want) {
					t.Errorf("section lacks %q", want)
				}
			}
		})
	}
}

func TestMarkdown(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain", "Retry later.", "<p>Retry later.</p>\n"},
		{"code span", "`param` is `model`.", "<p><code>param</code> is <code>model</code>.</p>\n"},
		{"paragraphs", "One.\n\nTwo.\n\n\n", "<p>One.</p>\n<p>Two.</p>\n"},
		{"escapes html", `<script>alert("x")</script> & co`, "<p>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; co</p>\n"},
		{"escapes inside code", "`Bearer <token>`", "<p><code>Bearer &lt;token&gt;</code></p>\n"},
		{"unpaired backtick stays literal", "a `b` c ` d", "<p>a <code>b</code> c ` d</p>\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(errcat.Markdown(tc.in)); got != tc.want {
				t.Errorf("Markdown(%q) mismatch (-want +got):\n%s", tc.in, cmp.Diff(tc.want, got))
			}
		})
	}
}
