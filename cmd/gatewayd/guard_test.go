package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/guard"
	"github.com/google/go-cmp/cmp"
)

// TestContentGuardConfig: the GATEWAY_GUARD_* variables build the chain of
// the classifiers they name, in a fixed order, and a bad one names itself.
func TestContentGuardConfig(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.json")
	if err := os.WriteFile(rules, []byte(`{"categories":{"violence":{"terms":["kill"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\"categories\":{\"x\":{\"patterns\":[\"(\"]}}}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		env        map[string]string
		want       []string // guard.Names of the chain
		wantReload bool
		wantErr    string
	}{
		{name: "none", env: map[string]string{}},
		{name: "rules", env: map[string]string{"GATEWAY_GUARD_RULES": rules}, want: []string{"rules"}, wantReload: true},
		{name: "all three", env: map[string]string{"GATEWAY_GUARD_RULES": rules,
			"GATEWAY_GUARD_MODERATION_URL": "http://127.0.0.1:1/v1", "GATEWAY_GUARD_LLAMA_GUARD_URL": "http://127.0.0.1:2/v1"},
			want: []string{"llama_guard", "moderation", "rules"}, wantReload: true},
		{name: "moderation alone", env: map[string]string{"GATEWAY_GUARD_MODERATION_URL": "http://127.0.0.1:1/v1", "GATEWAY_GUARD_THRESHOLD": "0.3"},
			want: []string{"moderation"}},
		{name: "bad rules", env: map[string]string{"GATEWAY_GUARD_RULES": bad}, wantErr: bad},
		{name: "missing rules", env: map[string]string{"GATEWAY_GUARD_RULES": filepath.Join(dir, "none.json")}, wantErr: "none.json"},
		{name: "bad moderation URL", env: map[string]string{"GATEWAY_GUARD_MODERATION_URL": "ftp://x"}, wantErr: "GATEWAY_GUARD_MODERATION_URL"},
		{name: "bad threshold", env: map[string]string{"GATEWAY_GUARD_MODERATION_URL": "http://127.0.0.1:1/v1", "GATEWAY_GUARD_THRESHOLD": "2"},
			wantErr: "GATEWAY_GUARD_THRESHOLD"},
		{name: "zero threshold", env: map[string]string{"GATEWAY_GUARD_MODERATION_URL": "http://127.0.0.1:1/v1", "GATEWAY_GUARD_THRESHOLD": "0"},
			wantErr: "GATEWAY_GUARD_THRESHOLD"},
		{name: "bad llama guard URL", env: map[string]string{"GATEWAY_GUARD_LLAMA_GUARD_URL": "x"}, wantErr: "GATEWAY_GUARD_LLAMA_GUARD_URL"},
		{name: "zero timeout", env: map[string]string{"GATEWAY_GUARD_TIMEOUT": "0s"}, wantErr: "GATEWAY_GUARD_TIMEOUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(context.Background(), nil, envOf(tc.env), &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			c, reload, err := contentGuard(cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("contentGuard error = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, guard.Names(c)); diff != "" {
				t.Errorf("classifiers mismatch (-want +got):\n%s", diff)
			}
			if (reload != nil) != tc.wantReload {
				t.Errorf("reload set = %v, want %v", reload != nil, tc.wantReload)
			}
		})
	}
}

// TestGuardCheck: a tenant whose content_guard is set needs a classifier.
func TestGuardCheck(t *testing.T) {
	cat := func(guard string) *auth.Catalog {
		return auth.MustStatic([]*auth.Tenant{{ID: "a"}, {ID: "g", Settings: auth.Settings{ContentGuard: guard}}}, nil)
	}
	rules, err := guard.ParseRules([]byte(`{"categories":{"x":{"terms":["y"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		c       guard.Classifier
		mode    string
		wantErr bool
	}{
		{"off without classifier", nil, "off", false},
		{"unset without classifier", nil, "", false},
		{"audit without classifier", nil, "audit", true},
		{"block without classifier", nil, "block", true},
		{"block with classifier", rules, "block", false},
	} {
		err := guardCheck(tc.c)(cat(tc.mode))
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: guardCheck = %v, want error %v", tc.name, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), `tenant "g"`) {
			t.Errorf("%s: error %q does not name the tenant", tc.name, err)
		}
	}
}
