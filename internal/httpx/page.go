package httpx

import (
	"context"
	"net/http"
	"strconv"

	"github.com/chatgw/gateway/errcat"
)

// Page-size bounds of every list endpoint, those of the conversation list
// ("default 50, maximum 500"; a limit "over 500 or below 1" is 400
// invalid_field): limit defaults to DefaultPageLimit and must be 1..MaxPageLimit.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 500
)

// Page is the limit/offset window a list request asks for.
type Page struct {
	Limit  int
	Offset int
}

// ParsePage reads the query parameters limit and offset of r. An absent limit
// is DefaultPageLimit and an absent offset 0. A limit that is not an integer
// from 1 to MaxPageLimit, or an offset that is not an integer of at least 0,
// gives 400 invalid_field query.limit / query.offset.
func ParsePage(r *http.Request) (Page, error) {
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), q.Has("limit"), "limit", DefaultPageLimit, 1, MaxPageLimit)
	if err != nil {
		return Page{}, err
	}
	offset, err := intParam(q.Get("offset"), q.Has("offset"), "offset", 0, 0, -1)
	if err != nil {
		return Page{}, err
	}
	return Page{Limit: limit, Offset: offset}, nil
}

// QueryInt reads the integer query parameter name of r as ParsePage reads
// limit: def when r has none; one that is not an integer from lo to hi is 400
// invalid_field query.<name>, "<name> must be an integer from <lo> to <hi>."
// (hi < 0: no upper bound, "<name> must be an integer of at least <lo>."), so
// that every bounded query integer of the API is refused in the same words.
func QueryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	q := r.URL.Query()
	return intParam(q.Get(name), q.Has(name), name, def, lo, hi)
}

// intParam parses query parameter name: absent gives def; not an integer, below
// lo, or above hi (hi < 0: no upper bound) gives invalid_field query.<name>.
func intParam(raw string, present bool, name string, def, lo, hi int) (int, error) {
	if !present {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || (hi >= 0 && n > hi) {
		if hi >= 0 {
			return 0, errcat.Newf(errcat.InvalidField, "query."+name, "%s must be an integer from %d to %d.", name, lo, hi)
		}
		return 0, errcat.Newf(errcat.InvalidField, "query."+name, "%s must be an integer of at least %d.", name, lo)
	}
	return n, nil
}

// Window places the entries of a store scan against a Page, so that every
// list reads its page the same way: Skip is true for the Offset entries
// before the page, Full once the page holds Limit entries, and then More
// says that an entry followed it. A Window serves one run of a scan: a
// transaction callback, which may run again, starts a new one.
type Window struct {
	Page
	skipped int
	// More says that the scan met an entry after a full page.
	More bool
}

// Skip reports whether the entry the scan is at comes before the page, and
// counts it if so.
func (w *Window) Skip() bool {
	if w.skipped < w.Offset {
		w.skipped++
		return true
	}
	return false
}

// Full reports whether a page holding n entries (added one at a time, so
// never past Limit) is full, when the scan is at an entry not skipped: that
// entry follows the page, so More is set and the scan can stop.
func (w *Window) Full(n int) bool {
	if n != w.Limit {
		return false
	}
	w.More = true
	return true
}

// List is the answer of a list endpoint:
// {"object":"list","data":[...],"limit","offset","has_more"}.
type List[T any] struct {
	Object  string `json:"object"` // always "list"
	Data    []T    `json:"data"`
	Limit   int    `json:"limit"`
	Offset  int    `json:"offset"`
	HasMore bool   `json:"has_more"`
}

// WriteList sends 200 with the List of data, the page p it was read with and
// whether more entries follow. data is sent as given (nil as null).
func WriteList[T any](w http.ResponseWriter, p Page, data []T, hasMore bool) {
	WriteJSON(w, http.StatusOK, List[T]{Object: "list", Data: data, Limit: p.Limit, Offset: p.Offset, HasMore: hasMore})
}

// HandleList is Handle for a list endpoint: resolve reads whom and what the
// request is for, then the page is read (ParsePage), and list's page of data,
// with whether more entries follow, is written as a List (WriteList). The
// first error of the three is written as the error envelope instead
// (WriteError); resolve's comes first, so that a list of something that does
// not exist answers that, whatever its page.
func HandleList[In, T any](w http.ResponseWriter, r *http.Request,
	resolve func(*http.Request) (In, error), list func(context.Context, In, Page) ([]T, bool, error)) {
	in, err := resolve(r)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	pg, err := ParsePage(r)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	data, more, err := list(r.Context(), in, pg)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteList(w, pg, data, more)
}
