package relay

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestQuoteJSON: the alias written into answers is quoted as json.Marshal
// quotes it, on the fast path and off it.
func TestQuoteJSON(t *testing.T) {
	for _, s := range []string{"", "lm-4-scout", "org/model:7b-q4_K_M", "say \"hi\"", `back\slash`,
		"<", ">", "&", "tab\there", "\x7f", "modèle", "\u2028", "bad \xff utf-8", " ~"} {
		want, _ := json.Marshal(s)
		if got := quoteJSON(s); got != string(want) {
			t.Errorf("quoteJSON(%q) = %s, want %s", s, got, want)
		}
	}
}

// TestHeaderValuesShareNoCapacity: values set from one array stay apart: an
// Add to one header (as a later handler may) leaves the next one alone.
func TestHeaderValuesShareNoCapacity(t *testing.T) {
	h := http.Header{}
	vs := make(headerValues, 0, 2)
	vs.set(h, "Content-Type", "application/json")
	vs.set(h, "Content-Length", "2")
	h.Add("Content-Type", "text/plain")
	if got := h.Values("Content-Length"); len(got) != 1 || got[0] != "2" {
		t.Errorf("Content-Length = %q after an Add to Content-Type, want [2]", got)
	}
	if got := h.Values("Content-Type"); len(got) != 2 {
		t.Errorf("Content-Type = %q, want both values", got)
	}
}
