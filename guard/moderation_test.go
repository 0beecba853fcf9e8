package guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/guard"
)

// secretText stands for content that must never appear in an error.
const secretText = "my secret prompt 4711"

func newModeration(t *testing.T, f *fakeEndpoint, cfg guard.ModerationConfig) *guard.Moderation {
	t.Helper()
	cfg.BaseURL = f.URL + "/v1"
	m, err := guard.NewModeration(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestModerationRequest(t *testing.T) {
	f := newFakeEndpoint(t, 200, `{"results": [{"flagged": false, "categories": {}, "category_scores": {}}]}`)
	m := newModeration(t, f, guard.ModerationConfig{APIKey: "sk-test", Model: "omni-moderation-latest"})
	ctx := context.Background()
	if _, err := m.Classify(ctx, guard.Input{Texts: []string{"hello", "", "there"}}); err != nil {
		t.Fatal(err)
	}
	bare := newModeration(t, f, guard.ModerationConfig{})
	if _, err := bare.Classify(ctx, guard.Input{Texts: []string{"hi"}, Images: []string{"https://img/x.png"}}); err != nil {
		t.Fatal(err)
	}
	// Nothing to classify: no request.
	if _, err := m.Classify(ctx, guard.Input{Texts: []string{""}}); err != nil {
		t.Fatal(err)
	}
	want := []fakeCall{
		{Method: "POST", Path: "/v1/moderations", Authorization: "Bearer sk-test", ContentType: "application/json",
			Body: map[string]any{"model": "omni-moderation-latest", "input": []any{"hello", "there"}}},
		{Method: "POST", Path: "/v1/moderations", ContentType: "application/json",
			Body: map[string]any{"input": []any{
				map[string]any{"type": "text", "text": "hi"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://img/x.png"}},
			}}},
	}
	if diff := cmp.Diff(want, f.Calls()); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
}

// A base URL's query stays on the endpoint's URL (api-version=...).
func TestModerationBaseURLQuery(t *testing.T) {
	f := newFakeEndpoint(t, 200, `{"results": [{"flagged": false}]}`)
	m, err := guard.NewModeration(guard.ModerationConfig{BaseURL: f.URL + "/openai/v1/?api-version=2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Classify(context.Background(), guard.Input{Texts: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if c := f.Calls()[0]; c.Path != "/openai/v1/moderations" || c.Query != "api-version=2" {
		t.Errorf("request to %s?%s, want /openai/v1/moderations?api-version=2", c.Path, c.Query)
	}
}

func TestModerationVerdicts(t *testing.T) {
	cat := func(name string, score float64) guard.Category {
		return guard.Category{Name: name, Score: score, Native: name, Classifier: "moderation"}
	}
	tests := []struct {
		name      string
		threshold float64
		answer    string
		want      []guard.Category
	}{
		{"clean", 0, `{"results": [{"flagged": false, "categories": {"hate": false, "violence": false},
			"category_scores": {"hate": 0.01, "violence": 0.2}}]}`, nil},
		{"flagged by the boolean, score below the threshold", 0, `{"results": [{"flagged": true,
			"categories": {"hate": true, "violence": false}, "category_scores": {"hate": 0.3, "violence": 0.1}}]}`,
			[]guard.Category{cat("hate", 0.3)}},
		{"score at the default threshold", 0, `{"results": [{"flagged": false,
			"categories": {"self-harm/intent": false}, "category_scores": {"self-harm/intent": 0.5}}]}`,
			[]guard.Category{cat("self-harm/intent", 0.5)}},
		{"score above the default threshold", 0, `{"results": [{"flagged": false,
			"categories": {"violence/graphic": false}, "category_scores": {"violence/graphic": 0.51}}]}`,
			[]guard.Category{cat("violence/graphic", 0.51)}},
		{"score just below the default threshold", 0, `{"results": [{"flagged": false,
			"categories": {"violence": false}, "category_scores": {"violence": 0.4999}}]}`, nil},
		{"score at a set threshold", 0.8, `{"results": [{"flagged": false,
			"categories": {"sexual": false, "hate": false}, "category_scores": {"sexual": 0.8, "hate": 0.79}}]}`,
			[]guard.Category{cat("sexual", 0.8)}},
		{"score without a boolean", 0, `{"results": [{"category_scores": {"illicit/violent": 0.9}}]}`,
			[]guard.Category{cat("illicit/violent", 0.9)}},
		{"boolean without a score", 0, `{"results": [{"flagged": true, "categories": {"harassment": true}}]}`,
			[]guard.Category{cat("harassment", 1)}},
		{"unknown category, lowercased", 0, `{"results": [{"flagged": true, "categories": {"PII Leak": true},
			"category_scores": {"PII Leak": 0.7}}]}`,
			[]guard.Category{{Name: "pii leak", Score: 0.7, Native: "PII Leak", Classifier: "moderation"}}},
		{"several results: union, highest score, name order", 0, `{"results": [
			{"flagged": true, "categories": {"violence": true, "hate": false}, "category_scores": {"violence": 0.6, "hate": 0.2}},
			{"flagged": true, "categories": {"violence": true, "hate": true}, "category_scores": {"violence": 0.9, "hate": 0.7}}]}`,
			[]guard.Category{cat("hate", 0.7), cat("violence", 0.9)}},
		{"flagged without a category", 0, `{"results": [{"flagged": true, "categories": {}, "category_scores": {}}]}`,
			[]guard.Category{cat("flagged", 1)}},
		{"scores clamped", 0, `{"results": [{"category_scores": {"hate": 1.5}}]}`,
			[]guard.Category{cat("hate", 1)}},
		{"extra members ignored", 0, `{"id": "modr-1", "model": "omni", "results": [{"flagged": false,
			"categories": {}, "category_scores": {}, "category_applied_input_types": {"hate": ["text"]}}]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEndpoint(t, 200, tt.answer)
			m := newModeration(t, f, guard.ModerationConfig{Threshold: tt.threshold})
			v, err := m.Classify(context.Background(), guard.Input{Texts: []string{"x"}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(guard.Verdict{Categories: tt.want}, v); diff != "" {
				t.Errorf("Classify mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// checkError checks that err wraps want and says nothing of the content, the
// answer or the key.
func checkError(t *testing.T, err error, want ...error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("error %q does not wrap %v", err, w)
		}
	}
	for _, leak := range []string{secretText, "sk-secret", "echoed"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("error %q holds %q", err, leak)
		}
	}
}

func TestModerationErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		answer string
		want   error
	}{
		{"server error", 500, `{"error": {"message": "echoed: ` + secretText + `", "type": "server_error"}}`, guard.ErrUnavailable},
		{"bad request", 400, `{"error": {"message": "echoed ` + secretText + `"}}`, guard.ErrUnavailable},
		{"redirect", 302, ``, guard.ErrUnavailable},
		{"not JSON", 200, `echoed ` + secretText, guard.ErrMalformed},
		{"no results", 200, `{"id": "x"}`, guard.ErrMalformed},
		{"empty results", 200, `{"results": []}`, guard.ErrMalformed},
		{"categories of the wrong type", 200, `{"results": [{"categories": {"hate": "echoed"}}]}`, guard.ErrMalformed},
		{"answer too long", 200, `{"results": [], "pad": "` + strings.Repeat("x", guard.MaxAnswerBytes) + `"}`, guard.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEndpoint(t, tt.status, tt.answer)
			m := newModeration(t, f, guard.ModerationConfig{APIKey: "sk-secret"})
			v, err := m.Classify(context.Background(), guard.Input{Texts: []string{secretText}})
			checkError(t, err, tt.want)
			if v.Flagged() {
				t.Errorf("Classify on error flagged %v", v)
			}
		})
	}
}

func TestModerationTimeout(t *testing.T) {
	f := newFakeEndpoint(t, 200, `{"results": [{"flagged": true, "categories": {"hate": true}}]}`)
	f.delay = 5 * time.Second
	c := guard.WithTimeout(newModeration(t, f, guard.ModerationConfig{APIKey: "sk-secret"}), 50*time.Millisecond)
	start := time.Now()
	_, err := c.Classify(context.Background(), guard.Input{Texts: []string{secretText}})
	checkError(t, err, guard.ErrUnavailable, context.DeadlineExceeded)
	if !strings.Contains(err.Error(), "classifier unavailable: no answer within 50ms: context deadline exceeded") {
		t.Errorf("error %q does not name the time-out", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Classify took %v with a 50ms time-out", d)
	}
}

func TestModerationUnreachable(t *testing.T) {
	f := newFakeEndpoint(t, 200, `{}`)
	m := newModeration(t, f, guard.ModerationConfig{})
	f.Close()
	_, err := m.Classify(context.Background(), guard.Input{Texts: []string{secretText}})
	checkError(t, err, guard.ErrUnavailable)
}

func TestNewModerationErrors(t *testing.T) {
	for _, cfg := range []guard.ModerationConfig{
		{},
		{BaseURL: "localhost:8080/v1"},
		{BaseURL: "ftp://host/v1"},
		{BaseURL: "http://host/v1/moderations"},
		{BaseURL: "http://host/v1", Threshold: 1.5},
		{BaseURL: "http://host/v1", Threshold: -0.1},
	} {
		if _, err := guard.NewModeration(cfg); err == nil {
			t.Errorf("NewModeration(%+v) succeeded", cfg)
		}
	}
	if _, err := guard.NewModeration(guard.ModerationConfig{BaseURL: "https://user:pw@host/v1/"}); err != nil {
		t.Errorf("NewModeration(good URL): %v", err)
	}
	_, err := guard.NewModeration(guard.ModerationConfig{BaseURL: "http://user:sk-secret@host/v1/moderations"})
	if err == nil || strings.Contains(err.Error(), "sk-secret") {
		t.Errorf("NewModeration(URL with a password) = %v, want an error without the password", err)
	}
}
