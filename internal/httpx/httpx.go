// Package httpx is the gateway's HTTP machinery shared by every family: the
// per-request record the logging middleware reads, JSON decoding with the
// gateway's rules, OpenAI bodies split into their members for forwarding
// (Object), and the writers of JSON answers and error envelopes.
package httpx

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/metrics"
	"github.com/chatgw/gateway/internal/shutdown"
	"github.com/julienschmidt/httprouter"
)

// Headers of the gateway's wire contract.
const (
	HeaderUserID    = "GW-User-Id"
	HeaderTenantID  = "GW-Tenant-Id"
	HeaderRequestID = "X-Request-Id"
)

// The canonical forms (http.CanonicalHeaderKey) of the headers read on every
// request: http.Header.Get allocates a canonical copy of a key that is not.
const (
	canonicalUserID   = "Gw-User-Id"
	canonicalTenantID = "Gw-Tenant-Id"
)

// Info is the per-request record that the outermost middleware creates and logs
// when the request ends. Handlers fill in what they learn.
type Info struct {
	RequestID string
	Route     string // route pattern, such as /c1/conversations/:id
	Tenant    string
	Logger    *slog.Logger // carries request_id
	// RouteLog is the gateway's logger with the route's method and
	// pattern, set by the middleware when a route matched; the request
	// line is written through it, so that those two are encoded once per
	// route rather than on every request.
	RouteLog *slog.Logger
	Err      *errcat.Error
	// Metrics is the request's metrics, begun by the middleware when the
	// gateway has metrics (nil otherwise: its methods do nothing); the
	// relay, the upstream decorator and the content guard add what they see.
	Metrics *metrics.Request
	// Body holds the request body when the middleware has already read it (JSON
	// bodies of authenticated routes); ReadBody returns it instead of reading again.
	Body     []byte
	BodyRead bool
	// Shutdown is raised when the gateway ends the streams in flight
	// because it shuts down (Gateway.EndStreams); nil outside a gateway.
	Shutdown *shutdown.Signal
	// Meter tallies the upstream calls of a metered request for its usage
	// record (see Meter); MeterOf finds it.
	Meter Meter

	// ErrorFormat is the shape of the route's error answers, set by the
	// middleware from the route table before anything can fail: nil is the
	// gateway's envelope, a client API's own Format on its routes (Anthropic's
	// Messages API). WriteError writes with it.
	ErrorFormat errcat.Format

	// The parts of an Info that Init sets, allocated with it.
	log      slog.Logger // what Logger points to
	handler  idHandler   // log's handler: adds request_id
	idHeader [1]string   // the value of the X-Request-Id answer header
}

// Init sets info, which must not be copied afterwards, to the Info of a
// request with id, whose Logger is base adding the attribute request_id=id:
// what base.With("request_id", id) gives, without allocating. The attribute
// is added when a record is logged, so a request that logs nothing pays
// nothing for it.
func (info *Info) Init(id string, base *slog.Logger) {
	*info = Info{RequestID: id}
	info.handler = idHandler{h: base.Handler(), id: id}
	info.log = *slog.New(&info.handler)
	info.Logger = &info.log
	info.idHeader[0] = id
}

// SetRequestIDHeader sets the X-Request-Id header of h to the Info's
// RequestID without allocating (the value slice lives in the Info).
func (info *Info) SetRequestIDHeader(h http.Header) {
	info.idHeader[0] = info.RequestID
	h[HeaderRequestID] = info.idHeader[:]
}

// idHandler adds request_id to every record of a request's Logger; it is
// what base.With("request_id", id) would be, made lazily.
type idHandler struct {
	h  slog.Handler
	id string
}

func (h *idHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *idHandler) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(slog.String("request_id", h.id))
	return h.h.Handle(ctx, r)
}

func (h *idHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.h.WithAttrs([]slog.Attr{slog.String("request_id", h.id)}).WithAttrs(attrs)
}

func (h *idHandler) WithGroup(name string) slog.Handler {
	return h.h.WithAttrs([]slog.Attr{slog.String("request_id", h.id)}).WithGroup(name)
}

type infoKey struct{}

// WithInfo returns ctx carrying info.
func WithInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// NewContext returns parent carrying info and the route's path parameters
// (read by Param) in one context value, so that the middleware gives a
// request everything with one Request.WithContext. params may be nil.
func NewContext(parent context.Context, info *Info, params httprouter.Params) context.Context {
	return &requestContext{Context: parent, info: info, params: params}
}

// requestContext is the context of NewContext. Value answers its own keys and
// asks the parent for the others, so cancellation and deadlines are the
// parent's (context.WithCancel on it finds the parent's cancelCtx through
// Value and starts no goroutine).
type requestContext struct {
	context.Context
	info   *Info
	params httprouter.Params
}

func (c *requestContext) Value(key any) any {
	switch key {
	case infoKey{}:
		return c.info
	case httprouter.ParamsKey:
		if c.params != nil {
			return c.params
		}
	}
	return c.Context.Value(key)
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
func UserID(r *http.Request) string { return r.Header.Get(canonicalUserID) }

// TenantIDHeader returns the GW-Tenant-Id header of the request, or "".
func TenantIDHeader(r *http.Request) string { return r.Header.Get(canonicalTenantID) }

// WriteJSON sends v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError sends err in the route's error shape (Info.ErrorFormat: the
// error envelope unless the route speaks another API) and records it for the
// request log (with its cause, which the client never sees).
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	info := InfoFrom(r.Context())
	info.Err = errcat.WriteFormat(w, err, info.ErrorFormat)
}

// Handle is the shape of a handler that decodes a request and answers JSON:
// resolve decodes and validates the request into the input of call, and
// call's answer is written with 200 (WriteJSON). The first error of either is
// written as the error envelope instead (WriteError).
func Handle[In, Out any](w http.ResponseWriter, r *http.Request,
	resolve func(*http.Request) (In, error), call func(context.Context, In) (Out, error)) {
	in, err := resolve(r)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	out, err := call(r.Context(), in)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, out)
}
