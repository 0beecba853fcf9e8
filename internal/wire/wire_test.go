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
