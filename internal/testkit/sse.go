package testkit

import (
	"encoding/json"
	"strings"
	"testing"

	sse "github.com/tmaxmax/go-sse"
)

// maxEventSize bounds one event of a stream that ParseSSE reads: far above
// any the gateway sends, so that only a runaway stream fails.
const maxEventSize = 16 << 20

// Event is one server-sent event.
type Event struct {
	// Type is the event's "event:" field; "" for an unnamed event (the
	// OpenAI chunks and data: [DONE]).
	Type string
	// Data is the event's data, its "data:" lines joined with "\n".
	Data string
}

// ParseSSE parses the server-sent event stream body with go-sse's reader, as
// the relay reads an upstream's stream: comments, ids and retry fields are
// dropped, and a last event without its blank line still counts. It fails t
// when the stream does not parse: it ends inside a line, or an event is
// larger than 16 MiB.
func ParseSSE(t testing.TB, body string) []Event {
	t.Helper()
	var out []Event
	for ev, err := range sse.Read(strings.NewReader(body), &sse.ReadConfig{MaxEventSize: maxEventSize}) {
		if err != nil {
			t.Fatalf("stream %q: %v", body, err)
		}
		out = append(out, Event{Type: ev.Type, Data: ev.Data})
	}
	return out
}

// Content joins the choices[].delta.content of the OpenAI chunks of events:
// the unnamed events other than data: [DONE]. It fails t when such an event
// is not a JSON object.
func Content(t testing.TB, events []Event) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range events {
		if ev.Type != "" || ev.Data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
			t.Fatalf("chunk %q: %v", ev.Data, err)
		}
		for _, ch := range c.Choices {
			b.WriteString(ch.Delta.Content)
		}
	}
	return b.String()
}
