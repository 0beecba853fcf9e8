package preflight

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
	s := &scanner{b: body}
	i := s.ws(0)
	if i >= len(body) || body[i] != '{' {
		return nil, errSyntax
	}
	end, err := s.object(i, func(key []byte, v int) (int, error) {
		keySpan := s.key
		var end int
		var err error
		switch string(key) {
		case "messages":
			end, err = r.walkMessages(s, v)
		case "attachments":
			end, err = r.walkAttachments(s, v)
		default:
			end, err = s.value(v)
		}
		if err != nil {
			return end, err
		}
		r.addMember(key, keySpan, span{v, end})
		return end, nil
	})
	if err != nil {
		return nil, err
	}
	if s.ws(end) != len(body) {
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
	if s.b[v] != '[' {
		r.msgsBad = true
		return s.value(v)
	}
	end, err := s.array(v, func(_, e int) (int, error) {
		if s.b[e] != '{' {
			r.msgsBad = true
			return s.value(e)
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
	end, err := s.object(v, func(key []byte, e int) (int, error) {
		switch string(key) {
		case "role":
			end, err := s.value(e)
			raw := s.b[e:end]
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
			end, err := s.value(e)
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
	switch s.b[v] {
	case '"':
		end, n, err := s.str(v)
		m.textBytes += n
		return end, err
	case 'n':
		return s.value(v)
	case '[':
		return s.array(v, func(_, e int) (int, error) {
			if s.b[e] != '{' {
				r.msgsBad = true
				return s.value(e)
			}
			return r.walkPart(s, e, m)
		})
	default:
		r.msgsBad = true
		return s.value(v)
	}
}

// walkPart walks one content part.
func (r *request) walkPart(s *scanner, v int, m *message) (int, error) {
	var typ, url span
	text, hasImageURL := 0, false
	end, err := s.object(v, func(key []byte, e int) (int, error) {
		switch string(key) {
		case "type":
			end, err := s.value(e)
			typ = span{e, end}
			return end, err
		case "text":
			if s.b[e] == '"' {
				end, n, err := s.str(e)
				text += n
				return end, err
			}
			end, err := s.value(e)
			text += end - e
			return end, err
		case "image_url":
			hasImageURL = true
			switch s.b[e] {
			case '"': // a bare URL string, accepted by some servers: checked too
				end, _, err := s.str(e)
				url = span{e, end}
				return end, err
			case '{':
				return s.object(e, func(key []byte, e2 int) (int, error) {
					end, err := s.value(e2)
					if string(key) == "url" && s.b[e2] == '"' {
						url = span{e2, end}
					}
					return end, err
				})
			default:
				return s.value(e)
			}
		default:
			end, err := s.value(e)
			text += end - e
			return end, err
		}
	})
	if typ.present() && strIs(s.b[typ.s:typ.e], "image_url") {
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
	switch s.b[v] {
	case 'n':
		return s.value(v)
	case '[':
	default:
		r.msgsBad = true
		return s.value(v)
	}
	return s.array(v, func(_, e int) (int, error) {
		if s.b[e] != '{' {
			r.msgsBad = true
			return s.value(e)
		}
		var args span
		end, err := s.object(e, func(key []byte, e2 int) (int, error) {
			if string(key) != "function" || s.b[e2] != '{' {
				return s.value(e2)
			}
			return s.object(e2, func(key []byte, e3 int) (int, error) {
				end, err := s.value(e3)
				if string(key) == "arguments" {
					args = span{e3, end}
				}
				return end, err
			})
		})
		r.toolArgs = append(r.toolArgs, args)
		return end, err
	})
}
