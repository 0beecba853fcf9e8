package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chatgw/gateway"
)

// TestAnthropicRoutes: the Messages API is routed with scope chat:write and
// GW-User-Id optional; x-api-key authenticates there as everywhere; every
// error of its routes, the middleware's included, has Anthropic's shape, and
// the other routes keep the gateway's envelope. GET /v1/models/{id} answers
// the list's entry.
func TestAnthropicRoutes(t *testing.T) {
	e := newEnv(t, gateway.WithBodyLimit(4096))
	apiKey := func(tok string) http.Header { return http.Header{"X-Api-Key": {tok}} }
	msg := `{"model":"lm-4-scout","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name      string
		call      call
		want      string
		anthropic bool // the error is in Anthropic's shape
	}{
		{"message with a bearer", call{method: "POST", path: "/v1/messages", token: "member", body: msg}, "OK", false},
		{"message with x-api-key", call{method: "POST", path: "/v1/messages", body: msg, header: apiKey("member")}, "OK", false},
		{"count_tokens", call{method: "POST", path: "/v1/messages/count_tokens", body: `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}]}`, header: apiKey("member")}, "OK", false},
		{"no token", call{method: "POST", path: "/v1/messages", body: msg}, "Unauthorized missing_authorization headers.authorization", true},
		{"wrong x-api-key", call{method: "POST", path: "/v1/messages", body: msg, header: apiKey("nope")}, "Unauthorized invalid_authorization headers.authorization", true},
		{"two tokens", call{method: "POST", path: "/v1/messages", token: "admin", body: msg, header: apiKey("member")}, "Unauthorized invalid_authorization headers.authorization", true},
		{"body user_id", call{method: "POST", path: "/v1/messages", token: "member", body: `{"user_id":"u"}`}, "Bad Request invalid_field body.user_id", true},
		{"body too large", call{method: "POST", path: "/v1/messages", token: "member", body: `{"x":"` + strings.Repeat("a", 5000) + `"}`}, "Request Entity Too Large body_too_large null", true},
		{"missing max_tokens", call{method: "POST", path: "/v1/messages", token: "member", body: `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}]}`}, "Bad Request missing_field max_tokens", true},
		{"x-api-key on another route", call{method: "GET", path: "/v1/models", header: apiKey("member")}, "OK", false},
		{"wrong x-api-key on another route", call{method: "GET", path: "/v1/models", header: apiKey("nope")}, "Unauthorized invalid_authorization headers.authorization", false},
		{"model", call{method: "GET", path: "/v1/models/lm-4-scout", token: "member"}, "OK", false},
		{"unknown model", call{method: "GET", path: "/v1/models/claude-opus", token: "member"}, "Not Found route_not_found null", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := e.do(t, tt.call)
			if got := outcome(resp, b); got != tt.want {
				t.Errorf("%s %s = %q, want %q (%s)", tt.call.method, tt.call.path, got, tt.want, b)
			}
			if resp.StatusCode < 400 {
				return
			}
			var top map[string]json.RawMessage
			json.Unmarshal(b, &top)
			_, gwCode := top["gw_code"]
			if isAnthropic := string(top["type"]) == `"error"` && !gwCode; isAnthropic != tt.anthropic {
				t.Errorf("error body %s: Anthropic's shape %v, want %v", b, isAnthropic, tt.anthropic)
			}
		})
	}
	// The list's entry and the model, alike.
	_, list := e.do(t, call{method: "GET", path: "/v1/models", token: "member"})
	_, one := e.do(t, call{method: "GET", path: "/v1/models/lm-4-scout", token: "member"})
	var l struct{ Data []json.RawMessage }
	json.Unmarshal(list, &l)
	if len(l.Data) == 0 || strings.TrimSpace(string(one)) != string(l.Data[0]) {
		t.Errorf("GET /v1/models/lm-4-scout = %s, want the list's first entry %s", one, l.Data)
	}
}
