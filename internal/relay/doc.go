// Package relay sends an upstream model answer to the client: a JSON chat
// completion as it is, or an SSE stream event by event, with the gateway's
// notices and mid-stream errors. It is shared by /v1/chat/completions, /c1/chat
// and agent chat.
//
// # Use
//
//	resp, err := up.Do(ctx, req)          // ctx: the request's context
//	if err != nil { httpx.WriteError(w, r, err); return }
//	var notices []relay.Notice
//	if resp.Fallback { notices = append(notices, relay.BackendFallback(resp)) }
//	res := relay.Response(w, r, resp, relay.Options{Notices: notices, Applied: pf.Applied()})
//
// Response owns resp.Body and always closes it. It always leaves the client with
// a complete answer (success, JSON error, or a stream ended by gw.error), unless
// the client went away. Result says what happened. Options.Capture collects the
// assistant reply, and Options.Commit runs once the whole answer arrived but
// before it is acknowledged (JSON status and body; a stream's notices and
// data: [DONE]), so that /c1 can persist the turn first and answer
// storage_error instead when that fails. Options.Ticket, the request's quota
// ticket, is settled to the answer's usage when Response returns; the caller
// cancels it when the upstream call fails, so there is no answer to relay.
// The answer's usage goes to the request's usage record the same way: a
// metered request (httpx.MeterOf) reports it to its Meter as Response returns,
// whatever the caller passed, so that no family has code of its own for it.
//
// # JSON answers
//
// The upstream body is read whole, checked to be JSON and sent with status 200,
// Content-Type application/json and Content-Length. Notices go in the header
// GW-Notice: <code>[, <code>...]. A body that cannot be read or is not JSON
// answers 502 upstream_error (nothing was sent yet).
//
// # SSE answers
//
// Events are read with internal/sseread (one small buffer per stream) and
// written as they arrive; the events one read of the upstream brought are
// flushed together with http.ResponseController before the relay reads
// again, so none waits on the upstream (the ResponseWriter must support
// Flush, directly or through Unwrap). The stream's end (the events of the
// upstream's last read, the notices, data: [DONE] or gw.error) is not
// flushed: net/http sends it with the end of the chunked body when the
// handler returns, in one write instead of two, so the caller returns once
// Response has. With Options.Ticket it is flushed before the ticket is
// settled, and with Options.Commit what was read is flushed before the
// commit, so that neither store transaction holds the client's events back.
// After the upstream's data: [DONE] the relay reads the upstream body to its
// end (at most 100 ms and 4 KiB more; before a commit), because net/http's
// Transport keeps a connection for the next request only then, and the
// chunked terminator often arrives just after [DONE]. The events that came
// in the read with [DONE] go out with the client's closing [DONE], after
// that read (one write instead of two; a well-behaved upstream ends its body
// at once), except with Options.Commit, which flushes them before it.
// Content-Type is text/event-stream,
// Cache-Control no-cache. Data is written byte for byte as the upstream sent
// it (OpenAI's "data: " form), never re-marshalled; named upstream events keep
// their name.
// Upstream comments are dropped. After the upstream's data: [DONE], each notice
// is sent as
//
//	event: gw.notice
//	data: {"id":<id>,"object":"chat.completion.chunk","created":<created>,"model":<model>,"choices":[],"gw_notice":{"code":...,"message":...}}
//
// reusing the stream's own id, created and model (client accumulators such as
// openai-go's reject a chunk with another id), and then
// data: [DONE]. When the upstream stream fails, ends without [DONE], or sends an
// error object ({"error":...}) as data, the stream ends with
//
//	event: gw.error
//	data: {"error":{"type":"api_error","code":"upstream_error","message":...,"param":null},"gw_code":"upstream_error"}
//
// and no data: [DONE]; the message is the gateway's own, and the log gets
// only a summary of the upstream's error (redact.Body: length, error type
// and code, a hash), never its text. A failure before anything was sent
// answers the JSON error envelope with its status instead.
//
// After Options.Keepalive (default 15 s) without an upstream event, the comment
// ": keepalive" is sent (and again after each further interval).
//
// # Other client APIs
//
// Options.Encoder writes the answer in another API's wire format (Anthropic's
// Messages API; OpenAI's Responses API): the relay still reads the upstream's
// chat-completions answer, settles the ticket and runs Capture and Commit on
// it, and hands the Encoder each chunk (and the JSON completion, the end with
// its notices, a mid-stream error, the keepalive) to translate. See Encoder.
//
// When the request's context is cancelled (the client went away) a stream's
// upstream body is closed at once, which ends the upstream call, and Response
// returns promptly without writing anything more; a JSON answer, which comes
// with its headers, is read to its end (an upstream.Router body ends with the
// context of its call, which is the request's) and then not written. A
// failed write to the client ends the relay the same way.
package relay
