// Package httpx is the gateway's HTTP machinery shared by every family: the
// per-request record the logging middleware reads, JSON decoding with the
// gateway's rules, and the writers of JSON answers and error envelopes.
package httpx

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/chatgw/gateway/errcat"
	"github.com/julienschmidt/httprouter"
)

// Headers of the gateway's wire contract.
const (
	HeaderUserID    = "GW-User-Id"
	HeaderTenantID  = "GW-Tenant-Id"
	HeaderRequestID = "X-Request-Id"
	HeaderNotice    = "GW-Notice"
)

// Info is the per-request record that the outermost middleware creates and logs
// when the request ends. Handlers fill in what they learn.
type Info struct {
	RequestID string
	Route     string // route pattern, such as /c1/conversations/:id
	Tenant    string
	Logger    *slog.Logger // carries request_id
	Err       *errcat.Error
	// Body holds the request body when the middleware has already read it (JSON
	// bodies of authenticated routes); ReadBody returns it instead of reading again.
	Body     []byte
	BodyRead bool
}

type infoKey struct{}

// WithInfo returns ctx carrying info.
func WithInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// InfoFrom returns the request's Info; outside the gateway's middleware it returns
// a fresh Info with a discarding logger, so handlers can be tested alone.
func InfoFrom(ctx context.Context) *Info {
	if info, ok := ctx.Value(infoKey{}).(*Info); ok {
		return info
	}
	return &Info{Logger: slog.New(slog.DiscardHandler)}
}

// Param returns the path parameter name of the matched route.
func Param(r *http.Request, name string) string {
	return httprouter.ParamsFromContext(r.Context()).ByName(name)
}

// UserID returns the end user of the request (the GW-User-Id header), or "".
func UserID(r *http.Request) string { return r.Header.Get(HeaderUserID) }

// WriteJSON sends v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError sends err as the error envelope and records it for the request log
// (with its cause, which the client never sees).
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	e := errcat.Write(w, err)
	InfoFrom(r.Context()).Err = e
}
