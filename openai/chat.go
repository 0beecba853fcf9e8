package openai

import (
	"net/http"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/pipeline"
)

// ChatCompletions serves POST /v1/chat/completions (see the package doc): the
// client's body is the chat-completions request, checked and forwarded by the
// stateless chat pipeline (internal/pipeline) and relayed as the upstream
// answers it.
func (s *Service) ChatCompletions(w http.ResponseWriter, r *http.Request) {
	p, pf := s.chat.CheckRequest(w, r, nil, func(*auth.Principal) ([]byte, error) { return httpx.ReadBody(r) })
	if pf == nil {
		return
	}
	s.chat.Forward(w, r, p, pf, pipeline.Answer{})
}
