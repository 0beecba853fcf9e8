package responses

import (
	"encoding/json"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/wire"
)

// chatMessages translates items (resolved: no references) into chat
// messages: system and developer messages become system messages, user
// messages user messages (one text part alone as a string), an assistant
// message and the function_call items that follow it one assistant message
// with tool calls, a function_call_output a tool message.
func chatMessages(items []item) ([]json.RawMessage, error) {
	var (
		out   []json.RawMessage
		text  strings.Builder
		calls []wire.ToolCall
		open  bool // an assistant message is being built
	)
	flush := func() {
		if open {
			out = append(out, wire.AssistantMessage(text.String(), calls))
			text.Reset()
			calls, open = nil, false
		}
	}
	for _, it := range items {
		switch {
		case it.Type == "function_call":
			open = true
			calls = append(calls, wire.ToolCall{ID: it.CallID, Type: "function", Function: wire.FunctionCall{Name: it.Name, Arguments: *it.Arguments}})
		case it.Type == "message" && it.Role == "assistant":
			flush()
			open = true
			for _, p := range it.Content {
				switch {
				case p.Text != nil:
					text.WriteString(*p.Text)
				case p.Refusal != nil:
					text.WriteString(*p.Refusal)
				}
			}
		case it.Type == "function_call_output":
			flush()
			out = append(out, wire.ToolMessage(it.CallID, *it.Output))
		default:
			flush()
			msg, err := inputMessage(it)
			if err != nil {
				return nil, err
			}
			out = append(out, msg)
		}
	}
	flush()
	return out, nil
}

// inputMessage translates a user, system or developer message item.
func inputMessage(it item) (json.RawMessage, error) {
	if it.Role != "user" {
		var b strings.Builder
		for _, p := range it.Content {
			if p.Text != nil {
				b.WriteString(*p.Text)
			}
		}
		return wire.TextMessage("system", b.String()), nil
	}
	if len(it.Content) == 1 && it.Content[0].Text != nil {
		// PartsMessage's string content, without building the parts: the
		// common message of one text.
		return wire.TextMessage("user", *it.Content[0].Text), nil
	}
	parts := make([]wire.Part, 0, len(it.Content))
	for _, p := range it.Content {
		if p.ImageURL != nil {
			parts = append(parts, wire.ImagePart(*p.ImageURL, p.Detail))
			continue
		}
		parts = append(parts, wire.TextPart(p.Text))
	}
	msg, err := wire.PartsMessage(parts)
	if err != nil {
		return nil, errcat.Internal(err)
	}
	return msg, nil
}
