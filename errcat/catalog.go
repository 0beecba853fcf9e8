package errcat

// Type is an error category, sent as error.type.
type Type string

// The category types on the wire.
const (
	TypeAuthentication Type = "authentication_error"
	TypePermission     Type = "permission_error"
	TypeRateLimit      Type = "rate_limit_error"
	TypeTooLarge       Type = "request_too_large"
	TypeInvalidRequest Type = "invalid_request_error"
	TypeNotFound       Type = "not_found_error"
	TypeConflict       Type = "conflict_error"
	TypeAPI            Type = "api_error"
	TypeTimeout        Type = "timeout_error"
	TypeOverloaded     Type = "overloaded_error"
)

// Entry is one row of the published catalog (GET /errors).
type Entry struct {
	Code       Code `json:"code"`
	Type       Type `json:"type"`
	HTTPStatus int  `json:"http_status"`
	// Title is short; Write sends it as error.message when the *Error has none.
	Title string `json:"title"`
	// Description is markdown: when the error happens, its param, extra body fields.
	Description string `json:"description"`
	// Remediation says what the client should do.
	Remediation string `json:"remediation"`
	// TypicalParam is the error.param the code usually carries; nil when it names no field.
	TypicalParam *string `json:"typical_param"`
}

func ptr(s string) *string { return &s }

var byCode = func() map[Code]*Entry {
	m := make(map[Code]*Entry, len(entries))
	for i := range entries {
		m[entries[i].Code] = &entries[i]
	}
	return m
}()

// docsPath is the path of the catalog's HTML page (GET /docs/errors), whose
// section of a code is anchored by the code (docsPage).
const docsPath = "/docs/errors"

// docURLs holds each code's DocURL, built once: an error answer, the 429 of
// the rate limit among them, must not build a string to say it.
var docURLs = func() map[Code]string {
	m := make(map[Code]string, len(entries))
	for _, e := range entries {
		m[e.Code] = docsPath + "#" + string(e.Code)
	}
	return m
}()

// DocURL returns the address of code's section in the gateway's error
// catalog page, "/docs/errors#<code>": relative to the gateway's root, so
// that it names the gateway that answered whatever host, scheme or proxy
// the client reached it through (it is never built from the request). An
// unknown code yields internal_error's, as Lookup does. It allocates
// nothing.
func DocURL(code Code) string {
	if u, ok := docURLs[code]; ok {
		return u
	}
	return docURLs[InternalError]
}

// Version is the catalog version, bumped on breaking changes only.
const Version = 1

// Entries returns a copy of the catalog in its published order.
func Entries() []Entry { return append([]Entry(nil), entries...) }

// Lookup returns the entry of code; an unknown code yields the internal_error entry,
// so a typo can never produce an uncatalogued answer.
func Lookup(code Code) Entry {
	if e, ok := byCode[code]; ok {
		return *e
	}
	return *byCode[InternalError]
}

// Known reports whether code is in the catalog.
func Known(code Code) bool {
	_, ok := byCode[code]
	return ok
}
