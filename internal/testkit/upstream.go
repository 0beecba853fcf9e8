package testkit

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/chatgw/gateway/upstream"
)

// Chunk is an OpenAI chat.completion.chunk (id chatcmpl-1, model lm) of one
// choice with delta, a JSON object, and finish_reason finish (null when "").
func Chunk(delta, finish string) string {
	fr := "null"
	if finish != "" {
		fr = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"lm","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, delta, fr)
}

// Completion is an OpenAI chat.completion (id chatcmpl-1, model lm) of one
// choice with message, a JSON object, and finish_reason finish, using one
// prompt and one completion token.
func Completion(message, finish string) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"lm","choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, message, finish)
}

// SSEAnswer is a backend's 200 answer (provider local) streaming chunks as
// data events, then data: [DONE].
func SSEAnswer(chunks ...string) *upstream.Response {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return answer("text/event-stream", b.String())
}

// JSONAnswer is a backend's 200 JSON answer (provider local) of body.
func JSONAnswer(body string) *upstream.Response {
	return answer("application/json", body)
}

func answer(contentType, body string) *upstream.Response {
	return &upstream.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {contentType}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Provider:   "local",
	}
}
