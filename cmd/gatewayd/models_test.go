package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestPrintModels: -print-models writes the effective catalog as a models
// file that loads back to the same catalog, and starts nothing.
func TestPrintModels(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"built-in", nil},
		{"models file", map[string]string{"GATEWAY_MODELS_FILE": "../../docs/models/ollama.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			old := modelsOut
			modelsOut = &out
			t.Cleanup(func() { modelsOut = old })
			if err := run(context.Background(), []string{"-print-models"}, envOf(tc.env), &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			printed, err := upstream.ParseCatalog(out.Bytes())
			if err != nil {
				t.Fatalf("the printed catalog does not load: %v\n%s", err, out.String())
			}
			cfg, err := loadConfig(context.Background(), nil, envOf(tc.env), &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := modelCatalog(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, printed, cmpopts.IgnoreUnexported(upstream.Catalog{}, upstream.ModelInfo{})); diff != "" {
				t.Errorf("printed catalog mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
