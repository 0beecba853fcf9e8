package anthropic

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/pipeline"
)

// CreateMessage serves POST /v1/messages (see the package doc): the
// Messages API request is translated into a chat-completions request, run
// through the stateless chat pipeline as /v1/chat/completions is, and the
// answer translated back.
func (s *Service) CreateMessage(w http.ResponseWriter, r *http.Request) {
	var q *request
	p, pf := s.chat.CheckRequest(w, r, clientParams, func(*auth.Principal) (body []byte, err error) {
		q, body, err = read(r, false)
		return body, err
	})
	if pf == nil {
		return
	}
	s.chat.Forward(w, r, p, pf, pipeline.Answer{Encoder: newEncoder(messageID(r), q.chat.Model, q.stops)})
}

// tokenCount is the answer of count_tokens.
type tokenCount struct {
	InputTokens int `json:"input_tokens"`
}

// CountTokens serves POST /v1/messages/count_tokens: the gateway's
// pre-flight estimate of the prompt (preflight.Count), the injected
// system message included, not the model's own tokenizer's count.
func (s *Service) CountTokens(w http.ResponseWriter, r *http.Request) {
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	_, body, err := read(r, true)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	n, err := s.chat.Count(r, p, body)
	if err != nil {
		httpx.WriteError(w, r, pipeline.ClientError(err, clientParams))
		return
	}
	httpx.WriteJSON(w, http.StatusOK, tokenCount{InputTokens: n})
}

// read reads and translates the request of r, and returns it with the
// chat-completions body it becomes.
func read(r *http.Request, count bool) (*request, []byte, error) {
	b, err := httpx.ReadBody(r)
	if err != nil {
		return nil, nil, err
	}
	q, err := decodeRequest(b, count)
	if err != nil {
		return nil, nil, err
	}
	body, err := json.Marshal(&q.chat)
	if err != nil {
		return nil, nil, errcat.Internal(err)
	}
	return q, body, nil
}

// messageID is the id of the message answering r: msg_ and the request's
// id (x-request-id), unique per request and found in the gateway's logs.
func messageID(r *http.Request) string {
	return "msg_" + strings.TrimPrefix(httpx.InfoFrom(r.Context()).RequestID, "req_")
}
