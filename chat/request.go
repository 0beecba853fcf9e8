package chat

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/wire"
)

// chatRequest is the ChatRequest body of POST /c1/chat. Fields whose JSON type
// has alternatives (message, images, tools, tool_choice, response_format,
// attachments) are kept raw and checked by validate; the others are typed so
// that httpx.Decode answers invalid_field body.<name> for a wrong JSON type.
// user_id is not a field: httpx.Decode answers body.user_id for it.
type chatRequest struct {
	Message        json.RawMessage `json:"message"`
	ConversationID *string         `json:"conversation_id"`
	Model          *string         `json:"model"`
	Provider       *string         `json:"provider"`
	SystemPrompt   *string         `json:"system_prompt"`
	Stream         *bool           `json:"stream"`
	Ephemeral      *bool           `json:"ephemeral"`
	Images         json.RawMessage `json:"images"`
	KeepLastTurns  *int32          `json:"keep_last_turns"`
	MaxTokens      *int32          `json:"max_tokens"`
	Temperature    *float64        `json:"temperature"`
	Tools          json.RawMessage `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	ResponseFormat json.RawMessage `json:"response_format"`
	// Attachments is "the same additive field" as on /v1/chat/completions,
	// handled by the shared pre-flight checks exactly as there.
	Attachments json.RawMessage `json:"attachments"`
}

// imageRef is an ImageRef of the images field.
type imageRef struct {
	URL    string  `json:"url"`
	Detail *string `json:"detail,omitempty"`
}

// Providers of the provider enum.
var providers = [...]string{"auto", "local", "cloudA", "cloudB"}

// maxConversationIDLength bounds conversation ids (bytes); the conversation store
// keys on them.
const maxConversationIDLength = 256

func invalid(param, format string, args ...any) *errcat.Error {
	return errcat.Newf(errcat.InvalidField, param, format, args...)
}

// validate checks the field rules of ChatRequest that decoding does not, and
// returns the images of the images field (nil when message is a parts array,
// where images is ignored).
func (q *chatRequest) validate() ([]imageRef, error) {
	if wire.IsNull(q.Message) {
		return nil, errcat.New(errcat.MissingField, "body.message", "message is required.")
	}
	isText := q.Message[0] == '"'
	switch q.Message[0] {
	case '"':
	case '[':
		if err := validateParts(q.Message); err != nil {
			return nil, err
		}
	default:
		return nil, invalid("body.message", "message must be a string or an array of content parts.")
	}
	if q.Model != nil && strings.TrimSpace(*q.Model) == "" {
		return nil, invalid("body.model", "model must not be empty.")
	}
	if q.Provider != nil && !validProvider(*q.Provider) {
		return nil, invalid("body.provider", "provider must be one of auto, local, cloudA, cloudB.")
	}
	if q.Temperature != nil && (*q.Temperature < 0 || *q.Temperature > 2) {
		return nil, invalid("body.temperature", "temperature must be between 0 and 2.")
	}
	if q.KeepLastTurns != nil && *q.KeepLastTurns < 0 {
		return nil, invalid("body.keep_last_turns", "keep_last_turns must be at least 0.")
	}
	if q.MaxTokens != nil {
		switch {
		case *q.MaxTokens < 0:
			return nil, invalid("body.max_tokens", "max_tokens must be at least 0.")
		case *q.MaxTokens == 0:
			return nil, errcat.New(errcat.MaxTokensBelowMinimum, "max_tokens", "max_tokens must be at least 1.")
		}
	}
	if !wire.IsNull(q.Tools) && q.Tools[0] != '[' {
		return nil, invalid("body.tools", "tools must be an array of tool definitions.")
	}
	if !wire.IsNull(q.ToolChoice) && !validToolChoice(q.ToolChoice) {
		return nil, invalid("body.tool_choice", "tool_choice must be auto, none, required or a function object.")
	}
	if !wire.IsNull(q.ResponseFormat) && q.ResponseFormat[0] != '{' {
		return nil, invalid("body.response_format", "response_format must be an object.")
	}
	if !wire.IsNull(q.Attachments) && q.Attachments[0] != '[' {
		return nil, invalid("body.attachments", "attachments must be an array.")
	}
	images, err := decodeImages(q.Images)
	if err != nil || !isText {
		return nil, err
	}
	return images, nil
}

func validProvider(p string) bool {
	for _, v := range providers {
		if p == v {
			return true
		}
	}
	return false
}

func validToolChoice(raw json.RawMessage) bool {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s == "auto" || s == "none" || s == "required"
	}
	return raw[0] == '{'
}

// validateParts checks that a parts array holds objects with a string type, a
// text part a string text and an image_url part an image_url object with a
// string url. What the image itself must be is left to the pre-flight checks.
func validateParts(raw json.RawMessage) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return invalid("body.message", "message must be a string or an array of content parts.")
	}
	if len(parts) == 0 {
		return invalid("body.message", "message must not be an empty array.")
	}
	for i, p := range parts {
		// Not wire.ContentPart: pointers, because what is checked here is
		// whether a member is there at all.
		var part struct {
			Type     *string `json:"type"`
			Text     *string `json:"text"`
			ImageURL *struct {
				URL *string `json:"url"`
			} `json:"image_url"`
		}
		param := fmt.Sprintf("body.message[%d]", i)
		if wire.IsNull(p) || p[0] != '{' || json.Unmarshal(p, &part) != nil || part.Type == nil {
			return invalid(param, "Each content part must be an object with a string type.")
		}
		switch *part.Type {
		case "text":
			if part.Text == nil {
				return invalid(param+".text", "A text part needs a string text.")
			}
		case "image_url":
			if part.ImageURL == nil || part.ImageURL.URL == nil {
				return invalid(param+".image_url.url", "An image_url part needs an image_url object with a string url.")
			}
		}
	}
	return nil
}

// decodeImages decodes the images field: an array of ImageRef, each an object
// with a string url and an optional string detail, and nothing else.
func decodeImages(raw json.RawMessage) ([]imageRef, error) {
	if wire.IsNull(raw) {
		return nil, nil
	}
	var entries []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &entries) != nil {
		return nil, invalid("body.images", "images must be an array of {url, detail} objects.")
	}
	images := make([]imageRef, 0, len(entries))
	for i, e := range entries {
		param := fmt.Sprintf("body.images[%d]", i)
		if wire.IsNull(e) || e[0] != '{' {
			return nil, invalid(param, "Each image must be an object {url, detail}.")
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(e, &fields); err != nil {
			return nil, invalid(param, "Each image must be an object {url, detail}.")
		}
		var img imageRef
		for k, v := range fields {
			switch k {
			case "url":
				if json.Unmarshal(v, &img.URL) != nil || wire.IsNull(v) {
					return nil, invalid(param+".url", "url must be a string.")
				}
			case "detail":
				if wire.IsNull(v) {
					continue
				}
				var d string
				if json.Unmarshal(v, &d) != nil {
					return nil, invalid(param+".detail", "detail must be a string.")
				}
				img.Detail = &d
			default:
				return nil, invalid(param+"."+k, "Unknown field %s.", k)
			}
		}
		if _, ok := fields["url"]; !ok {
			return nil, errcat.New(errcat.MissingField, param+".url", "Each image needs a url.")
		}
		images = append(images, img)
	}
	return images, nil
}

// Conversation-id headers: both names are sent and either is accepted.
const (
	HeaderConversationID  = "Gw-Conversation-Id"
	HeaderXConversationID = "X-Conversation-Id"
)

// conversationID returns the conversation id of the request: the body's, or the
// header's; both present and different is invalid_field body.conversation_id.
// An empty body value counts as absent. It returns "" when none is given.
func conversationID(r *http.Request, body *string) (string, error) {
	h, err := headerConversationID(r)
	if err != nil {
		return "", err
	}
	b := ""
	if body != nil {
		b = *body
	}
	switch {
	case len(b) > maxConversationIDLength:
		return "", invalid("body.conversation_id", "conversation_id must be at most %d bytes.", maxConversationIDLength)
	case unaddressable(b):
		return "", invalid("body.conversation_id", unaddressableMsg)
	case b != "" && h != "" && b != h:
		return "", invalid("body.conversation_id", "conversation_id differs from the conversation-id header.")
	case b != "":
		return b, nil
	}
	return h, nil
}

// unaddressableMsg says why an id with a slash or a control character is
// refused.
const unaddressableMsg = "conversation_id must not contain / or control characters: GET /c1/conversations/{id} could not address it."

// unaddressable reports an id that the conversation routes could not address:
// a slash splits the path (even encoded, as %2F), and control characters do
// not travel in a URL or a header.
func unaddressable(id string) bool {
	return strings.ContainsFunc(id, func(c rune) bool { return c == '/' || c < 0x20 || c == 0x7f })
}

// headerConversationID returns the id of the gw-conversation-id or
// x-conversation-id header ("" when neither is set). The two set to different
// values is invalid_field headers.x-conversation-id; one longer than
// maxConversationIDLength or not UTF-8 (a body's id always is: it would list
// as another id) is invalid_field naming that header.
func headerConversationID(r *http.Request) (string, error) {
	g := strings.TrimSpace(r.Header.Get(HeaderConversationID))
	x := strings.TrimSpace(r.Header.Get(HeaderXConversationID))
	badID := func(id string) bool {
		return len(id) > maxConversationIDLength || !utf8.ValidString(id) || unaddressable(id)
	}
	const badMsg = "The conversation id must be at most %d bytes of UTF-8, without / or control characters."
	switch {
	case g != "" && x != "" && g != x:
		return "", invalid("headers.x-conversation-id", "gw-conversation-id and x-conversation-id name different conversations.")
	case badID(g):
		return "", invalid("headers.gw-conversation-id", badMsg, maxConversationIDLength)
	case badID(x):
		return "", invalid("headers.x-conversation-id", badMsg, maxConversationIDLength)
	case g != "":
		return g, nil
	}
	return x, nil
}

// setConversationHeaders sends id under both header names.
func setConversationHeaders(w http.ResponseWriter, id string) {
	w.Header().Set(HeaderConversationID, id)
	w.Header().Set(HeaderXConversationID, id)
}

// decodeRequest reads the body of r; validate checks it.
func decodeRequest(r *http.Request) (*chatRequest, error) {
	q := new(chatRequest)
	if err := httpx.Decode(r, q); err != nil {
		return nil, err
	}
	return q, nil
}
