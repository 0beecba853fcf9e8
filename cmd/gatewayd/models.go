package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// modelsOut is where -print-models writes: standard output, so that
// `gatewayd -print-models > models.json` makes a file to start from.
var modelsOut io.Writer = os.Stdout

// printModels writes the effective model catalog in the models-file format
// (the one GATEWAY_MODELS_FILE reads), indented.
func printModels(cfg *config, w io.Writer) error {
	cat, err := modelCatalog(cfg)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(cat, "", "  ")
	if err != nil {
		return fmt.Errorf("print models: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
