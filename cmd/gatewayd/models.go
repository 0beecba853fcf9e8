package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/chatgw/gateway/upstream"
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

// learnTimeout bounds the whole learning of the context windows, at start
// and on SIGHUP, so that a server that does not answer never holds start-up
// for long; learnRequestTimeout bounds each request of it.
const (
	learnTimeout        = 3 * time.Second
	learnRequestTimeout = 2 * time.Second
)

// learnWindows asks the model servers behind cat's backends what context
// window they serve (upstream.Learner: llama.cpp's /props, Ollama's
// /api/show, vLLM's max_model_len), so that the pre-flight check uses it,
// and logs what it learned.
func learnWindows(ctx context.Context, cat *upstream.Catalog, b upstream.Backends, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, learnTimeout)
	defer cancel()
	client := &http.Client{
		// A model server that redirects is misconfigured: read its 3xx.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	learned, failed := 0, []string{}
	all := upstream.NewLearner(client, learnRequestTimeout).Learn(ctx, cat, b)
	for _, l := range all {
		if l.Source != upstream.SourceCatalog {
			learned++
			log.Info("context window from the model server", "alias", l.Alias, "context_window", l.Window, "source", l.Source)
		}
		failed = append(failed, l.Errors...)
	}
	attrs := []any{"learned", learned, "chat_models", len(all)}
	if len(failed) > 0 {
		attrs = append(attrs, "first_error", failed[0], "errors", len(failed))
	}
	log.Info("context windows: the others are the catalog's", attrs...)
}
