package errcat

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// Catalog is the body of GET /errors: the catalog Version, the number of entries
// and the entries in their published order.
type Catalog struct {
	Version int     `json:"version"`
	Count   int     `json:"count"`
	Entries []Entry `json:"entries"`
}

// Published returns the catalog as GET /errors sends it.
func Published() Catalog {
	es := Entries()
	return Catalog{Version: Version, Count: len(es), Entries: es}
}

// CatalogHandler serves GET /errors: 200 application/json with the Published
// catalog. The body is encoded once, when the handler is built.
func CatalogHandler() http.Handler {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // descriptions hold `<token>`-style placeholders
	if err := enc.Encode(Published()); err != nil {
		panic("errcat: encoding the catalog: " + err.Error()) // static data: a programming error
	}
	return staticHandler("application/json", buf.Bytes())
}

// staticHandler answers every request with body and status 200.
func staticHandler(contentType string, body []byte) http.Handler {
	size := strconv.Itoa(len(body))
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Content-Length", size)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
}
