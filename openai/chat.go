package openai

import (
	"net/http"

	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/pipeline"
)

// ChatCompletions serves POST /v1/chat/completions (see the package doc): the
// client's body is the chat-completions request, checked and forwarded by the
// stateless chat pipeline (internal/pipeline) and relayed as the upstream
// answers it.
func (s *Service) ChatCompletions(w http.ResponseWriter, r *http.Request) {
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	body, err := httpx.ReadBody(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	pf, err := s.chat.Check(r, p, body)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	s.chat.Forward(w, r, p, pf, pipeline.Answer{})
}
