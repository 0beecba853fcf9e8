package errcat

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

type envelope struct {
	Error  body `json:"error"`
	GWCode Code `json:"gw_code"`
}

type body struct {
	Type    Type    `json:"type"`
	Code    Code    `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	DocURL  string  `json:"doc_url"`
}

// wire returns the *Error as it goes on the wire: an uncatalogued code becomes an
// internal_error wrapping it, so neither its message nor its extras reach the client.
func wire(err error) *Error {
	e := As(err)
	if !Known(e.Code) {
		return Internal(e)
	}
	return e
}

// Status returns the HTTP status err answers with: the catalog status of its code,
// or, for upstream_bad_request only, the upstream's 4xx passed in Error.Status.
func Status(err error) int {
	e := wire(err)
	if e.Code == UpstreamBadRequest && e.Status >= 400 && e.Status < 500 {
		return e.Status
	}
	return Lookup(e.Code).HTTPStatus
}

// fixedMessage lists the codes whose message is always the catalog title: server
// faults (never show a cause) and the rate limit (its text is part of the contract).
func fixedMessage(c Code) bool {
	return c == InternalError || c == StorageError || c == RateLimitExceeded
}

// Public is what a client is told of an error, whatever the shape of the body
// that tells it: the code's catalog type and the status it answers with, the
// message the client may see (the catalog title for the codes whose message
// is fixed, and when the error has none) and the param, "" when it names no
// field. DocURL is the code's section of the error catalog page (DocURL).
// Extra are the additional body fields. It never holds the cause.
type Public struct {
	Status  int
	Type    Type
	Code    Code
	Message string
	Param   string
	DocURL  string
	Extra   map[string]any
}

// PublicOf returns what the client of err is told (an error that is not an
// *Error with a catalogued code is internal_error) and the *Error that is
// reported, for logging (its Cause chain holds the original error).
func PublicOf(err error) (Public, *Error) {
	e := wire(err)
	entry := Lookup(e.Code)
	msg := e.Message
	if msg == "" || fixedMessage(e.Code) {
		msg = entry.Title
	}
	return Public{Status: Status(e), Type: entry.Type, Code: entry.Code, Message: msg, Param: e.Param,
		DocURL: DocURL(entry.Code), Extra: e.Extra}, e
}

// A Format encodes the body of an error answer from its Public part. The
// gateway's own envelope is Envelope; a route whose clients speak another
// API's wire format (Anthropic's Messages API) answers in that API's shape,
// still with the catalog's status, type and code, so that the catalog stays
// the one table from code to status and type.
type Format func(Public) []byte

// Envelope is the gateway's error envelope,
// {"error":{"type","code","message","param","doc_url"},"gw_code":...} plus
// the Extra fields at the top level. doc_url is an addition inside the
// error object, where OpenAI's ErrorResponse schema allows members it does
// not list, so that OpenAI's clients read the envelope as before.
func Envelope(p Public) []byte {
	b := body{Type: p.Type, Code: p.Code, Message: p.Message, DocURL: p.DocURL}
	if p.Param != "" {
		b.Param = &p.Param
	}
	data, _ := json.Marshal(envelope{Error: b, GWCode: p.Code}) // strings only: cannot fail
	if len(p.Extra) > 0 {
		m := make(map[string]any, len(p.Extra)+2)
		for k, v := range p.Extra {
			m[k] = v
		}
		m["error"] = b
		m["gw_code"] = p.Code
		// An Extra value that cannot be encoded is dropped with the others rather
		// than breaking the body after the status line.
		if withExtra, err := json.Marshal(m); err == nil {
			data = withExtra
		}
	}
	return data
}

// Write sends err as the error envelope
// {"error":{"type","code","message","param","doc_url"},"gw_code":...} plus any Extra fields,
// with the catalog status and, when set, Retry-After. Internal and storage errors
// never show their cause, and an error that is not an *Error with a catalogued code
// answers 500 internal_error. It returns the *Error that was written, for logging
// (its Cause chain holds the original error).
func Write(w http.ResponseWriter, err error) *Error {
	return WriteFormat(w, err, nil)
}

// WriteFormat is Write with the body encoded by f; nil is Envelope. Status,
// Content-Type (application/json) and Retry-After are the same whatever f.
func WriteFormat(w http.ResponseWriter, err error, f Format) *Error {
	p, e := PublicOf(err)
	var data []byte
	switch {
	case f != nil:
		data = append(f(p), '\n')
	case plain(p):
		data = plainBodies[p.Code] // shared: only read
	default:
		data = append(Envelope(p), '\n')
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(data)
	return e
}

// plain reports whether p's envelope is its code's plain body: the
// catalog title as message, no param, no extra fields. The 429 of the rate
// limit always is (its message is fixed), and it is the error a client
// over its limit gets on every request.
func plain(p Public) bool {
	return p.Param == "" && len(p.Extra) == 0 && p.Message == Lookup(p.Code).Title
}

// plainBodies holds each code's plain envelope (plain), newline included,
// encoded once, so that writing one encodes and allocates nothing.
var plainBodies = func() map[Code][]byte {
	m := make(map[Code][]byte, len(entries))
	for _, e := range entries {
		m[e.Code] = append(Envelope(Public{Type: e.Type, Code: e.Code, Message: e.Title, DocURL: DocURL(e.Code)}), '\n')
	}
	return m
}()

// RetryAfterSeconds converts a wait into the value of Error.RetryAfter: whole
// seconds rounded up, at least 1 (so a zero or negative wait still sends 1).
func RetryAfterSeconds(d time.Duration) int {
	s := d / time.Second
	if d%time.Second > 0 {
		s++
	}
	return int(max(s, 1))
}
