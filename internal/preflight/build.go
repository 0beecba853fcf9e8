package preflight

import (
	"bytes"
	"unicode/utf8"
)

// edit replaces b[at:end] with text while the messages value is copied.
type edit struct {
	at, end int
	text    []byte
}

// build assembles the body to forward: {"model":"<alias>"} first, then the
// client's members in order without attachments (and without earlier copies of
// a repeated member), with the system message inserted, the attachments
// converted and the floored max_tokens values. A body that needs none of that
// and already starts with {"model":"<alias>" is returned as it is.
func (r *request) build(alias, system string, floors [2][]byte) []byte {
	edits := r.messageEdits(system)
	if len(edits) == 0 && floors[0] == nil && floors[1] == nil && r.attachments < 0 && !r.dropped() &&
		bytes.HasPrefix(r.b, []byte(`{"model":`)) && r.members[0].val.s == len(`{"model":`) &&
		strIs(r.raw(r.members[0].val), alias) && !bytes.Contains(r.raw(r.members[0].val), []byte{'\\'}) {
		return r.b
	}
	size := len(r.b) + len(alias) + 16
	for _, e := range edits {
		size += len(e.text)
	}
	out := make([]byte, 0, size)
	out = append(out, `{"model":`...)
	out = appendString(out, alias)
	for i, mem := range r.members {
		if i == r.model || i == r.attachments || !mem.val.present() {
			continue
		}
		out = append(out, ',')
		out = append(out, r.raw(mem.key)...)
		out = append(out, ':')
		switch {
		case i == r.maxTokens && floors[0] != nil:
			out = append(out, floors[0]...)
		case i == r.maxCompletionTokens && floors[1] != nil:
			out = append(out, floors[1]...)
		case i == r.messages:
			at := mem.val.s
			for _, e := range edits {
				out = append(out, r.b[at:e.at]...)
				out = append(out, e.text...)
				at = e.end
			}
			out = append(out, r.b[at:mem.val.e]...)
		default:
			out = append(out, r.raw(mem.val)...)
		}
	}
	return append(out, '}')
}

// dropped reports whether a repeated member left an earlier copy to drop.
func (r *request) dropped() bool {
	for _, m := range r.members {
		if !m.val.present() {
			return true
		}
	}
	return false
}

// messageEdits returns the edits of the messages value, in order: the system
// message after '[', and the attachments' parts in the last user message (or a
// new user message at the end).
func (r *request) messageEdits(system string) []edit {
	var edits []edit
	msgs := r.members[r.messages].val
	if system != "" {
		text := []byte(`{"role":"system","content":`)
		text = appendString(text, system)
		text = append(text, "},"...)
		edits = append(edits, edit{at: msgs.s + 1, end: msgs.s + 1, text: text})
	}
	if len(r.attach) == 0 {
		return edits
	}
	last := -1
	for i, m := range r.msgs {
		if m.isUser {
			last = i
		}
	}
	if last < 0 {
		text := []byte(`,{"role":"user","content":[`)
		text = r.attachmentParts(text)
		text = append(text, "]}"...)
		return append(edits, edit{at: msgs.e - 1, end: msgs.e - 1, text: text})
	}
	m := r.msgs[last]
	c := m.content
	var text []byte
	switch {
	case !c.present(): // no content member: add one before the closing brace
		text = append(text, `,"content":[`...)
		text = r.attachmentParts(text)
		text = append(text, ']')
		return append(edits, edit{at: m.val.e - 1, end: m.val.e - 1, text: text})
	case r.b[c.s] == '"':
		text = append(text, '[')
		if c.len() > 2 {
			text = append(text, `{"type":"text","text":`...)
			text = append(text, r.raw(c)...)
			text = append(text, "},"...)
		}
		text = r.attachmentParts(text)
		text = append(text, ']')
		return append(edits, edit{at: c.s, end: c.e, text: text})
	case r.b[c.s] == '[' && !emptyArray(r.raw(c)):
		text = append(text, ',')
		text = r.attachmentParts(text)
		return append(edits, edit{at: c.e - 1, end: c.e - 1, text: text})
	default: // null or []
		text = append(text, '[')
		text = r.attachmentParts(text)
		text = append(text, ']')
		return append(edits, edit{at: c.s, end: c.e, text: text})
	}
}

func emptyArray(raw []byte) bool { return len(bytes.TrimSpace(raw[1:len(raw)-1])) == 0 }

// appendString appends s as a JSON string literal; invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
