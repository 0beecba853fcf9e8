package quota_test

import (
	"testing"

	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/upstream"
)

func TestReserve(t *testing.T) {
	big := &upstream.ModelInfo{ContextWindow: 131072}
	small := &upstream.ModelInfo{ContextWindow: 1000}
	tests := []struct {
		name      string
		m         *upstream.ModelInfo
		prompt    int
		maxOutput int64
		want      int64
	}{
		{"max_tokens given", big, 10, 100, 110},
		{"no max_tokens, big window", big, 10, -1, 4106},
		{"no max_tokens, small window", small, 900, -1, 1000},
		{"prompt fills the window", small, 1200, -1, 1200},
		{"no model", nil, 5, -1, 4101},
	}
	for _, tt := range tests {
		if got := quota.Reserve(tt.m, tt.prompt, tt.maxOutput); got != tt.want {
			t.Errorf("%s: Reserve = %d, want %d", tt.name, got, tt.want)
		}
	}
}
