package preflight

import "github.com/chatgw/gateway/internal/jsonscan"

// span is the raw bytes b[s:e] of a value; the zero span is an absent value.
type span struct{ s, e int }

func (sp span) present() bool { return sp.e > 0 }
func (sp span) len() int      { return sp.e - sp.s }

// member is a top-level member of the body.
type member struct {
	name []byte // the decoded key
	key  span   // the key with its quotes, as the client wrote it
	val  span   // absent when a later member of the same name replaced it
}

// message is what the walk learned of one element of messages.
type message struct {
	val     span
	isUser  bool
	content span // the content value, or absent
	// textBytes is the estimate's text size of the message without images.
	textBytes int
	images    int
}

// imageRef is one content part's image to check.
type imageRef struct {
	url span // JSON string literal
}

// attachment is one entry of the top-level attachments array.
type attachment struct {
	document    bool
	url         span // image
	detail      span // image, optional
	docName     span // document
	content     span // document
	contentHash span // document, optional
	contentLen  int  // decoded bytes of content
	docNameLen  int
}

// request is the result of walking the body.
type request struct {
	b       []byte
	members []member
	// Indices into members of the known members (their last occurrence), or -1.
	model, messages, temperature, maxTokens, maxCompletionTokens, stream,
	streamOptions, attachments int

	msgs []message
	// msgsBad is set when messages is not an array of well-formed messages.
	msgsBad     bool
	images      []imageRef // content-part images, in order
	toolArgs    []span     // function.arguments values; absent span: missing
	attach      []attachment
	attachBad   error // the first attachment shape error
	paramPrefix string

	// membersBuf and msgsBuf hold the first members and messages, allocated
	// with the request: most chat requests fit.
	membersBuf [8]member
	msgsBuf    [8]message
}

var validRoles = [...]string{"system", "developer", "user", "assistant", "tool", "function"}

// parse walks body, which must be one JSON object; it fails only on invalid
// JSON. Shape problems are recorded for check to report in order.
func parse(body []byte, prefix string) (*request, error) {
	r := &request{
		b: body, paramPrefix: prefix,
		model: -1, messages: -1, temperature: -1, maxTokens: -1, maxCompletionTokens: -1,
		stream: -1, streamOptions: -1, attachments: -1,
	}
	r.members, r.msgs = r.membersBuf[:0], r.msgsBuf[:0]
	s := jsonscan.New(body)
	i := s.Space(0)
	if i >= len(body) || body[i] != '{' {
		return nil, errSyntax
	}
	end, err := s.Object(i, func(k jsonscan.Key, v int) (int, error) {
		key := keyName(body, k)
		var end int
		var err error
		switch string(key) {
		case "messages":
			end, err = r.walkMessages(&s, v)
		case "attachments":
			end, err = r.walkAttachments(&s, v)
		default:
			end, err = s.Value(v)
		}
		if err != nil {
			return end, err
		}
		r.addMember(key, span{k.Start, k.End}, span{v, end})
		return end, nil
	})
	if err != nil || s.Space(end) != len(body) {
		return nil, errSyntax
	}
	return r, nil
}

// addMember records a top-level member; a repeated key replaces the earlier one.
func (r *request) addMember(name []byte, key, val span) {
	idx := len(r.members)
	for j := range r.members {
		if string(r.members[j].name) == string(name) {
			r.members[j].val = span{} // dropped: the last occurrence wins
		}
	}
	r.members = append(r.members, member{name: name, key: key, val: val})
	switch string(name) {
	case "model":
		r.model = idx
	case "messages":
		r.messages = idx
	case "temperature":
		r.temperature = idx
	case "max_tokens":
		r.maxTokens = idx
	case "max_completion_tokens":
		r.maxCompletionTokens = idx
	case "stream":
		r.stream = idx
	case "stream_options":
		r.streamOptions = idx
	case "attachments":
		r.attachments = idx
	}
}

// walkMessages walks the messages value at v.
func (r *request) walkMessages(s *scanner, v int) (int, error) {
	// A repeated messages member replaces the earlier one.
	r.msgs, r.msgsBad, r.toolArgs = r.msgs[:0], false, r.toolArgs[:0]
	r.images = r.images[:0]
	if r.b[v] != '[' {
		r.msgsBad = true
		return s.Value(v)
	}
	end, err := s.Array(v, func(_, e int) (int, error) {
		if r.b[e] != '{' {
			r.msgsBad = true
			return s.Value(e)
		}
		return r.walkMessage(s, e)
	})
	if len(r.msgs) == 0 {
		r.msgsBad = true
	}
	return end, err
}

// walkMessage walks one message object at v.
func (r *request) walkMessage(s *scanner, v int) (int, error) {
	m := message{}
	roleOK := false
	end, err := s.Object(v, func(k jsonscan.Key, e int) (int, error) {
		switch string(keyName(r.b, k)) {
		case "role":
			end, err := s.Value(e)
			raw := r.b[e:end]
			for _, role := range validRoles {
				if strIs(raw, role) {
					roleOK = true
					m.isUser = role == "user"
				}
			}
			return end, err
		case "content":
			end, err := r.walkContent(s, e, &m)
			m.content = span{e, end}
			return end, err
		case "tool_calls":
			end, err := r.walkToolCalls(s, e)
			m.textBytes += end - e
			return end, err
		default:
			end, err := s.Value(e)
			m.textBytes += end - e
			return end, err
		}
	})
	if !roleOK {
		r.msgsBad = true
	}
	m.val = span{v, end}
	r.msgs = append(r.msgs, m)
	return end, err
}

// walkContent walks a message content: a string, null, or an array of parts.
func (r *request) walkContent(s *scanner, v int, m *message) (int, error) {
	switch r.b[v] {
	case '"':
		end, str, err := s.String(v)
		m.textBytes += str.Len
		return end, err
	case 'n':
		return s.Value(v)
	case '[':
		return s.Array(v, func(_, e int) (int, error) {
			if r.b[e] != '{' {
				r.msgsBad = true
				return s.Value(e)
			}
			return r.walkPart(s, e, m)
		})
	default:
		r.msgsBad = true
		return s.Value(v)
	}
}

// walkPart walks one content part.
func (r *request) walkPart(s *scanner, v int, m *message) (int, error) {
	var typ, url span
	text, hasImageURL := 0, false
	end, err := s.Object(v, func(k jsonscan.Key, e int) (int, error) {
		switch string(keyName(r.b, k)) {
		case "type":
			end, err := s.Value(e)
			typ = span{e, end}
			return end, err
		case "text":
			if r.b[e] == '"' {
				end, str, err := s.String(e)
				text += str.Len
				return end, err
			}
			end, err := s.Value(e)
			text += end - e
			return end, err
		case "image_url":
			hasImageURL = true
			switch r.b[e] {
			case '"': // a bare URL string, accepted by some servers: checked too
				end, _, err := s.String(e)
				url = span{e, end}
				return end, err
			case '{':
				return s.Object(e, func(k jsonscan.Key, e2 int) (int, error) {
					end, err := s.Value(e2)
					if string(keyName(r.b, k)) == "url" && r.b[e2] == '"' {
						url = span{e2, end}
					}
					return end, err
				})
			default:
				return s.Value(e)
			}
		default:
			end, err := s.Value(e)
			text += end - e
			return end, err
		}
	})
	if typ.present() && strIs(r.raw(typ), "image_url") {
		if !url.present() {
			r.msgsBad = true
			return end, err
		}
		r.images = append(r.images, imageRef{url: url})
		m.images++
		return end, err
	}
	if !typ.present() && hasImageURL {
		r.msgsBad = true
	}
	m.textBytes += text
	return end, err
}

// walkToolCalls walks an assistant's tool_calls and records each arguments.
func (r *request) walkToolCalls(s *scanner, v int) (int, error) {
	switch r.b[v] {
	case 'n':
		return s.Value(v)
	case '[':
	default:
		r.msgsBad = true
		return s.Value(v)
	}
	return s.Array(v, func(_, e int) (int, error) {
		if r.b[e] != '{' {
			r.msgsBad = true
			return s.Value(e)
		}
		var args span
		end, err := s.Object(e, func(k jsonscan.Key, e2 int) (int, error) {
			if string(keyName(r.b, k)) != "function" || r.b[e2] != '{' {
				return s.Value(e2)
			}
			return s.Object(e2, func(k jsonscan.Key, e3 int) (int, error) {
				end, err := s.Value(e3)
				if string(keyName(r.b, k)) == "arguments" {
					args = span{e3, end}
				}
				return end, err
			})
		})
		r.toolArgs = append(r.toolArgs, args)
		return end, err
	})
}
