package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/chatgw/gateway/internal/wire"
	"github.com/google/go-cmp/cmp"
)

func TestToolCalls(t *testing.T) {
	var deltas [][]wire.ToolCallDelta
	for _, chunk := range []string{
		`[{"index":0,"id":"c1","type":"function","function":{"name":"look","arguments":""}}]`,
		`[{"index":1,"id":"c2","function":{"name":"time","arguments":"{}"}}]`,
		`[{"index":0,"function":{"name":"up","arguments":"{\"q\":"}}]`,
		`[{"index":0,"function":{"arguments":"\"cat\"}"}}]`,
		`[{"index":-1,"function":{"arguments":"ignored"}},{"index":5000,"function":{"arguments":"ignored"}}]`,
	} {
		var ds []wire.ToolCallDelta
		if err := json.Unmarshal([]byte(chunk), &ds); err != nil {
			t.Fatal(err)
		}
		deltas = append(deltas, ds)
	}
	var tc wire.ToolCalls
	for _, ds := range deltas {
		tc.Add(ds)
	}
	want := []wire.ToolCall{
		{ID: "c1", Type: "function", Function: wire.FunctionCall{Name: "lookup", Arguments: `{"q":"cat"}`}},
		{ID: "c2", Type: "function", Function: wire.FunctionCall{Name: "time", Arguments: `{}`}},
	}
	if diff := cmp.Diff(want, tc.Calls()); diff != "" {
		t.Errorf("Calls() mismatch (-want +got):\n%s", diff)
	}
	if got := tc.Size(); got != int64(len("lookup")+len(`{"q":"cat"}`)+len("time")+len("{}")) {
		t.Errorf("Size() = %d, want the bytes of the names and arguments kept", got)
	}
}

func TestIsNullAndContentText(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		null bool
		text string
	}{
		{raw: "", null: true},
		{raw: "null", null: true},
		{raw: `"hi"`, text: "hi"},
		{raw: `[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]`, text: "ab"},
		{raw: `{"not":"content"}`},
	} {
		raw := json.RawMessage(tc.raw)
		if got := wire.IsNull(raw); got != tc.null {
			t.Errorf("IsNull(%q) = %v, want %v", tc.raw, got, tc.null)
		}
		if got := wire.ContentText(raw); got != tc.text {
			t.Errorf("ContentText(%q) = %q, want %q", tc.raw, got, tc.text)
		}
	}
}

func TestUsedTokens(t *testing.T) {
	for _, tc := range []struct {
		usage string
		want  int64
	}{
		{``, -1},
		{`null`, -1},
		{`not json`, -1},
		{`{}`, -1},
		{`{"total_tokens":-1}`, -1},
		{`{"total_tokens":28,"prompt_tokens":12}`, 28},
		{`{"total_tokens":-1,"prompt_tokens":12}`, 12},
		{`{"prompt_tokens":12,"completion_tokens":16}`, 28},
		{`{"completion_tokens":-3}`, 0},
	} {
		if got := wire.UsedTokens(json.RawMessage(tc.usage)); got != tc.want {
			t.Errorf("UsedTokens(%q) = %d, want %d", tc.usage, got, tc.want)
		}
	}
}

func TestTokens(t *testing.T) {
	type counts struct {
		In, Out int64
		OK      bool
	}
	for _, tc := range []struct {
		usage string
		want  counts
	}{
		{``, counts{}},
		{`null`, counts{}},
		{`not json`, counts{}},
		{`[1]`, counts{}},
		{`{}`, counts{}},
		{`{"prompt_tokens":"12"}`, counts{}},
		{`{"prompt_tokens":12,"completion_tokens":16,"total_tokens":28}`, counts{12, 16, true}},
		{`{"prompt_tokens":8,"total_tokens":8}`, counts{8, 0, true}},                             // embeddings
		{`{"input_tokens":50,"output_tokens":4160,"total_tokens":4210}`, counts{50, 4160, true}}, // images
		{`{"prompt_tokens":3,"input_tokens":99,"output_tokens":5}`, counts{3, 5, true}},
		{`{"total_tokens":7}`, counts{7, 0, true}},
		{`{"prompt_tokens":-2,"completion_tokens":4}`, counts{0, 4, true}},
		{`{"completion_tokens":0}`, counts{0, 0, true}},
		{` {"prompt_tokens": 4 , "completion_tokens":2} `, counts{4, 2, true}},
		{`{"prompt_tokens":4.0,"completion_tokens":2}`, counts{0, 2, true}}, // not an integer: left out
		{`{"prompt_tokens":1e3}`, counts{}},
		{`{"prompt_tokens":99999999999999999999}`, counts{}},
		{`{"prompt_tokens":null,"output_tokens":6}`, counts{0, 6, true}},
		{`{"prompt_tokens":3,"prompt_tokens_details":{"cached_tokens":2}}`, counts{3, 0, true}},
		{`{"prompt_tokens":3`, counts{}},
		{`{"prompt_tokens":3} x`, counts{}},
	} {
		var got counts
		got.In, got.Out, got.OK = wire.Tokens(json.RawMessage(tc.usage))
		if got != tc.want {
			t.Errorf("Tokens(%q) = %+v, want %+v", tc.usage, got, tc.want)
		}
	}
}

// TestMessageLayout pins the bytes the constructors and Message write: they
// are stored (conversations, agent sessions), and a stored message is read
// back and compared as it was written.
func TestMessageLayout(t *testing.T) {
	user, err := wire.UserMessage(json.RawMessage(`[ {"type":"text", "text":"hi"} ]`))
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := json.Marshal(wire.Message{Role: "assistant", ToolCalls: []json.RawMessage{json.RawMessage(`{"id":"c1"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{
		string(wire.TextMessage("system", "be brief")),
		string(user),
		string(replayed),
		string(wire.AssistantMessage("", []wire.ToolCall{{ID: "c1", Type: "function", Function: wire.FunctionCall{Name: "now", Arguments: "{}"}}})),
		string(wire.AssistantMessage("hello", nil)),
		string(wire.ToolMessage("c1", `{"ok":true}`)),
	}
	want := []string{
		`{"role":"system","content":"be brief"}`,
		`{"role":"user","content":[{"type":"text","text":"hi"}]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1"}]}`,
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"now","arguments":"{}"}}]}`,
		`{"role":"assistant","content":"hello"}`,
		`{"role":"tool","tool_call_id":"c1","content":"{\"ok\":true}"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
	if _, err := wire.UserMessage(json.RawMessage(`{`)); err == nil {
		t.Error("UserMessage(invalid JSON) succeeded")
	}
}

// TestRequestLayout pins the order of a built request's members and which
// ones a zero value leaves out.
func TestRequestLayout(t *testing.T) {
	limit, topP, parallel := int32(5), 0.5, false
	for _, tc := range []struct {
		req  wire.Request
		want string
	}{
		{wire.Request{Model: "m", Messages: []json.RawMessage{}}, `{"model":"m","messages":[],"stream":false}`},
		{wire.Request{
			Model: "m", Messages: []json.RawMessage{wire.TextMessage("user", "hi")}, Stream: true,
			StreamOptions: &wire.StreamOptions{IncludeUsage: true}, MaxTokens: &limit,
			Tools: json.RawMessage(`[]`), ToolChoice: json.RawMessage(`"auto"`),
			ResponseFormat: json.RawMessage(`{"type":"text"}`), Attachments: json.RawMessage(`[]`),
		}, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},` +
			`"max_tokens":5,"tools":[],"tool_choice":"auto","response_format":{"type":"text"},"attachments":[]}`},
		{wire.Request{
			Model: "m", Messages: []json.RawMessage{}, TopP: &topP, Stop: []string{"END"},
			Tools: json.RawMessage(`[]`), ParallelToolCalls: &parallel,
		}, `{"model":"m","messages":[],"stream":false,"top_p":0.5,"stop":["END"],"tools":[],"parallel_tool_calls":false}`},
	} {
		b, err := json.Marshal(tc.req)
		if err != nil || string(b) != tc.want {
			t.Errorf("json.Marshal(%+v) = %s, %v; want %s", tc.req, b, err, tc.want)
		}
		if b, err = tc.req.Marshal(); err != nil || string(b) != tc.want {
			t.Errorf("Request.Marshal(%+v) = %s, %v; want %s", tc.req, b, err, tc.want)
		}
	}
}

// TestRequestMarshal: Request.Marshal, which copies the messages instead of
// having encoding/json compact them, writes the JSON value json.Marshal
// writes, whatever the model's and the messages' bytes; only the escaping of
// <, > and & inside the messages (json.Marshal's HTML escaping) differs.
func TestRequestMarshal(t *testing.T) {
	limit := int32(9)
	for name, req := range map[string]wire.Request{
		"nil messages": {Model: "m"},
		"one message":  {Model: "m", Messages: []json.RawMessage{wire.TextMessage("user", "hi")}},
		"history": {Model: "lm", Stream: true, StreamOptions: &wire.StreamOptions{IncludeUsage: true}, MaxTokens: &limit, Messages: []json.RawMessage{
			wire.TextMessage("system", "be <brief> & kind"),
			json.RawMessage(`{"role":"user","content":[{"type":"text","text":"look"}]}`),
			wire.TextMessage("assistant", "\u00e9 \"quoted\" \n line"),
			wire.TextMessage("user", `,"messages":[]`),
		}},
		"model that looks like the member": {Model: `x","messages":[],"y":"`, Messages: []json.RawMessage{wire.TextMessage("user", "hi")}},
		"model with escapes":               {Model: "<\u2028>\"\\", Messages: []json.RawMessage{wire.TextMessage("user", "hi")}, Tools: json.RawMessage(`[{"type":"function"}]`)},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(&req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := req.Marshal()
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if !json.Valid(got) {
				t.Fatalf("Marshal = %s, not JSON", got)
			}
			var w, g any
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("Marshal's value mismatch (-json.Marshal +Marshal):\n%s", diff)
			}
		})
	}
}

func TestChunkMeta(t *testing.T) {
	var ch wire.Chunk
	if err := json.Unmarshal([]byte(`{"id":"c","model":"m","created":7,"choices":[]}`), &ch); err != nil {
		t.Fatal(err)
	}
	if want := (wire.Meta{ID: "c", Model: "m", Created: 7}); ch.Meta != want {
		t.Errorf("Chunk.Meta = %+v, want %+v", ch.Meta, want)
	}
}

func TestTokensDoesNotAllocate(t *testing.T) {
	raw := json.RawMessage(`{"prompt_tokens":12,"completion_tokens":16,"total_tokens":28,"prompt_tokens_details":{"cached_tokens":0}}`)
	if n := testing.AllocsPerRun(100, func() { wire.Tokens(raw) }); n != 0 {
		t.Errorf("Tokens allocates %v times", n)
	}
}

// TestPartsMessage: one text part is a string content; other parts are the
// array, type first, an image's detail only when given.
func TestPartsMessage(t *testing.T) {
	text := func(s string) *string { return &s }
	tests := []struct {
		parts []wire.Part
		want  string
	}{
		{[]wire.Part{wire.TextPart(text("a <b>"))}, `{"role":"user","content":"a \u003cb\u003e"}`},
		{[]wire.Part{wire.ImagePart("data:image/png;base64,AA==", "")},
			`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}`},
		{[]wire.Part{wire.ImagePart("https://x/y.png", "low"), wire.TextPart(text("what?"))},
			`{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}},{"type":"text","text":"what?"}]}`},
		{[]wire.Part{wire.TextPart(text("one")), wire.TextPart(text("two"))},
			`{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}`},
	}
	for _, tt := range tests {
		got, err := wire.PartsMessage(tt.parts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, string(got)); diff != "" {
			t.Errorf("PartsMessage() mismatch (-want +got):\n%s", diff)
		}
	}
}
