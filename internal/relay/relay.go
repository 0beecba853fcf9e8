package relay

import (
	"context"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/quota"
)

// DefaultKeepalive is the upstream silence after which a streaming relay sends
// an SSE keepalive comment.
const DefaultKeepalive = 15 * time.Second

// Headers written by Response.
const (
	// HeaderApplied carries what the gateway changed in the request
	// (max_tokens_floored=<N>); HeaderAppliedLegacy carries the same value under
	// the interface description's name ("both names appear").
	HeaderApplied       = "Gw-Applied"
	HeaderAppliedLegacy = "X-Rust-Api-Applied"
	// HeaderNotice lists the notice codes of a JSON answer. Header names
	// are written in net/http's canonical form ("Gw-", not "GW-": HTTP
	// header names are case-insensitive), so that Header.Set does not
	// allocate a canonical copy on every answer.
	HeaderNotice = "Gw-Notice"
	// HeaderBackend names the provider of the backend that answered (local,
	// cloudA, cloudB) and HeaderBackendModel the model the gateway asked it
	// for (the backend's router_alias, as GET /v1/info lists it), on every
	// relayed answer: the answer's own "model" is the client's alias.
	HeaderBackend      = "Gw-Backend"
	HeaderBackendModel = "Gw-Backend-Model"
)

// Options tune one relay. The zero value relays with no notices, no capture and
// the default keepalive.
type Options struct {
	// Stream is the request's stream flag; it decides the mode only when the
	// upstream answer has no Content-Type. Otherwise text/event-stream is relayed
	// as SSE and anything else as JSON.
	Stream bool
	// Notices are sent in order: in the GW-Notice header of a JSON answer, or as
	// gw.notice events before data: [DONE].
	Notices []Notice
	// Applied, when not "", is sent as HeaderApplied and HeaderAppliedLegacy
	// with the successful answer (never with an error).
	Applied string
	// Capture, when non-nil, is filled with the assistant reply.
	Capture *Capture
	// Ticket, when non-nil, is the request's quota ticket, admitted before
	// the upstream call: Response settles it as it returns, whatever the
	// outcome, to the tokens the answer says it used (Capture.UsedTokens; the
	// whole reservation when it said none, as an answer cut short). Without a
	// Capture, Response captures the usage alone (UsageOnly) for it, in
	// constant memory. nil (no budget applies) settles and captures nothing.
	Ticket *quota.Ticket
	// Keepalive is the upstream silence after which ": keepalive" is sent;
	// 0 means DefaultKeepalive, a negative value disables keepalives.
	Keepalive time.Duration
	// Model is the alias the client asked for. Without an Encoder, the
	// top-level "model" of the JSON answer and of every chunk of a stream is
	// written as Model, whatever the backend called its model, and gw.notice
	// chunks name it; an answer or chunk without "model" gets none. An
	// Encoder writes the model of its own API itself. "" relays "model" as
	// the backend sent it.
	Model string
	// Clock gives the created time of such chunks; nil means the wall clock.
	Clock clock.Clock
	// Commit, when non-nil, is called once the whole upstream answer arrived
	// (the JSON body read, or the stream's data: [DONE] received) and Capture is
	// filled, before the answer is acknowledged: before a JSON answer's status
	// and body, before a stream's notices and data: [DONE]. Keepalives go on
	// while it runs. When it fails, its error is sent instead (the JSON error
	// envelope, or a gw.error event ending the stream, without data: [DONE]) and
	// the relay is not complete. /c1 persists the turn here.
	Commit func(ctx context.Context) error
	// MaxBytes bounds what the relay holds of one answer: the body of a JSON
	// answer, and the reply a Capture collects from a stream. An answer over it
	// fails with TooLarge (upstream_error): before the first byte as the JSON
	// error envelope, after it as a gw.error event ending the stream, and Commit
	// does not run, so nothing half-done is stored. A stream relayed without a
	// Capture, or with a UsageOnly one, is relayed whatever its length in
	// constant memory. 0 means DefaultMaxBytes.
	MaxBytes int64
	// Encoder, when non-nil, writes the answer in another client API's wire
	// format (see Encoder): the JSON body, the stream's events, its end and
	// its notices, a mid-stream error and the keepalive. The notices of a
	// stream then also go in the GW-Notice header, sent with the stream's
	// headers, because a client of another API may drop events it does not
	// know. Capture, Ticket and Commit still read the upstream's own answer.
	// nil relays the upstream's chat-completions answer as it is.
	Encoder Encoder
}

// Result says how a relay ended.
type Result struct {
	// Stream is true when the answer was relayed as SSE.
	Stream bool
	// Started is true when a status and headers of a 200 answer were sent; after
	// that, failures can only be reported in the stream.
	Started bool
	// Complete is true when the whole answer reached the client: the JSON body,
	// or the stream up to and including data: [DONE].
	Complete bool
	// Err is why the relay is not complete: the upstream failed (an
	// *errcat.Error, already reported to the client), the client went away
	// (context.Canceled), or a write failed. Nil when Complete.
	Err error
	// Committed is true when Options.Commit ran and succeeded: the answer is
	// stored even if the client did not get its acknowledgement (Complete
	// false), which callers log.
	Committed bool
}

// rewriteModel is the alias the relay writes as the answer's "model": Model,
// unless an Encoder writes the answer.
func (o *Options) rewriteModel() string {
	if o.Encoder != nil {
		return ""
	}
	return o.Model
}
