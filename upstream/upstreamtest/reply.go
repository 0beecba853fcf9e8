package upstreamtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Reply says how the fake answers one call. The zero value answers 200 with the
// default content: a chat completion (JSON, or SSE when the request has
// "stream":true), an embeddings list, a generated image or a transcription,
// depending on the path.
type Reply struct {
	// Status is the HTTP status; 0 means 200. A status of 300 or more answers an
	// OpenAI error body {"error":{"message","type","param","code"}} unless Body or
	// Events is set.
	Status int
	// ErrorMessage is the error body's error.message; "" means the status text.
	ErrorMessage string
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Header holds extra response headers.
	Header http.Header

	// Latency is waited before the response headers are sent.
	Latency time.Duration
	// Hang makes the fake never answer: it waits until the request's context ends
	// (the client cancelled or disconnected) or the fake is closed, and records
	// the call as Canceled when the client went away.
	Hang bool

	// Content is the assistant message (chat) or transcription text; "" means
	// DefaultContent.
	Content string
	// Chunks is the number of content chunks of a stream (Content split into that
	// many pieces, between a role chunk and a finish chunk); 0 means 3.
	Chunks int
	// Interval is waited before each stream event after the first.
	Interval time.Duration
	// Drop aborts a stream after DropAfter content chunks (after DropAfter events
	// with Events; just before data: [DONE] when there are fewer): the connection
	// is closed abruptly, without [DONE].
	Drop      bool
	DropAfter int

	// PromptTokens and CompletionTokens are the usage numbers; 0 means 12 and the
	// number of content chunks.
	PromptTokens, CompletionTokens int
	// Dimensions is the length of each embedding; 0 means 8.
	Dimensions int

	// Body, when non-nil, is sent as it is (with ContentType, default
	// application/json) instead of the computed answer.
	Body        []byte
	ContentType string
	// Events, when non-nil, are sent as the SSE stream instead of the computed
	// answer, with Status (even an error status): each as "data: <event>\n\n",
	// then data: [DONE] (unless Drop).
	Events []string
}

// DefaultContent is the assistant text of a zero Reply.
const DefaultContent = "Hello from the fake backend."

// compiled is a Reply with its bytes precomputed, per model as seen in requests.
type compiled struct {
	Reply
	pieces  []string
	errBody []byte
	cfg     *Config
	cache   sync.Map // model -> *rendered
	cached  atomic.Int32
}

// rendered holds the precomputed answers of a reply for one model.
type rendered struct {
	completion []byte   // chat.completion JSON
	frames     [][]byte // role chunk, content chunks, finish chunk (SSE frames)
	usage      []byte   // usage chunk frame
}

const maxCachedModels = 64

func compile(r Reply, cfg *Config) *compiled {
	c := &compiled{Reply: r, cfg: cfg}
	if c.Content == "" {
		c.Content = DefaultContent
	}
	if c.Chunks <= 0 {
		c.Chunks = 3
	}
	if c.PromptTokens == 0 {
		c.PromptTokens = 12
	}
	if c.CompletionTokens == 0 {
		c.CompletionTokens = c.Chunks
	}
	if c.Dimensions <= 0 {
		c.Dimensions = 8
	}
	c.pieces = split(c.Content, c.Chunks)
	if c.status() >= 300 {
		c.errBody = errorBody(c.status(), c.ErrorMessage)
	}
	return c
}

func (c *compiled) status() int {
	if c.Status == 0 {
		return http.StatusOK
	}
	return c.Status
}

// render returns the precomputed answers for model, cached for up to 64 models.
func (c *compiled) render(model string) *rendered {
	if v, ok := c.cache.Load(model); ok {
		return v.(*rendered)
	}
	r := &rendered{}
	head := `{"id":` + quote(c.cfg.ID) + `,"object":"chat.completion.chunk","created":` +
		strconv.FormatInt(c.cfg.Created, 10) + `,"model":` + quote(model) + `,"choices":`
	frame := func(choices string) []byte { return []byte("data: " + head + choices + "}\n\n") }
	r.frames = append(r.frames, frame(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`))
	for _, p := range c.pieces {
		r.frames = append(r.frames, frame(`[{"index":0,"delta":{"content":`+quote(p)+`},"finish_reason":null}]`))
	}
	r.frames = append(r.frames, frame(`[{"index":0,"delta":{},"finish_reason":"stop"}]`))
	r.usage = frame(`[],"usage":` + c.usageJSON())
	r.completion = []byte(`{"id":` + quote(c.cfg.ID) + `,"object":"chat.completion","created":` +
		strconv.FormatInt(c.cfg.Created, 10) + `,"model":` + quote(model) +
		`,"choices":[{"index":0,"message":{"role":"assistant","content":` + quote(c.Content) +
		`},"finish_reason":"stop"}],"usage":` + c.usageJSON() + "}")
	if c.cached.Add(1) <= maxCachedModels {
		c.cache.Store(model, r)
	}
	return r
}

func (c *compiled) usageJSON() string {
	return `{"prompt_tokens":` + strconv.Itoa(c.PromptTokens) + `,"completion_tokens":` +
		strconv.Itoa(c.CompletionTokens) + `,"total_tokens":` +
		strconv.Itoa(c.PromptTokens+c.CompletionTokens) + `}`
}

// split cuts s into n pieces of about equal rune counts (some may be empty).
func split(s string, n int) []string {
	runes := []rune(s)
	out := make([]string, n)
	for i := range n {
		out[i] = string(runes[len(runes)*i/n : len(runes)*(i+1)/n])
	}
	return out
}

// errorBody is an OpenAI error envelope for status.
func errorBody(status int, msg string) []byte {
	if msg == "" {
		msg = http.StatusText(status)
	}
	typ, code := "invalid_request_error", "null"
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "rate_limit_error", `"rate_limit_exceeded"`
	case status >= 500:
		typ = "server_error"
	}
	return []byte(`{"error":{"message":` + quote(msg) + `,"type":"` + typ + `","param":null,"code":` + code + `}}`)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
