package preflight

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/jsonscan"
)

// DocumentHash returns the content_hash of a document attachment:
// sha256:<hex of the UTF-8 content>.
func DocumentHash(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// walkAttachments walks the top-level attachments value at v, recording the
// first shape error.
func (r *request) walkAttachments(s *scanner, v int) (int, error) {
	r.attach, r.attachBad = r.attach[:0], nil
	switch r.b[v] {
	case '[':
	case 'n':
		return s.Value(v)
	default:
		r.badAttachment(errcat.InvalidField, "attachments", "attachments must be an array.")
		return s.Value(v)
	}
	return s.Array(v, func(n, e int) (int, error) {
		at := "attachments[" + strconv.Itoa(n) + "]"
		if r.b[e] != '{' {
			r.badAttachment(errcat.InvalidField, at, at+" must be an object.")
			return s.Value(e)
		}
		var a attachment
		var kind span
		end, err := s.Object(e, func(k jsonscan.Key, e2 int) (int, error) {
			name := string(keyName(r.b, k))
			var field *span
			switch name {
			case "kind":
				field = &kind
			case "url":
				field = &a.url
			case "detail":
				field = &a.detail
			case "doc_name":
				field = &a.docName
			case "content":
				field = &a.content
			case "content_hash":
				field = &a.contentHash
			default:
				r.badAttachment(errcat.InvalidField, at+"."+name, "Unknown field "+at+"."+name+".")
				return s.Value(e2)
			}
			if r.b[e2] == 'n' && name != "kind" { // null: absent
				return s.Value(e2)
			}
			if r.b[e2] != '"' {
				r.badAttachment(errcat.InvalidField, at+"."+name, at+"."+name+" must be a string.")
				return s.Value(e2)
			}
			end, str, err := s.String(e2)
			*field = span{e2, end}
			switch name {
			case "content":
				a.contentLen = str.Len
			case "doc_name":
				a.docNameLen = str.Len
			}
			return end, err
		})
		if err != nil {
			return end, err
		}
		switch {
		case !kind.present():
			r.badAttachment(errcat.MissingField, at+".kind", at+".kind is required: image or document.")
		case strIs(r.raw(kind), "image"):
			if !a.url.present() {
				r.badAttachment(errcat.MissingField, at+".url", "An image attachment needs a url (a base64 data URI).")
			}
		case strIs(r.raw(kind), "document"):
			a.document = true
			if !a.docName.present() {
				r.badAttachment(errcat.MissingField, at+".doc_name", "A document attachment needs a doc_name.")
			} else if !a.content.present() {
				r.badAttachment(errcat.MissingField, at+".content", "A document attachment needs a content.")
			}
		default:
			r.badAttachment(errcat.InvalidField, at+".kind", at+".kind must be image or document.")
		}
		r.attach = append(r.attach, a)
		return end, nil
	})
}

func (r *request) badAttachment(code errcat.Code, param, msg string) {
	if r.attachBad == nil {
		r.attachBad = errcat.New(code, r.paramPrefix+param, msg)
	}
}

// checkHashes computes each document's hash and compares a given content_hash.
func (r *request) checkHashes() ([]Document, error) {
	if len(r.attach) == 0 {
		return nil, nil
	}
	var docs []Document
	for n, a := range r.attach {
		if !a.document {
			continue
		}
		hash := DocumentHash(jsonscan.Unquote(r.raw(a.content)))
		if a.contentHash.present() {
			given := jsonscan.Unquote(r.raw(a.contentHash))
			if !strings.EqualFold(given, hash) {
				return nil, errcat.Newf(errcat.InvalidField,
					r.paramPrefix+"attachments["+strconv.Itoa(n)+"].content_hash",
					"content_hash does not match the content; it must be %s.", hash)
			}
		}
		docs = append(docs, Document{Name: jsonscan.Unquote(r.raw(a.docName)), ContentHash: hash})
	}
	return docs, nil
}

func (r *request) raw(sp span) []byte { return r.b[sp.s:sp.e] }

// attachmentParts appends the content parts of the attachments, comma
// separated, to dst: image_url parts for images, a text part
// "Document <doc_name>:\n<content>" for documents. The client's string
// literals are spliced in without being decoded.
func (r *request) attachmentParts(dst []byte) []byte {
	for n, a := range r.attach {
		if n > 0 {
			dst = append(dst, ',')
		}
		if !a.document {
			dst = append(dst, `{"type":"image_url","image_url":{"url":`...)
			dst = append(dst, r.raw(a.url)...)
			if a.detail.present() {
				dst = append(dst, `,"detail":`...)
				dst = append(dst, r.raw(a.detail)...)
			}
			dst = append(dst, "}}"...)
			continue
		}
		name, content := r.raw(a.docName), r.raw(a.content)
		dst = append(dst, `{"type":"text","text":"Document `...)
		dst = append(dst, name[1:len(name)-1]...)
		dst = append(dst, `:\n`...)
		dst = append(dst, content[1:len(content)-1]...)
		dst = append(dst, `"}`...)
	}
	return dst
}

// attachmentsSize is the estimate's text bytes and image count of the
// attachments once converted.
func (r *request) attachmentsSize() (text, images int) {
	for _, a := range r.attach {
		if a.document {
			text += len("Document :\n") + a.docNameLen + a.contentLen
		} else {
			images++
		}
	}
	return text, images
}
