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
// format of ParseCatalog. Errors name the file, then the line, column and
// field.
func LoadCatalog(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("upstream.LoadCatalog: %w", err)
	}
	c, err := ParseCatalog(data)
	if err != nil {
		return nil, fmt.Errorf("upstream.LoadCatalog: %s: %w", path, err)
	}
	return c, nil
}

// ParseCatalog decodes and validates a catalog file: either the ModelCatalog object
// of GET /v1/info ({"models":[ModelInfo...],"notes":"..."}) or a bare array of
// ModelInfo, where each BackendInfo may add base_url_env. Unknown fields (names
// compared exactly) are errors. Validation: at least one model; aliases
// non-empty and unique; kind one of the Kind constants; context_window not
// negative (positive for chat); min_max_tokens and typical_response_seconds
// not negative; a non-empty backend chain whose entries have a provider and
// base_url_env (when set) among local, cloudA, cloudB, a non-empty
// router_alias and a known status. Errors name the line and column (in bytes,
// from 1) and the field ("line 7, column 18: models[1].backends[0].provider:
// ..."). upstream/models.schema.json says the same as a JSON Schema; a test
// keeps the two in agreement.
func ParseCatalog(data []byte) (*Catalog, error) {
	data = bytes.TrimSpace(data)
	if err := checkKeys(data); err != nil {
		return nil, err.at(data)
	}
	var c Catalog
	var err error
	if len(data) > 0 && data[0] == '[' {
		err = decodeStrict(data, &c.Models)
	} else {
		err = decodeStrict(data, &c)
	}
	if err != nil {
		return nil, decodeError(data, err)
	}
	if err := c.validate(); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			return nil, fe.at(data)
		}
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
		return trailingError{off: dec.InputOffset()}
	}
	return nil
}

// trailingError is data after the catalog's JSON value, at off.
type trailingError struct{ off int64 }

func (e trailingError) Error() string { return "unexpected data after the catalog" }

// decodeError names the place of a decoding error.
func decodeError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var trail trailingError
	switch {
	case errors.As(err, &trail):
		return posError(data, int(trail.off), trail.Error())
	case errors.As(err, &syn):
		// Offset counts the byte at fault.
		return posError(data, int(syn.Offset)-1, "not JSON: "+syn.Error())
	case errors.As(err, &typ):
		return posError(data, int(typ.Offset), fmt.Sprintf("%s: a %s where %s goes", typ.Field, typ.Value, typ.Type))
	}
	return fmt.Errorf("catalog: %w", err)
}

// posError is a catalog error at the byte offset off of data.
func posError(data []byte, off int, msg string) error {
	line, col := lineCol(data, off)
	return fmt.Errorf("catalog: line %d, column %d: %s", line, col, msg)
}

func knownKinds() []string {
	return []string{KindChat, KindEmbeddings, KindImageGeneration, KindAudioTranscription}
}

func knownProviders() []string { return []string{ProviderLocal, ProviderCloudA, ProviderCloudB} }

func knownStatuses() []Status {
	return []Status{StatusAvailable, StatusDeprecated, StatusUnconfigured, StatusPlanned}
}

// validate checks the rules listed on ParseCatalog. Its errors are
// *fieldError values.
func (c *Catalog) validate() error {
	if len(c.Models) == 0 {
		return &fieldError{path: []any{"models"}, msg: "no models"}
	}
	seen := make(map[string]int, len(c.Models))
	for i := range c.Models {
		m := &c.Models[i]
		if path, msg := m.validate(); msg != "" {
			return &fieldError{path: append([]any{"models", i}, path...), msg: msg + fmt.Sprintf(" (model %q)", m.Alias)}
		}
		if j, dup := seen[m.Alias]; dup {
			return &fieldError{path: []any{"models", i, "alias"}, msg: fmt.Sprintf("alias %q already used by models[%d]", m.Alias, j)}
		}
		seen[m.Alias] = i
	}
	return nil
}

// validate returns the path (below the model) and the message of the first
// rule m breaks, "" when none.
func (m *ModelInfo) validate() (path []any, msg string) {
	switch {
	case strings.TrimSpace(m.Alias) == "" || strings.ContainsAny(m.Alias, " \t\r\n"):
		return []any{"alias"}, "alias must be non-empty without spaces"
	case !slices.Contains(knownKinds(), m.Kind):
		return []any{"kind"}, fmt.Sprintf("unknown kind %q (want one of %s)", m.Kind, strings.Join(knownKinds(), ", "))
	case m.ContextWindow < 0 || (m.Kind == KindChat && m.ContextWindow == 0):
		return []any{"context_window"}, fmt.Sprintf("context_window %d must be positive", m.ContextWindow)
	case negative(m.Constraints.MinMaxTokens):
		return []any{"constraints", "min_max_tokens"}, "constraints.min_max_tokens must not be negative"
	case negative(m.Constraints.TypicalResponseSeconds):
		return []any{"constraints", "typical_response_seconds"}, "constraints.typical_response_seconds must not be negative"
	case len(m.Backends) == 0:
		return []any{"backends"}, "backends: empty chain"
	}
	for j := range m.Backends {
		if field, msg := m.Backends[j].validate(); msg != "" {
			return []any{"backends", j, field}, msg
		}
	}
	return nil, ""
}

// validate returns the field and the message of the first rule b breaks,
// "" when none.
func (b *BackendInfo) validate() (field, msg string) {
	switch {
	case !slices.Contains(knownProviders(), b.Provider):
		return "provider", fmt.Sprintf("unknown provider %q (want one of %s)", b.Provider, strings.Join(knownProviders(), ", "))
	case b.BaseURLEnv != "" && !slices.Contains(knownProviders(), b.BaseURLEnv):
		return "base_url_env", fmt.Sprintf("unknown base_url_env %q (want one of %s)", b.BaseURLEnv, strings.Join(knownProviders(), ", "))
	case strings.TrimSpace(b.RouterAlias) == "":
		return "router_alias", "router_alias is empty"
	case !slices.Contains(knownStatuses(), b.Status):
		return "status", fmt.Sprintf("unknown status %q (want available, deprecated, unconfigured or planned)", b.Status)
	}
	return "", ""
}

func negative(p *int) bool { return p != nil && *p < 0 }
