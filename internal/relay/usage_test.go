package relay_test

import (
	"encoding/json"
	"testing"

	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/wire"
)

func TestCaptureUsedTokens(t *testing.T) {
	tests := []struct {
		usage string
		want  int64
	}{
		{``, -1},
		{`{"total_tokens":28,"prompt_tokens":12}`, 28},
		{`{"prompt_tokens":12,"completion_tokens":16}`, 28},
		{`{"completion_tokens":-3}`, 0},
		{`{}`, -1},
		{`not json`, -1},
	}
	for _, tt := range tests {
		c := &relay.Capture{Usage: json.RawMessage(tt.usage)}
		if got := c.UsedTokens(); got != tt.want {
			t.Errorf("UsedTokens(%s) = %d, want %d", tt.usage, got, tt.want)
		}
	}
	var nilCapture *relay.Capture
	if got := nilCapture.UsedTokens(); got != -1 {
		t.Errorf("nil Capture = %d", got)
	}
}

func TestUsageOptions(t *testing.T) {
	for _, tt := range []struct {
		stream bool
		want   string
	}{{true, `{"stream_options":{"include_usage":true}}`}, {false, `{}`}} {
		b, err := json.Marshal(struct {
			O *wire.StreamOptions `json:"stream_options,omitempty"`
		}{relay.UsageOptions(tt.stream)})
		if err != nil || string(b) != tt.want {
			t.Errorf("UsageOptions(%v) encodes as %s, %v; want %s", tt.stream, b, err, tt.want)
		}
	}
}
