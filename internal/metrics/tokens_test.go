package metrics

import (
	"encoding/json"
	"testing"
)

func TestTokensOf(t *testing.T) {
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
		{`[1]`, counts{}},
		{`{}`, counts{}},
		{`{"total_tokens":7}`, counts{}},
		{`{"prompt_tokens":"12"}`, counts{}},
		{`{"prompt_tokens":12,"completion_tokens":16,"total_tokens":28}`, counts{12, 16, true}},
		{`{"prompt_tokens":8,"total_tokens":8}`, counts{8, 0, true}},                             // embeddings
		{`{"input_tokens":50,"output_tokens":4160,"total_tokens":4210}`, counts{50, 4160, true}}, // images
		{`{"prompt_tokens":3,"input_tokens":99}`, counts{3, 0, true}},
		{`{"prompt_tokens":-2,"completion_tokens":4}`, counts{0, 4, true}},
	} {
		var got counts
		got.In, got.Out, got.OK = tokensOf(json.RawMessage(tc.usage))
		if got != tc.want {
			t.Errorf("tokensOf(%s) = %+v, want %+v", tc.usage, got, tc.want)
		}
	}
}
