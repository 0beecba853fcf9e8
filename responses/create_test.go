package responses_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/responses"
	"github.com/chatgw/gateway/upstream"
)

// TestCreateErrors: every refusal answers the gateway's error envelope with
// the catalog's status, code and a param naming the Responses API's field,
// and nothing reaches the upstream or the store.
func TestCreateErrors(t *testing.T) {
	req := func(extra string) string { return `{"model":"lm-4-scout","input":"hi"` + extra + `}` }
	items := func(item string) string { return `{"model":"lm-4-scout","input":[` + item + `]}` }
	parts := func(part string) string { return items(`{"role":"user","content":[` + part + `]}`) }
	tests := []struct {
		name, body string
		want       testkit.Error
	}{
		{"not JSON", `{"model":`, testkit.WantError(errcat.InvalidJSON, "")},
		{"not an object", `[]`, testkit.WantError(errcat.InvalidJSON, "")},
		{"missing model", `{"input":"hi"}`, testkit.WantError(errcat.MissingField, "model")},
		{"model not a string", `{"model":7,"input":"hi"}`, testkit.WantError(errcat.InvalidField, "model")},
		{"unknown model", `{"model":"gpt-4o","input":"hi"}`, testkit.WantError(errcat.ModelNotInAllowlist, "model")},
		{"missing input", `{"model":"lm-4-scout"}`, testkit.WantError(errcat.MissingField, "input")},
		{"empty input", `{"model":"lm-4-scout","input":[]}`, testkit.WantError(errcat.InvalidField, "input")},
		{"input type", `{"model":"lm-4-scout","input":7}`, testkit.WantError(errcat.InvalidField, "input")},
		{"unknown member", req(`,"frobnicate":1`), testkit.WantError(errcat.InvalidField, "frobnicate")},
		{"conversation", req(`,"conversation":"conv_1"`), testkit.WantError(errcat.InvalidField, "conversation")},
		{"prompt template", req(`,"prompt":{"id":"pmpt_1"}`), testkit.WantError(errcat.InvalidField, "prompt")},
		{"top_logprobs", req(`,"top_logprobs":2`), testkit.WantError(errcat.InvalidField, "top_logprobs")},
		{"background", req(`,"background":true`), testkit.WantError(errcat.InvalidField, "background")},
		{"truncation auto", req(`,"truncation":"auto"`), testkit.WantError(errcat.InvalidField, "truncation")},
		{"include", req(`,"include":["message.output_text.logprobs"]`), testkit.WantError(errcat.InvalidField, "include[0]")},
		{"reasoning effort", req(`,"reasoning":{"effort":"high"}`), testkit.WantError(errcat.InvalidField, "reasoning.effort")},
		{"reasoning summary", req(`,"reasoning":{"summary":"auto"}`), testkit.WantError(errcat.InvalidField, "reasoning.summary")},
		{"verbosity", req(`,"text":{"verbosity":"low"}`), testkit.WantError(errcat.InvalidField, "text.verbosity")},
		{"format type", req(`,"text":{"format":{"type":"xml"}}`), testkit.WantError(errcat.InvalidField, "text.format.type")},
		{"json_schema without name", req(`,"text":{"format":{"type":"json_schema","schema":{}}}`), testkit.WantError(errcat.MissingField, "text.format.name")},
		{"json_schema without schema", req(`,"text":{"format":{"type":"json_schema","name":"x"}}`), testkit.WantError(errcat.InvalidField, "text.format.schema")},
		{"web_search", req(`,"tools":[{"type":"web_search"}]`), testkit.WantError(errcat.InvalidField, "tools[0].type")},
		{"file_search", req(`,"tools":[{"type":"function","name":"f"},{"type":"file_search","vector_store_ids":["vs"]}]`), testkit.WantError(errcat.InvalidField, "tools[1].type")},
		{"code_interpreter", req(`,"tools":[{"type":"code_interpreter","container":{"type":"auto"}}]`), testkit.WantError(errcat.InvalidField, "tools[0].type")},
		{"computer use", req(`,"tools":[{"type":"computer_use_preview","display_width":1,"display_height":1,"environment":"linux"}]`), testkit.WantError(errcat.InvalidField, "tools[0].type")},
		{"mcp", req(`,"tools":[{"type":"mcp","server_label":"x","server_url":"https://x"}]`), testkit.WantError(errcat.InvalidField, "tools[0].type")},
		{"tool without name", req(`,"tools":[{"type":"function"}]`), testkit.WantError(errcat.MissingField, "tools[0].name")},
		{"tool parameters", req(`,"tools":[{"type":"function","name":"f","parameters":"{}"}]`), testkit.WantError(errcat.InvalidField, "tools[0].parameters")},
		{"tool_choice built-in", req(`,"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"web_search_preview"}`), testkit.WantError(errcat.InvalidField, "tool_choice.type")},
		{"tool_choice unknown function", req(`,"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}`), testkit.WantError(errcat.InvalidField, "tool_choice.name")},
		{"tool_choice required without tools", req(`,"tool_choice":"required"`), testkit.WantError(errcat.InvalidField, "tool_choice")},
		{"metadata values", req(`,"metadata":{"n":1}`), testkit.WantError(errcat.InvalidField, "metadata")},
		{"metadata too long", req(`,"metadata":{"k":"` + strings.Repeat("v", 513) + `"}`), testkit.WantError(errcat.InvalidField, "metadata.k")},
		{"temperature", req(`,"temperature":2.5`), testkit.WantError(errcat.InvalidField, "temperature")},
		{"temperature type", req(`,"temperature":"hot"`), testkit.WantError(errcat.InvalidField, "temperature")},
		{"stream type", req(`,"stream":"yes"`), testkit.WantError(errcat.InvalidField, "stream")},
		{"store type", req(`,"store":"no"`), testkit.WantError(errcat.InvalidField, "store")},
		{"max_output_tokens type", req(`,"max_output_tokens":1.5`), testkit.WantError(errcat.InvalidField, "max_output_tokens")},
		{"max_output_tokens zero", req(`,"max_output_tokens":0`), testkit.WantError(errcat.MaxTokensBelowMinimum, "max_output_tokens")},
		{"item type", items(`{"type":"reasoning","id":"rs_1","summary":[]}`), testkit.WantError(errcat.InvalidField, "input[0].type")},
		{"item without type", items(`{"content":"x"}`), testkit.WantError(errcat.MissingField, "input[0].type")},
		{"role", items(`{"role":"tool","content":"x"}`), testkit.WantError(errcat.InvalidField, "input[0].role")},
		{"content type", items(`{"role":"user","content":7}`), testkit.WantError(errcat.InvalidField, "input[0].content")},
		{"input_file", parts(`{"type":"input_file","file_id":"file_1"}`), testkit.WantError(errcat.InvalidField, "input[0].content[0].type")},
		{"image file_id", parts(`{"type":"input_image","file_id":"file_1"}`), testkit.WantError(errcat.InvalidField, "input[0].content[0].file_id")},
		{"image without url", parts(`{"type":"input_image"}`), testkit.WantError(errcat.MissingField, "input[0].content[0].image_url")},
		{"image in a system message", items(`{"role":"system","content":[{"type":"input_image","image_url":"data:image/png;base64,` + testkit.OnePixelPNG + `"}]}`), testkit.WantError(errcat.InvalidField, "input[0].content[0].type")},
		{"http image", parts(`{"type":"input_image","image_url":"https://example.com/cat.png"}`), testkit.WantError(errcat.ImageURLNotSupported, "input[].content[].image_url")},
		{"bad base64", parts(`{"type":"input_image","image_url":"data:image/png;base64,%%%%"}`), testkit.WantError(errcat.ImageBase64Invalid, "input[].content[].image_url")},
		{"image to a text model", strings.Replace(parts(`{"type":"input_image","image_url":"data:image/png;base64,`+testkit.OnePixelPNG+`"}`), "lm-4-scout", "lm-text", 1),
			testkit.WantError(errcat.ModelNotVisionCapable, "input[].content[].image_url")},
		{"message without content", items(`{"role":"user","content":null}`), testkit.WantError(errcat.MissingField, "input[0].content")},
		{"function_call_output without output", items(`{"type":"function_call_output","call_id":"c"}`), testkit.WantError(errcat.MissingField, "input[0].output")},
		{"function_call without call_id", items(`{"type":"function_call","name":"f","arguments":"{}"}`), testkit.WantError(errcat.MissingField, "input[0].call_id")},
		{"function_call arguments", items(`{"type":"function_call","call_id":"c","name":"f","arguments":"{not json"}`), testkit.WantError(errcat.ToolCallArgumentsInvalid, "input[].arguments")},
		{"function_call_output image", items(`{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"x"}]}`), testkit.WantError(errcat.InvalidField, "input[0].output[0].type")},
		{"item id too long", items(`{"role":"user","content":"x","id":"` + strings.Repeat("m", 129) + `"}`), testkit.WantError(errcat.InvalidField, "input[0].id")},
		{"unknown item_reference", items(`{"type":"item_reference","id":"msg_nope"}`), testkit.WantError(errcat.ResponseNotFound, "input[0].id")},
		{"unknown previous_response_id", req(`,"previous_response_id":"resp_nope"`), testkit.WantError(errcat.ResponseNotFound, "previous_response_id")},
		{"context window", `{"model":"lm-text","input":"` + strings.Repeat("word ", 100) + `"}`, testkit.WantError(errcat.ContextWindowExceeded, "input")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			w := e.serve(t, call{body: tt.body})
			testkit.CheckError(t, w, tt.want)
			if n := e.up.Calls(); n != 0 {
				t.Errorf("%d upstream calls, want none", n)
			}
		})
	}
}

// TestInjection: with GW-User-Id the memory and prompts come first, then
// the instructions; without it nothing is injected.
func TestInjection(t *testing.T) {
	var users []string
	e := newEnv(t, func(c *responses.Config) {
		c.Inject = func(_ context.Context, tenant, user string) (string, error) {
			users = append(users, tenant+"/"+user)
			return "Memory: likes tea.", nil
		}
	})
	body := `{"model":"lm-4-scout","instructions":"Be brief.","input":"hi"}`
	e.serve(t, call{body: body, user: "u1"})
	var sent struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	json.Unmarshal([]byte(e.up.Last(t)), &sent)
	if len(sent.Messages) != 3 || sent.Messages[0].Content != "Memory: likes tea." || sent.Messages[1].Content != "Be brief." {
		t.Errorf("messages sent %+v, want the injected system message, then the instructions", sent.Messages)
	}
	e.serve(t, call{body: body})
	json.Unmarshal([]byte(e.up.Last(t)), &sent)
	if len(sent.Messages) != 2 || len(users) != 1 || users[0] != "acme/u1" {
		t.Errorf("without GW-User-Id: messages %+v, injections %q; want none", sent.Messages, users)
	}
}

// TestJSONNoticeAndApplied: a JSON answer carries its notices in GW-Notice
// and a floored max_output_tokens in gw-applied and in the response; the
// response names the alias asked for, never the backend's model.
func TestJSONNoticeAndApplied(t *testing.T) {
	e := newEnv(t)
	e.up.Add(testkit.Fallback(testkit.JSON(testkit.Completion(`{"role":"assistant","content":"hi"}`, "stop"))))
	w := e.serve(t, call{body: `{"model":"lm-reason","max_output_tokens":5,"input":"hi"}`})
	if w.Code != http.StatusOK || w.Header().Get("Gw-Notice") != "backend_fallback" || w.Header().Get("Gw-Applied") != "max_tokens_floored=200" {
		t.Errorf("answer %d, headers %v; want 200 with GW-Notice backend_fallback and gw-applied", w.Code, w.Header())
	}
	var r struct {
		Model           string `json:"model"`
		MaxOutputTokens int    `json:"max_output_tokens"`
	}
	json.Unmarshal(w.Body.Bytes(), &r)
	if r.Model != "lm-reason" || r.MaxOutputTokens != 200 {
		t.Errorf("model %q, max_output_tokens %d; want the alias asked for and the floored cap", r.Model, r.MaxOutputTokens)
	}
}

// TestUpstreamErrors: an upstream failure before the first byte answers the
// gateway's envelope with its code.
func TestUpstreamErrors(t *testing.T) {
	e := newEnv(t)
	e.up.Add(func() (*upstream.Response, error) {
		return nil, errcat.New(errcat.UpstreamUnavailable, "", "No backend could be reached.")
	})
	w := e.serve(t, call{body: `{"model":"lm-4-scout","input":"hi"}`})
	testkit.CheckError(t, w, testkit.WantError(errcat.UpstreamUnavailable, ""))
}
