package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chatgw/gateway/chat"
)

// scenario is one kind of load.
type scenario struct {
	name   string
	c1     bool // POST /c1/chat with persistence (direct and proxy: the equivalent chat completion)
	stream bool // SSE answers: time to first event and truncated streams are measured
	closed bool // closed loop (peak throughput) instead of the fixed-rate open loop
	about  string
}

// scenarios are all the scenarios, in the order they run and are reported.
var scenarios = []scenario{
	{name: "v1-json", about: "POST /v1/chat/completions, JSON answer"},
	{name: "v1-sse", stream: true, about: "POST /v1/chat/completions, stream of -chunks chunks"},
	{name: "c1-json", c1: true, about: "POST /c1/chat stream:false with persistence, new and continuing conversations"},
	{name: "c1-sse", c1: true, stream: true, about: "POST /c1/chat streamed with persistence, new and continuing conversations"},
	{name: "peak", closed: true, about: "v1-json in a closed loop of -peak-workers clients: peak req/s"},
}

func scenarioNames() []string {
	out := make([]string, len(scenarios))
	for i, s := range scenarios {
		out[i] = s.name
	}
	return out
}

// Request contents. The continuing conversations' history alternates
// benchUserText and the fake's DefaultContent, as the gateway stores them.
const (
	benchModel     = "lm-4-scout-local"
	benchUserText  = "Tell me something short."
	fakeAnswerText = "Hello from the fake backend."
	benchUsers     = 16 // distinct GW-User-Id values
)

// requester sends the requests of one scenario to one target.
type requester struct {
	client *http.Client
	urls   []string // the request's URL at each of the target's processes
	token  string   // bearer token; "" sends none
	stream bool
	// build returns request i's body, its GW-User-Id ("" sends none) and the
	// index in urls of the process it goes to.
	build func(i int) (body []byte, user string, proc int)
	// acks, when not nil, counts the answers read to their end by the
	// conversation the gateway names in them (the /c1 scenarios).
	acks *acks
}

// do sends request i and reads its answer to the end. A non-200 status is a
// *statusError; a stream must end with data: [DONE].
func (r *requester) do(ctx context.Context, i int) outcome { return r.doWith(ctx, i, nil) }

// doWith is do with onFirst, when not nil, called when a stream's first data
// event arrives.
func (r *requester) doWith(ctx context.Context, i int, onFirst func()) outcome {
	body, user, proc := r.build(i)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.urls[proc], bytes.NewReader(body))
	if err != nil {
		return outcome{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if user != "" {
		req.Header.Set("GW-User-Id", user)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return outcome{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return outcome{err: readStatusError(resp)}
	}
	var out outcome
	if r.stream {
		out = readStream(resp.Body, onFirst)
	} else {
		_, out.err = io.Copy(io.Discard, resp.Body)
	}
	if out.err == nil && r.acks != nil {
		r.acks.add(resp.Header.Get(chat.HeaderConversationID), user)
	}
	return out
}

// errTruncated is the error of a stream that ended without data: [DONE].
var errTruncated = errors.New("truncated stream: no data: [DONE] at the end")

// readStream reads an SSE body to its end. It notes when the first data event
// arrived and reports the stream truncated unless its last line is
// data: [DONE] (a gw.error event or a cut connection end it otherwise).
// onFirst, when not nil, is called when the first data event arrives.
func readStream(body io.Reader, onFirst func()) outcome {
	var (
		out       outcome
		br        = bufio.NewReaderSize(body, 16<<10)
		lineStart = true
		done      bool
	)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if lineStart {
				if out.firstEvent.IsZero() && bytes.HasPrefix(line, []byte("data:")) {
					out.firstEvent = time.Now()
					if onFirst != nil {
						onFirst()
					}
				}
				if t := bytes.TrimSpace(line); len(t) > 0 {
					done = bytes.Equal(t, []byte("data: [DONE]"))
				}
			}
			lineStart = line[len(line)-1] == '\n'
		}
		switch {
		case err == nil || errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && done:
			return out
		case errors.Is(err, io.EOF):
			out.truncated, out.err = true, errTruncated
		default:
			out.truncated, out.err = true, errors.Join(errTruncated, err)
		}
		return out
	}
}

// readStatusError reads the OpenAI-style error body of a non-200 answer.
func readStatusError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	io.Copy(io.Discard, resp.Body)
	var env struct {
		Error struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	e := &statusError{Status: resp.StatusCode}
	if json.Unmarshal(b, &env) == nil {
		if c, ok := env.Error.Code.(string); ok {
			e.Code = c
		}
		e.Message = env.Error.Message
	}
	return e
}

// v1Body is the chat completion of the /v1 scenarios, for every target.
func v1Body(stream bool) []byte {
	return []byte(`{"model":"` + benchModel + `","messages":[{"role":"user","content":"` +
		benchUserText + `"}],"stream":` + strconv.FormatBool(stream) + `}`)
}

// chatCompletionBody is the chat completion with history messages of earlier
// turns before the user message: what /c1/chat sends upstream, and what the
// direct and proxy targets get in the /c1 scenarios.
func chatCompletionBody(history int, stream bool) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"` + benchModel + `","messages":[`)
	for k := range history {
		if k%2 == 0 {
			b.WriteString(`{"role":"user","content":"` + benchUserText + `"},`)
		} else {
			b.WriteString(`{"role":"assistant","content":"` + fakeAnswerText + `"},`)
		}
	}
	b.WriteString(`{"role":"user","content":"` + benchUserText + `"}],"stream":` + strconv.FormatBool(stream) + `}`)
	return []byte(b.String())
}

// c1Body is a POST /c1/chat body: a new conversation when id is "", else a
// turn of conversation id that sends at most keepTurns turns of its history.
func c1Body(id string, keepTurns int, stream bool) []byte {
	s := `{"message":"` + benchUserText + `","model":"` + benchModel + `","stream":` + strconv.FormatBool(stream)
	if id != "" {
		s += `,"conversation_id":"` + id + `","keep_last_turns":` + strconv.Itoa(keepTurns)
	}
	return []byte(s + "}")
}

// continuing reports whether request i of a /c1 scenario continues a
// conversation; a fraction f of the requests do, spread evenly.
func continuing(i int, f float64) bool {
	return int((float64(i)+1)*f) > int(float64(i)*f)
}

// userOf is the GW-User-Id of new conversation i or of pooled conversation i.
func userOf(i int) string { return "bench-user-" + strconv.Itoa(i%benchUsers) }
