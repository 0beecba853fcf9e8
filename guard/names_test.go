package guard_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/guard"
	"github.com/google/go-cmp/cmp"
)

// own is an embedder's classifier without a Name.
type own struct{}

func (own) Classify(context.Context, guard.Input) (guard.Verdict, error) { return guard.Verdict{}, nil }

// named is an embedder's classifier that names itself.
type named struct{ own }

func (named) Name() string { return "acme" }

func TestNames(t *testing.T) {
	rules, err := guard.ParseRules([]byte(`{"categories":{"hate":{"terms":["x"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := guard.NewModeration(guard.ModerationConfig{BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	lg, err := guard.NewLlamaGuard(guard.LlamaGuardConfig{BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	wrapped := func(c guard.Classifier) guard.Classifier {
		return guard.Cached(guard.WithTimeout(c, time.Second), clock.NewFake(time.Unix(0, 0)), 0, 0)
	}
	for _, tc := range []struct {
		name string
		c    guard.Classifier
		want []string
	}{
		{"nil", nil, nil},
		{"rules", rules, []string{"rules"}},
		{"wrapped chain", wrapped(guard.Chain{lg, rules, mod, rules}), []string{"llama_guard", "moderation", "rules"}},
		{"embedder's", guard.Chain{own{}, named{}, own{}}, []string{"acme", "custom"}},
	} {
		if diff := cmp.Diff(tc.want, guard.Names(tc.c)); diff != "" {
			t.Errorf("%s: Names mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}
