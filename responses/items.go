package responses

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/wire"
)

// Item is one item of a response's input or output as the gateway stores and
// answers it: a message, a function_call or a function_call_output, with its
// id. It marshals to the Responses API's item resources (InputMessageResource,
// OutputMessage, FunctionToolCallResource, FunctionToolCallOutputResource).
type item struct {
	ID     string `json:"id"`
	Type   string `json:"type"` // message, function_call, function_call_output
	Status string `json:"status,omitempty"`
	// A message's role and content.
	Role    string `json:"role,omitempty"`
	Content []part `json:"content,omitzero"`
	// A function call's call_id, name and arguments; a function call
	// output's call_id and output.
	CallID    string  `json:"call_id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
	Output    *string `json:"output,omitempty"`
}

// part is a content part of a message item: input_text, input_image (an
// input message's), output_text or refusal (an assistant message's).
// output_text parts always carry annotations and logprobs, empty ("the
// OpenAI schema requires annotations and logprobs on text parts").
type part struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	ImageURL    *string `json:"image_url,omitempty"`
	Detail      string  `json:"detail,omitempty"`
	Refusal     *string `json:"refusal,omitempty"`
	Annotations []any   `json:"annotations,omitzero"`
	Logprobs    []any   `json:"logprobs,omitzero"`
}

// outputText is the output_text part of text.
func outputText(text string) part {
	return part{Type: "output_text", Text: &text, Annotations: []any{}, Logprobs: []any{}}
}

// inItem is what the gateway reads of an element of input: an item, an
// "easy" message (a role and a content, no type) or an item_reference.
// Members it does not read (status, annotations, phase, ...) describe the
// item as OpenAI answered it and change nothing the model is sent.
type inItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// inPart is what the gateway reads of a content part.
type inPart struct {
	Type     string  `json:"type"`
	Text     *string `json:"text"`
	ImageURL *string `json:"image_url"`
	FileID   *string `json:"file_id"`
	Detail   string  `json:"detail"`
	Refusal  *string `json:"refusal"`
}

// input is the decoded input of a request: its items, in order, where a
// reference (an item_reference) is an item with only its ID and Type
// "item_reference" until the Service resolves it.
type input []item

// decodeInput reads input: a string (one user message) or an array of
// items. Params name the Responses API's fields: input[2].content[0].type.
func decodeInput(raw json.RawMessage) (input, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return input{{Type: "message", Role: "user", Status: "completed", Content: []part{{Type: "input_text", Text: &s}}}}, nil
	}
	var raws []json.RawMessage
	if json.Unmarshal(raw, &raws) != nil {
		return nil, errcat.New(errcat.InvalidField, "input", "input must be a string or an array of input items.")
	}
	if len(raws) == 0 {
		return nil, errcat.New(errcat.InvalidField, "input", "input must not be an empty array.")
	}
	out := make(input, 0, len(raws))
	for i, r := range raws {
		at := fmt.Sprintf("input[%d]", i)
		var in inItem
		if json.Unmarshal(r, &in) != nil {
			return nil, errcat.Newf(errcat.InvalidField, at, "%s must be an input item object.", at)
		}
		it, err := decodeItem(at, in)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// decodeItem checks one input item and returns it as the gateway stores it.
func decodeItem(at string, in inItem) (item, error) {
	typ := in.Type
	if typ == "" && in.Role != "" {
		typ = "message" // an "easy" input message
	}
	if len(in.ID) > maxIDLen {
		// An id is a key of the item index: one that long could not be
		// stored, nor found.
		return item{}, errcat.Newf(errcat.InvalidField, at+".id", "%s.id holds at most %d bytes.", at, maxIDLen)
	}
	it := item{ID: in.ID, Type: typ, Status: "completed"}
	switch typ {
	case "message":
		return decodeMessage(at, in, it)
	case "function_call":
		switch {
		case in.CallID == "":
			return item{}, errcat.Newf(errcat.MissingField, at+".call_id", "%s.call_id is required.", at)
		case in.Name == "":
			return item{}, errcat.Newf(errcat.MissingField, at+".name", "%s.name is required.", at)
		case in.Arguments == nil:
			return item{}, errcat.Newf(errcat.MissingField, at+".arguments", "%s.arguments is required.", at)
		}
		it.CallID, it.Name, it.Arguments = in.CallID, in.Name, in.Arguments
		return it, nil
	case "function_call_output":
		if in.CallID == "" {
			return item{}, errcat.Newf(errcat.MissingField, at+".call_id", "%s.call_id is required.", at)
		}
		out, err := callOutput(at+".output", in.Output)
		if err != nil {
			return item{}, err
		}
		it.CallID, it.Output = in.CallID, &out
		return it, nil
	case "item_reference":
		if in.ID == "" {
			return item{}, errcat.Newf(errcat.MissingField, at+".id", "%s.id is required.", at)
		}
		return item{ID: in.ID, Type: typ}, nil
	case "":
		return item{}, errcat.Newf(errcat.MissingField, at+".type", "%s.type is required (or a role, for a message).", at)
	}
	return item{}, errcat.Newf(errcat.InvalidField, at+".type",
		"%s.type %s is not supported: the gateway translates message, function_call, function_call_output and item_reference items "+
			"(built-in tools, reasoning and other items need OpenAI's servers).", at, strconv.Quote(typ))
}

// decodeMessage checks a message item: its role and its content, a string or
// an array of parts, which becomes an array of parts.
func decodeMessage(at string, in inItem, it item) (item, error) {
	switch in.Role {
	case "user", "system", "developer", "assistant":
	case "":
		return item{}, errcat.Newf(errcat.MissingField, at+".role", "%s.role is required.", at)
	default:
		return item{}, errcat.Newf(errcat.InvalidField, at+".role", "%s.role must be user, system, developer or assistant.", at)
	}
	it.Role = in.Role
	if wire.IsNull(in.Content) {
		return item{}, errcat.Newf(errcat.MissingField, at+".content", "%s.content is required.", at)
	}
	var s string
	if json.Unmarshal(in.Content, &s) == nil {
		if in.Role == "assistant" {
			it.Content = []part{outputText(s)}
		} else {
			it.Content = []part{{Type: "input_text", Text: &s}}
		}
		return it, nil
	}
	var parts []inPart
	if json.Unmarshal(in.Content, &parts) != nil {
		return item{}, errcat.Newf(errcat.InvalidField, at+".content", "%s.content must be a string or an array of content parts.", at)
	}
	it.Content = make([]part, 0, len(parts))
	for j, p := range parts {
		pt, err := decodePart(fmt.Sprintf("%s.content[%d]", at, j), in.Role, p)
		if err != nil {
			return item{}, err
		}
		it.Content = append(it.Content, pt)
	}
	return it, nil
}

// decodePart checks one content part of a message of role: input_text and
// input_image of user messages, input_text of system and developer
// messages, output_text and refusal of assistant messages.
func decodePart(at, role string, p inPart) (part, error) {
	assistant := role == "assistant"
	switch {
	case (p.Type == "input_text" && !assistant) || (p.Type == "output_text" && assistant):
		if p.Text == nil {
			return part{}, errcat.Newf(errcat.MissingField, at+".text", "%s.text is required.", at)
		}
		if assistant {
			return outputText(*p.Text), nil
		}
		return part{Type: p.Type, Text: p.Text}, nil
	case p.Type == "refusal" && assistant:
		if p.Refusal == nil {
			return part{}, errcat.Newf(errcat.MissingField, at+".refusal", "%s.refusal is required.", at)
		}
		return part{Type: p.Type, Refusal: p.Refusal}, nil
	case p.Type == "input_image" && role == "user":
		return imagePart(at, p)
	}
	return part{}, errcat.Newf(errcat.InvalidField, at+".type",
		"%s.type %s is not supported in a %s message: the gateway translates input_text and input_image (data URIs) parts of user messages, "+
			"input_text of system and developer messages, output_text and refusal of assistant messages (files need OpenAI's Files API).",
		at, strconv.Quote(p.Type), role)
}

// imagePart checks an input_image part: an image_url (a data URI, checked by
// the pre-flight checks as on /v1; an http(s) URL is refused there as on
// /v1); a file_id needs OpenAI's Files API.
func imagePart(at string, p inPart) (part, error) {
	if p.FileID != nil {
		return part{}, errcat.Newf(errcat.InvalidField, at+".file_id",
			"%s.file_id is not supported: it needs OpenAI's Files API; send the image as a data URI in image_url.", at)
	}
	if p.ImageURL == nil || *p.ImageURL == "" {
		return part{}, errcat.Newf(errcat.MissingField, at+".image_url", "%s.image_url is required (a data: URI).", at)
	}
	detail := p.Detail
	switch detail {
	case "":
		detail = "auto"
	case "auto", "low", "high":
	default:
		return part{}, errcat.Newf(errcat.InvalidField, at+".detail", "%s.detail must be auto, low or high.", at)
	}
	return part{Type: "input_image", ImageURL: p.ImageURL, Detail: detail}, nil
}

// callOutput reads a function_call_output's output: a string, or an array of
// input_text parts, joined.
func callOutput(at string, raw json.RawMessage) (string, error) {
	if wire.IsNull(raw) {
		return "", errcat.Newf(errcat.MissingField, at, "%s is required.", at)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []inPart
	if json.Unmarshal(raw, &parts) != nil {
		return "", errcat.Newf(errcat.InvalidField, at, "%s must be a string or an array of input_text parts.", at)
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "input_text" || p.Text == nil {
			return "", errcat.Newf(errcat.InvalidField, fmt.Sprintf("%s[%d].type", at, j),
				"%s[%d] must be an input_text part: a tool message of chat completions carries text only.", at, j)
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}
