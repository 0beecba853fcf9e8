package relay

import (
	"fmt"

	"github.com/chatgw/gateway/errcat"
)

// An Encoder writes an answer in the wire format of another client API
// (Anthropic's Messages API, OpenAI's Responses API) instead of relaying the
// upstream's chat-completions answer as it is: the backends stay OpenAI
// Chat-Completions backends and "the gateway translates at its edge". The
// relay keeps everything else, the same for every API: reading the upstream
// (bounded by MaxBytes), Capture and the quota ticket (from the upstream's
// own answer), Commit, keepalives, the client going away and the shutdown
// cut. An Encoder only translates: it is handed what the upstream sent and
// returns what the client gets, and never writes. One Encoder serves one
// answer; the relay calls it from one goroutine at a time. An Encoder that
// holds what it translates (a format that repeats the whole text at its
// end) bounds it itself, failing Chunk with TooLarge past Options.MaxBytes,
// as "nothing holds an unbounded upstream body".
type Encoder interface {
	// Completion returns the body of the client's JSON answer to b, the
	// upstream's whole chat completion (valid JSON, not an error object),
	// before Commit runs. An error is answered instead, nothing having been
	// sent yet, as upstream_error (ReadFailure: the gateway's own
	// upstream_error with its message, else the relay's).
	Completion(b []byte) ([]byte, error)
	// Chunk appends to evs the events the client gets for one upstream
	// chunk: the data of an unnamed upstream event that is neither
	// data: [DONE] nor an error object (named upstream events are the
	// upstream's dialect and are dropped). An error ends the stream as an
	// upstream failure, after the events returned with it.
	Chunk(evs []Event, data string) ([]Event, error)
	// End appends the events that end a complete stream, after the
	// upstream's data: [DONE] and Commit: what the API sends at its end, and
	// the notices, each an event whose name starts with "gw." ("A streaming
	// response carries them as named SSE events whose names start with
	// gw."). The relay sends them in the GW-Notice header too.
	End(evs []Event, notices []Notice) []Event
	// Error appends the events that end a stream cut by e after it started:
	// the upstream failed, Commit failed, or the gateway shuts down. A
	// failure before anything was sent is the JSON error answer instead, in
	// the route's error shape (httpx.WriteError).
	Error(evs []Event, e *errcat.Error) []Event
	// Keepalive returns the event sent after Options.Keepalive without an
	// upstream event; ok false sends the SSE comment ": keepalive".
	Keepalive() (ev Event, ok bool)
}

// Event is one server-sent event an Encoder returns: Name is its event: line
// ("" for none: an unnamed event), Data its data, which may hold line breaks
// (sent as several data: lines, which the client joins back).
type Event struct {
	Name, Data string
}

// events sends evs in order and returns the first write error.
func (s *SSE) events(evs []Event) error {
	for _, ev := range evs {
		if err := s.Event(ev.Name, ev.Data); err != nil {
			return err
		}
	}
	return nil
}

// encodeChunk sends what the relay's Encoder makes of one upstream event (a
// named one is dropped); it returns the write's error and the Encoder's.
func (s *SSE) encodeChunk(name, data string) (werr, err error) {
	if name != "" {
		return nil, nil
	}
	s.evs, err = s.enc.Chunk(s.evs[:0], data)
	if werr = s.events(s.evs); werr != nil {
		return werr, nil
	}
	if err != nil {
		err = fmt.Errorf("relay: encode a chunk: %w", err)
	}
	return nil, err
}

// keepalive sends the Encoder's keepalive event, or the comment
// ": keepalive", which clients ignore.
func (s *SSE) keepalive() {
	if s.enc != nil {
		if ev, ok := s.enc.Keepalive(); ok {
			s.Event(ev.Name, ev.Data)
			return
		}
	}
	s.Comment("keepalive")
}
