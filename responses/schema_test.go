package responses_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaFile holds OpenAI's own JSON Schemas of the Responses API (see its
// $comment): what the gateway sends on these routes must validate against
// them, as the clients generated from them expect.
const schemaFile = "testdata/openai-responses.schema.json"

var (
	schemasOnce sync.Once
	schemas     map[string]*jsonschema.Schema
	schemasErr  error
)

// openaiSchema returns the compiled schema name (Response,
// ResponseStreamEvent, ResponseItemList).
func openaiSchema(t testing.TB, name string) *jsonschema.Schema {
	t.Helper()
	schemasOnce.Do(func() {
		f, err := os.Open(schemaFile)
		if err != nil {
			schemasErr = err
			return
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			schemasErr = err
			return
		}
		c := jsonschema.NewCompiler()
		if schemasErr = c.AddResource("openai.json", doc); schemasErr != nil {
			return
		}
		schemas = map[string]*jsonschema.Schema{}
		for _, n := range []string{"Response", "ResponseStreamEvent", "ResponseItemList"} {
			if schemas[n], schemasErr = c.Compile("openai.json#/components/schemas/" + n); schemasErr != nil {
				return
			}
		}
	})
	if schemasErr != nil {
		t.Fatalf("OpenAI schemas: %v", schemasErr)
	}
	return schemas[name]
}

// validate checks that data, JSON the gateway sent, is an instance of
// OpenAI's schema name.
func validate(t testing.TB, name, data string) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(data))
	if err != nil {
		t.Fatalf("%s %q: %v", name, data, err)
	}
	if err := openaiSchema(t, name).Validate(inst); err != nil {
		t.Errorf("not a valid %s: %s\n%v", name, data, err)
	}
}

// validateStream checks every event of a Responses stream against
// ResponseStreamEvent (but the gateway's own gw.* events): its event: line
// is its type, and its sequence_number the next one.
func validateStream(t testing.TB, body string) []testkit.Event {
	t.Helper()
	evs := testkit.ParseSSE(t, body)
	for i, ev := range evs {
		if !strings.Contains(ev.Data, `"type":"`+ev.Type+`"`) {
			t.Errorf("event %d: event: %q, data %s: want the data's type", i, ev.Type, ev.Data)
		}
		if !strings.Contains(ev.Data, `"sequence_number":`+strconv.Itoa(i)+`,`) && !strings.Contains(ev.Data, `"sequence_number":`+strconv.Itoa(i)+`}`) {
			t.Errorf("event %d: %s: want sequence_number %d", i, ev.Data, i)
		}
		if strings.HasPrefix(ev.Type, "gw.") {
			continue
		}
		validate(t, "ResponseStreamEvent", ev.Data)
	}
	return evs
}

// TestSchemasCatchMistakes: the schemas are not vacuous: a text part
// without annotations and logprobs, a response without tools, or an event
// without its sequence_number fails them.
func TestSchemasCatchMistakes(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"ResponseStreamEvent", `{"type":"response.content_part.added","sequence_number":3,"item_id":"m","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}}`},
		{"ResponseStreamEvent", `{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"x","logprobs":[]}`},
		{"Response", `{"id":"r","object":"response","created_at":1,"status":"completed","error":null,"incomplete_details":null,"instructions":null,
			"model":"m","output":[],"parallel_tool_calls":true,"temperature":null,"top_p":null,"tool_choice":"auto","metadata":{}}`},
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.data))
		if err != nil {
			t.Fatal(err)
		}
		if openaiSchema(t, tc.name).Validate(inst) == nil {
			t.Errorf("%s validates as %s, want an error", tc.data, tc.name)
		}
	}
}

// TestGoldenFilesValidate: the golden answers as checked in (responses,
// streams, item lists) validate against OpenAI's schemas, whoever refreshed
// them last.
func TestGoldenFilesValidate(t *testing.T) {
	for pattern, schema := range map[string]string{"answer_*.golden": "Response", "stream_*.golden": "", "input_items.golden": "ResponseItemList"} {
		files, err := filepath.Glob(filepath.Join("testdata", pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("no golden files %s: %v", pattern, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if schema == "" {
				validateStream(t, string(b))
				continue
			}
			validate(t, schema, string(b))
		}
	}
}
