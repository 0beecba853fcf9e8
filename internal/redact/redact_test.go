package redact_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/redact"
)

func TestString(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"nothing to redact", "dial tcp 10.0.0.5:11434: connect: connection refused", "dial tcp 10.0.0.5:11434: connect: connection refused"},
		{"empty", "", ""},
		{"bearer", "sent Bearer abc.def-123 upstream", "sent Bearer [redacted] upstream"},
		{"bearer lower case, quoted", `"bearer tok/en=="`, `"bearer [redacted]"`},
		{"bearer as a word only", "bearers and unbearer x", "bearers and unbearer x"},
		{"authorization header", "Authorization: Basic dXNlcjpwYXNz\nHost: x", "Authorization: [redacted]\nHost: x"},
		{"authorization in JSON", `{"Authorization":"Bearer abc"}`, `{"Authorization":"[redacted]"}`},
		{"sk key", "Incorrect API key provided: sk-proj-AbC123xyz789.", "Incorrect API key provided: [redacted]."},
		{"other key shapes", "gsk_abcdefgh12 xai-ABCDEFGH12 pk_live_12345678", "[redacted] [redacted] [redacted]"},
		{"short sk is a word", "sk-short and task-abcdefghij", "sk-short and task-abcdefghij"},
		{"jwt", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig rest", "token [redacted] rest"},
		{"api_key in a query", "GET /v1/x?model=m&api_key=s3cr3t&x=1", "GET /v1/x?model=m&api_key=[redacted]&x=1"},
		{"apikey and x-api-key", `apikey=abc x-api-key: def`, `apikey=[redacted]`},
		{"x-api-key in JSON", `{"x-api-key": "abc", "n": 1}`, `{"x-api-key": "[redacted]", "n": 1}`},
		{"content string", `{"role":"user","content":"my secret \"plan\""}`, `{"role":"user","content":"[redacted]"}`},
		{"content parts", `{"content":[{"type":"text","text":"a ] } b"}],"n":1}`, `{"content":[redacted],"n":1}`},
		{"messages", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`, `{"model":"m","messages":[redacted],"stream":true}`},
		{"arguments string", `"arguments":"{\"q\":\"x\"}"`, `"arguments":"[redacted]"`},
		{"arguments object", `"arguments": {"q": "x"}`, `"arguments": [redacted]`},
		{"input, prompt, text", `{"input":["a","b"],"prompt":"p","text":"t"}`, `{"input":[redacted],"prompt":"[redacted]","text":"[redacted]"}`},
		{"suffixes", `{"system_prompt":"s","confirm_token":"c","error.message":"m","max_tokens":5}`, `{"system_prompt":"[redacted]","confirm_token":"[redacted]","error.message":"[redacted]","max_tokens":5}`},
		{"bare secret to the delimiter", "api_key: hello world, more", "api_key: [redacted], more"},
		{"content in a query or form", "GET /x?prompt=tell me&n=1", "GET /x?prompt=[redacted]&n=1"},
		{"content names in plain text", "backend local (lm-embed-text:v1.5) answered 500, text: plain", "backend local (lm-embed-text:v1.5) answered 500, text: plain"},
		{"escaped JSON in a JSON string", `"{\"content\":\"a \\\"b\\\" c\",\"role\":\"user\"}"`, `"{\"content\":\"[redacted]\",\"role\":\"user\"}"`},
		{"cut string", `{"error":{"message":"Incorrect key for prom`, `{"error":{"message":"[redacted]`},
		{"cut array", `{"messages":[{"content":"x"`, `{"messages":[redacted]`},
		{"empty value", `{"content":"","role":"user"}`, `{"content":"","role":"user"}`},
		{"insensitive names", `{"role":"user","code":"invalid_api_key","type":"x"}`, `{"role":"user","code":"invalid_api_key","type":"x"}`},
		{"url is not a member", `Post "http://127.0.0.1:8080/v1/chat/completions": EOF`, `Post "http://127.0.0.1:8080/v1/chat/completions": EOF`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redact.String(tt.in); got != tt.want {
				t.Errorf("String(%q)\n = %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestStringCleanDoesNotAllocate(t *testing.T) {
	s := "relay: upstream answered an error object: 183 bytes, error type=server_error, sha256:5d41402abc4b"
	if n := testing.AllocsPerRun(100, func() { _ = redact.String(s) }); n != 0 {
		t.Errorf("String of a clean text: %v allocations, want 0", n)
	}
}

func TestError(t *testing.T) {
	if got := redact.Error(nil); got != "" {
		t.Errorf("Error(nil) = %q", got)
	}
	err := fmt.Errorf("upstream: %w", errors.New(`answered {"error":{"message":"for sk-abcdefgh1234"}}`))
	if got, want := redact.Error(err), `upstream: answered {"error":{"message":"[redacted]"}}`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestBody(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"error object", `{"error":{"message":"secret","type":"invalid_request_error","code":"invalid_api_key"}}`,
			"86 bytes, error type=invalid_request_error code=invalid_api_key, sha256:"},
		{"numeric code", `{"error":{"code":429,"message":"secret"}}`, "41 bytes, error code=429, sha256:"},
		{"message only", `{"error":{"message":"secret"}}`, "30 bytes, sha256:"},
		{"string error", `{"error":"secret"}`, "18 bytes, sha256:"},
		{"type with spaces", `{"error":{"type":"the secret","code":"ok"}}`, "43 bytes, error code=ok, sha256:"},
		{"key-shaped code", `{"error":{"code":"sk-abcdefgh12345"}}`, "37 bytes, sha256:"},
		{"long type", `{"error":{"type":"` + strings.Repeat("a", 49) + `"}}`, "70 bytes, sha256:"},
		{"not JSON", `garbage secret`, "14 bytes, sha256:"},
		{"empty", ``, "0 bytes, sha256:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redact.Body([]byte(tt.in))
			prefix, hash, _ := strings.Cut(got, "sha256:")
			if prefix+"sha256:" != tt.want || len(hash) != 12 || strings.Trim(hash, "0123456789abcdef") != "" {
				t.Errorf("Body(%q) = %q, want %q and 12 hex digits", tt.in, got, tt.want)
			}
			if strings.Contains(got, "secret") {
				t.Errorf("Body(%q) = %q holds the body's text", tt.in, got)
			}
		})
	}
	if a, b := redact.Body([]byte("a")), redact.Body([]byte("b")); a == b {
		t.Errorf("Body(a) = Body(b) = %q: the hash does not tell them apart", a)
	}
}

func TestQuotes(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no quote", "dial tcp 10.0.0.5:11434: connect: connection refused", "dial tcp 10.0.0.5:11434: connect: connection refused"},
		{"net/http", `net/http: HTTP/1.x transport connection broken: malformed HTTP status code "secret"`,
			`net/http: HTTP/1.x transport connection broken: malformed HTTP status code "…"`},
		{"two, with escapes", `Post "http://h/v1": multipart: expecting a new Part; got line "a \"secret\" b"`,
			`Post "…": multipart: expecting a new Part; got line "…"`},
		{"empty", `got ""`, `got "…"`},
		{"not closed", `got "secret`, `got "…`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redact.Quotes(tt.in); got != tt.want {
				t.Errorf("Quotes(%q)\n = %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestOpaque(t *testing.T) {
	if redact.Opaque(nil, "x") != nil {
		t.Error("Opaque(nil) != nil")
	}
	err := redact.Opaque(fmt.Errorf(`malformed HTTP response "secret": %w`, context.Canceled), "malformed HTTP answer")
	if err.Error() != "malformed HTTP answer" || !errors.Is(err, context.Canceled) {
		t.Errorf("Opaque() = %q, errors.Is(Canceled) = %v; want its text and the original in its chain", err, errors.Is(err, context.Canceled))
	}
}

func BenchmarkString(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"clean", "relay: upstream answered an error object: 183 bytes, error type=server_error, sha256:5d41402abc4b"},
		{"body", `{"error":{"message":"Incorrect API key provided: sk-proj-AbC123xyz789 for your prompt","type":"invalid_request_error","code":"invalid_api_key"}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = redact.String(bc.in)
			}
		})
	}
}
