package relay

import (
	"encoding/json"
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
