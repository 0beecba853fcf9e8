package guard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/guard"
)

func newLlamaGuard(t *testing.T, f *fakeEndpoint, cfg guard.LlamaGuardConfig) *guard.LlamaGuard {
	t.Helper()
	cfg.BaseURL = f.URL + "/v1/"
	g, err := guard.NewLlamaGuard(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// chatAnswer is a chat completion whose assistant message is content.
func chatAnswer(content string) string {
	c, _ := json.Marshal(content)
	return fmt.Sprintf(`{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0,
		"message": {"role": "assistant", "content": %s}, "finish_reason": "stop"}]}`, c)
}

func TestLlamaGuardRequest(t *testing.T) {
	f := newFakeEndpoint(t, 200, chatAnswer("safe"))
	g := newLlamaGuard(t, f, guard.LlamaGuardConfig{APIKey: "sk-test", Model: "llama-guard-3-8b"})
	ctx := context.Background()
	if _, err := g.Classify(ctx, guard.Input{Texts: []string{"first", "", "second"}, Images: []string{"https://img/x.png"}}); err != nil {
		t.Fatal(err)
	}
	bare := newLlamaGuard(t, f, guard.LlamaGuardConfig{})
	if _, err := bare.Classify(ctx, guard.Input{Texts: []string{"hi"}}); err != nil {
		t.Fatal(err)
	}
	// Nothing to classify (images are not sent): no request.
	if _, err := g.Classify(ctx, guard.Input{Images: []string{"https://img/x.png"}}); err != nil {
		t.Fatal(err)
	}
	want := []fakeCall{
		{Method: "POST", Path: "/v1/chat/completions", Authorization: "Bearer sk-test", ContentType: "application/json",
			Body: map[string]any{"model": "llama-guard-3-8b", "temperature": 0.0, "max_tokens": 64.0,
				"messages": []any{map[string]any{"role": "user", "content": "first\n\nsecond"}}}},
		{Method: "POST", Path: "/v1/chat/completions", ContentType: "application/json",
			Body: map[string]any{"temperature": 0.0, "max_tokens": 64.0,
				"messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
	}
	if diff := cmp.Diff(want, f.Calls()); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
}

func TestLlamaGuardVerdicts(t *testing.T) {
	cat := func(code, name string) guard.Category {
		return guard.Category{Name: name, Score: 1, Native: code, Classifier: "llama_guard"}
	}
	tests := []struct {
		answer string
		want   []guard.Category
	}{
		{"safe", nil},
		{" Safe \n", nil},
		{"\n\nsafe", nil},
		{"unsafe\nS1", []guard.Category{cat("S1", "illicit/violent")}},
		{"unsafe\nS1,S10", []guard.Category{cat("S1", "illicit/violent"), cat("S10", "hate")}},
		{"UNSAFE\r\ns10, s1\n", []guard.Category{cat("S1", "illicit/violent"), cat("S10", "hate")}},
		{"unsafe\nS11\nS12", []guard.Category{cat("S11", "self-harm"), cat("S12", "sexual")}},
		{"unsafe S4", []guard.Category{cat("S4", "sexual/minors")}},
		{"unsafe\nS2,S2", []guard.Category{cat("S2", "illicit")}},
		{"unsafe\nS15", []guard.Category{cat("S15", "s15")}},
		{"unsafe\nS1,S2,S3,S4,S5,S6,S7,S8,S9,S10,S11,S12,S13,S14", []guard.Category{
			cat("S1", "illicit/violent"), cat("S2", "illicit"), cat("S3", "sex-crimes"),
			cat("S4", "sexual/minors"), cat("S5", "defamation"), cat("S6", "specialized-advice"),
			cat("S7", "privacy"), cat("S8", "intellectual-property"), cat("S9", "indiscriminate-weapons"),
			cat("S10", "hate"), cat("S11", "self-harm"), cat("S12", "sexual"), cat("S13", "elections"),
			cat("S14", "code-interpreter-abuse"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			f := newFakeEndpoint(t, 200, chatAnswer(tt.answer))
			v, err := newLlamaGuard(t, f, guard.LlamaGuardConfig{}).Classify(context.Background(), guard.Input{Texts: []string{"x"}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(guard.Verdict{Categories: tt.want}, v); diff != "" {
				t.Errorf("Classify mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLlamaGuardErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		answer string
		want   error
	}{
		{"empty answer", 200, chatAnswer(""), guard.ErrMalformed},
		{"another word", 200, chatAnswer("echoed " + secretText), guard.ErrMalformed},
		{"unsafe without codes", 200, chatAnswer("unsafe"), guard.ErrMalformed},
		{"Llama Guard 1 codes", 200, chatAnswer("unsafe\nO1"), guard.ErrMalformed},
		{"a word among the codes", 200, chatAnswer("unsafe\nS1,echoed"), guard.ErrMalformed},
		{"a signed code", 200, chatAnswer("unsafe\nS+1"), guard.ErrMalformed},
		{"safe with codes", 200, chatAnswer("safe\nS1"), guard.ErrMalformed},
		{"null content", 200, `{"choices": [{"message": {"role": "assistant", "content": null}}]}`, guard.ErrMalformed},
		{"no choices", 200, `{"choices": []}`, guard.ErrMalformed},
		{"not JSON", 200, `echoed ` + secretText, guard.ErrMalformed},
		{"server error", 503, `{"error": {"message": "echoed ` + secretText + `"}}`, guard.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEndpoint(t, tt.status, tt.answer)
			g := newLlamaGuard(t, f, guard.LlamaGuardConfig{APIKey: "sk-secret"})
			v, err := g.Classify(context.Background(), guard.Input{Texts: []string{secretText}})
			checkError(t, err, tt.want)
			if v.Flagged() {
				t.Errorf("Classify on error flagged %v", v)
			}
		})
	}
}

func TestLlamaGuardTimeout(t *testing.T) {
	f := newFakeEndpoint(t, 200, chatAnswer("unsafe\nS1"))
	f.delay = 5 * time.Second
	c := guard.WithTimeout(newLlamaGuard(t, f, guard.LlamaGuardConfig{}), 50*time.Millisecond)
	_, err := c.Classify(context.Background(), guard.Input{Texts: []string{secretText}})
	checkError(t, err, guard.ErrUnavailable, context.DeadlineExceeded)
}

func TestNewLlamaGuardErrors(t *testing.T) {
	for _, base := range []string{"", "not a url", "http:///v1", "http://host/v1/chat/completions/"} {
		if _, err := guard.NewLlamaGuard(guard.LlamaGuardConfig{BaseURL: base}); err == nil {
			t.Errorf("NewLlamaGuard(%q) succeeded", base)
		}
	}
}
