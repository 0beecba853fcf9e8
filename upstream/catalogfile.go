package upstream

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// builtinCatalog is the built-in model catalog, in the catalog file format.
//
//go:embed catalog.json
var builtinCatalog []byte

// DefaultCatalog returns the built-in catalog (upstream/catalog.json). Each call
// returns a fresh copy the caller may keep; statuses are those of the file, see
// WithStatus for the view /v1/info shows.
func DefaultCatalog() (*Catalog, error) {
	c, err := ParseCatalog(builtinCatalog)
	if err != nil {
		return nil, fmt.Errorf("upstream.DefaultCatalog: %w", err)
	}
	return c, nil
}

// LoadCatalog reads and validates a catalog file (GATEWAY_MODELS_FILE), in the
// format of ParseCatalog. Errors name the file.
func LoadCatalog(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("upstream.LoadCatalog: %w", err)
	}
	c, err := ParseCatalog(data)
	if err != nil {
		return nil, fmt.Errorf("upstream.LoadCatalog %s: %w", path, err)
	}
	return c, nil
}

// ParseCatalog decodes and validates a catalog file: either the ModelCatalog object
// of GET /v1/info ({"models":[ModelInfo...],"notes":"..."}) or a bare array of
// ModelInfo, where each BackendInfo may add base_url_env. Unknown fields are
// errors. Validation: at least one model; aliases non-empty and unique; kind one of
// the Kind constants; context_window not negative (positive for chat);
// min_max_tokens and typical_response_seconds not negative; a non-empty backend
// chain whose entries have a provider and base_url_env (when set) among local,
// cloudA, cloudB, a non-empty router_alias and a known status. Errors name the
// model by position and alias.
func ParseCatalog(data []byte) (*Catalog, error) {
	data = bytes.TrimSpace(data)
	var c Catalog
	var err error
	if len(data) > 0 && data[0] == '[' {
		err = decodeStrict(data, &c.Models)
	} else {
		err = decodeStrict(data, &c)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	c.reindex()
	return &c, nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the catalog")
	}
	return nil
}

func knownKinds() []string {
	return []string{KindChat, KindEmbeddings, KindImageGeneration, KindAudioTranscription}
}

func knownProviders() []string { return []string{ProviderLocal, ProviderCloudA, ProviderCloudB} }

func knownStatuses() []Status {
	return []Status{StatusAvailable, StatusDeprecated, StatusUnconfigured, StatusPlanned}
}

// validate checks the rules listed on ParseCatalog.
func (c *Catalog) validate() error {
	if len(c.Models) == 0 {
		return errors.New("catalog: no models")
	}
	seen := make(map[string]int, len(c.Models))
	for i := range c.Models {
		m := &c.Models[i]
		if err := m.validate(); err != nil {
			return fmt.Errorf("catalog: models[%d] (%q): %w", i, m.Alias, err)
		}
		if j, dup := seen[m.Alias]; dup {
			return fmt.Errorf("catalog: models[%d]: alias %q already used by models[%d]", i, m.Alias, j)
		}
		seen[m.Alias] = i
	}
	return nil
}

func (m *ModelInfo) validate() error {
	switch {
	case strings.TrimSpace(m.Alias) == "" || strings.ContainsAny(m.Alias, " \t\r\n"):
		return errors.New("alias must be non-empty without spaces")
	case !slices.Contains(knownKinds(), m.Kind):
		return fmt.Errorf("unknown kind %q (want one of %s)", m.Kind, strings.Join(knownKinds(), ", "))
	case m.ContextWindow < 0 || (m.Kind == KindChat && m.ContextWindow == 0):
		return fmt.Errorf("context_window %d must be positive", m.ContextWindow)
	case negative(m.Constraints.MinMaxTokens):
		return errors.New("constraints.min_max_tokens must not be negative")
	case negative(m.Constraints.TypicalResponseSeconds):
		return errors.New("constraints.typical_response_seconds must not be negative")
	case len(m.Backends) == 0:
		return errors.New("backends: empty chain")
	}
	for j := range m.Backends {
		if err := m.Backends[j].validate(); err != nil {
			return fmt.Errorf("backends[%d]: %w", j, err)
		}
	}
	return nil
}

func (b *BackendInfo) validate() error {
	switch {
	case !slices.Contains(knownProviders(), b.Provider):
		return fmt.Errorf("unknown provider %q (want one of %s)", b.Provider, strings.Join(knownProviders(), ", "))
	case b.BaseURLEnv != "" && !slices.Contains(knownProviders(), b.BaseURLEnv):
		return fmt.Errorf("unknown base_url_env %q (want one of %s)", b.BaseURLEnv, strings.Join(knownProviders(), ", "))
	case strings.TrimSpace(b.RouterAlias) == "":
		return errors.New("router_alias is empty")
	case !slices.Contains(knownStatuses(), b.Status):
		return fmt.Errorf("unknown status %q (want available, deprecated, unconfigured or planned)", b.Status)
	}
	return nil
}

func negative(p *int) bool { return p != nil && *p < 0 }
