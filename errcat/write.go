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

// Write sends err as the error envelope
// {"error":{"type","code","message","param"},"gw_code":...} plus any Extra fields,
// with the catalog status and, when set, Retry-After. Internal and storage errors
// never show their cause, and an error that is not an *Error with a catalogued code
// answers 500 internal_error. It returns the *Error that was written, for logging
// (its Cause chain holds the original error).
func Write(w http.ResponseWriter, err error) *Error {
	e := wire(err)
	entry := Lookup(e.Code)
	msg := e.Message
	if msg == "" || fixedMessage(e.Code) {
		msg = entry.Title
	}
	b := body{Type: entry.Type, Code: entry.Code, Message: msg}
	if e.Param != "" {
		b.Param = &e.Param
	}
	data, _ := json.Marshal(envelope{Error: b, GWCode: entry.Code}) // strings only: cannot fail
	if len(e.Extra) > 0 {
		m := make(map[string]any, len(e.Extra)+2)
		for k, v := range e.Extra {
			m[k] = v
		}
		m["error"] = b
		m["gw_code"] = entry.Code
		// An Extra value that cannot be encoded is dropped with the others rather
		// than breaking the body after the status line.
		if withExtra, err := json.Marshal(m); err == nil {
			data = withExtra
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(Status(e))
	_, _ = w.Write(append(data, '\n'))
	return e
}

// RetryAfterSeconds converts a wait into the value of Error.RetryAfter: whole
// seconds rounded up, at least 1 (so a zero or negative wait still sends 1).
func RetryAfterSeconds(d time.Duration) int {
	s := d / time.Second
	if d%time.Second > 0 {
		s++
	}
	return int(max(s, 1))
}
