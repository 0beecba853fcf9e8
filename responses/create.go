package responses

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/pipeline"
	"github.com/chatgw/gateway/internal/wire"
)

// Create serves POST /v1/responses (see the package doc): the request is
// translated into a chat-completions request (the items of its
// previous_response_id chain and its item references read from the store),
// run through the stateless chat pipeline as /v1/chat/completions is, and
// the answer translated back; with store (the default) the response is
// stored before the client's answer is acknowledged.
func (s *Service) Create(w http.ResponseWriter, r *http.Request) {
	var (
		o  owner
		q  *request
		in []item
	)
	p, pf := s.chat.CheckRequest(w, r, clientParams, func(p *auth.Principal) (body []byte, err error) {
		o = owner{tenant: p.Tenant.ID, user: httpx.UserID(r)}
		q, in, body, err = s.read(r, o)
		return body, err
	})
	if pf == nil {
		return
	}
	resp := newResponse(q, s.newID("resp"), q.chat.Model, s.clock.Now().Unix())
	if n := int32(pf.FlooredMaxTokens); n > 0 {
		// "silently raised to this value": the response says the cap applied,
		// as gw-applied does.
		resp.MaxOutputTokens = &n
	}
	enc := newEncoder(resp, s.newID, func() int64 { return s.clock.Now().Unix() }, s.maxBytes)
	a := pipeline.Answer{Encoder: enc}
	if q.store {
		a.Commit = s.commit(o, in, enc)
	}
	s.chat.Forward(w, r, p, pf, a)
}

// commit is the Commit step of a stored response (pipeline.Answer): it
// saves the response enc encoded, with its input items in, for o. Its
// arguments are copied into the step, so that the handler's variables,
// which CheckRequest's read sets, stay on the stack.
func (s *Service) commit(o owner, in []item, enc *encoder) func(context.Context) error {
	return func(ctx context.Context) error { return s.save(ctx, o, in, enc.final()) }
}

// read reads and translates the request of r by o: it returns the request,
// its input items as they are stored (references resolved, ids given) and
// the chat-completions body it becomes.
func (s *Service) read(r *http.Request, o owner) (*request, []item, []byte, error) {
	b, err := httpx.ReadBody(r)
	if err != nil {
		return nil, nil, nil, err
	}
	q, err := decodeRequest(b)
	if err != nil {
		return nil, nil, nil, err
	}
	res, err := s.resolve(r.Context(), o, q)
	if err != nil {
		return nil, nil, nil, err
	}
	in := s.giveIDs(res.input)
	var msgs []json.RawMessage
	if q.instructions != nil {
		msgs = append(msgs, wire.TextMessage("system", *q.instructions))
	}
	chat, err := chatMessages(slices.Concat(res.history, in))
	if err != nil {
		return nil, nil, nil, err
	}
	q.chat.Messages = append(msgs, chat...)
	body, err := json.Marshal(&q.chat)
	if err != nil {
		return nil, nil, nil, errcat.Internal(err)
	}
	return q, in, body, nil
}

// idPrefixes are the prefixes of the ids the gateway gives input items sent
// without one, by type.
var idPrefixes = map[string]string{"message": "msg", "function_call": "fc", "function_call_output": "fco"}

// giveIDs returns in with an id for each item sent without one, so that a
// later request can reference it.
func (s *Service) giveIDs(in []item) []item {
	out := slices.Clone(in)
	for i := range out {
		if out[i].ID == "" {
			out[i].ID = s.newID(idPrefixes[out[i].Type])
		}
	}
	return out
}

// clientParams are the params of the pre-flight checks (named for the
// chat-completions request) renamed for the Responses API request the client
// sent (pipeline.ClientError); the others are the same in both (model,
// temperature, stream).
var clientParams = map[string]string{
	"messages":                                   "input",
	"messages[].content[].image_url.url":         "input[].content[].image_url",
	"messages[].content[].image_url":             "input[].content[].image_url",
	"messages[].tool_calls[].function.arguments": "input[].arguments",
	"max_tokens":                                 "max_output_tokens",
}
