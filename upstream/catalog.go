package upstream

import (
	"slices"
	"sync/atomic"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
)

// Status is a backend's status as the wire names it (BackendStatus).
type Status string

// The BackendStatus values.
const (
	StatusAvailable    Status = "available"
	StatusDeprecated   Status = "deprecated"
	StatusUnconfigured Status = "unconfigured"
	StatusPlanned      Status = "planned"
)

// Model kinds (ModelInfo.kind, an additive field).
const (
	KindChat               = "chat"
	KindEmbeddings         = "embeddings"
	KindImageGeneration    = "image_generation"
	KindAudioTranscription = "audio_transcription"
)

// The providers a backend can use (BackendInfo.provider and base_url_env).
const (
	ProviderLocal  = "local"
	ProviderCloudA = "cloudA"
	ProviderCloudB = "cloudB"
)

// Catalog is the model catalog as GET /v1/info returns it.
//
// A Catalog built by ParseCatalog, LoadCatalog, DefaultCatalog, NewCatalog or
// WithStatus has an index that makes Lookup O(1); its Models must not be changed
// afterwards (build a new one instead). The index is an unexported field, so compare
// catalogs in tests with cmpopts.IgnoreUnexported(upstream.Catalog{}). A Catalog
// decoded from JSON directly works too, with a linear Lookup. ModelInfo has
// unexported state too (what WithStatus finds): compare with
// cmpopts.IgnoreUnexported(upstream.Catalog{}, upstream.ModelInfo{}).
type Catalog struct {
	Models []ModelInfo `json:"models"`
	Notes  string      `json:"notes"`

	index map[string]int // alias -> position in Models
}

// ModelInfo describes one public alias.
type ModelInfo struct {
	Alias         string        `json:"alias"`
	Description   string        `json:"description"`
	Family        string        `json:"family"`
	Kind          string        `json:"kind"`
	ContextWindow int           `json:"context_window"`
	Modalities    Modalities    `json:"modalities"`
	Tools         bool          `json:"tools"`
	JSONMode      bool          `json:"json_mode"`
	ReasoningMode bool          `json:"reasoning_mode"`
	License       string        `json:"license"`
	Backends      []BackendInfo `json:"backends"`
	Constraints   Constraints   `json:"constraints"`
	Notes         string        `json:"notes"`

	// setup, set by WithStatus on a model none of whose backends can be
	// tried, says what would configure one; "" means configured.
	setup string
	// learned is the context window its servers said they serve
	// (Learner), shared by every copy of the catalog made after the cell
	// exists, so that what is learned on SIGHUP reaches every reader.
	learned *learnedCell
}

// SourceCatalog is the WindowSource of a context window the catalog gives.
const SourceCatalog = "catalog"

// Window is the effective context window of m: the one its servers said
// they serve when a Learner learned one, else ContextWindow. The pre-flight
// context-window check and the quota's reservation use it.
func (m *ModelInfo) Window() int {
	if w := m.learned.load(); w != nil {
		return w.tokens
	}
	return m.ContextWindow
}

// WindowSource says where Window comes from: SourceCatalog, or the server
// answer a Learner read it from (the Source constants).
func (m *ModelInfo) WindowSource() string {
	if w := m.learned.load(); w != nil {
		return w.source
	}
	return SourceCatalog
}

// Configured reports whether a backend of m's chain can be tried. It is
// false only in a catalog made by WithStatus (as /v1/info shows it), for a
// model none of whose backends has an address (its provider's URL unset,
// without an external router) or may be tried (planned or unconfigured in
// the catalog file).
func (m *ModelInfo) Configured() bool { return m.setup == "" }

// NotConfigured returns model_not_configured (param model), whose message
// says which variable to set, for a model that is not Configured; nil
// otherwise. Retrying cannot help such a model, so it is not the 503
// upstream_unavailable of a backend that does not answer.
func (m *ModelInfo) NotConfigured() error {
	if m.setup == "" {
		return nil
	}
	return errcat.Newf(errcat.ModelNotConfigured, "model", "Model %q has no configured backend: %s.", m.Alias, m.setup)
}

// Modalities are the supported input and output modalities.
type Modalities struct {
	TextIn   bool `json:"text_in"`
	TextOut  bool `json:"text_out"`
	ImageIn  bool `json:"image_in"`
	AudioIn  bool `json:"audio_in"`
	VideoIn  bool `json:"video_in"`
	ImageOut bool `json:"image_out"`
}

// Constraints are enforced before forwarding.
type Constraints struct {
	AcceptsImageURL        bool `json:"accepts_image_url"`
	MinMaxTokens           *int `json:"min_max_tokens"`
	TypicalResponseSeconds *int `json:"typical_response_seconds"`
}

// BackendInfo is one step of an alias's routing chain.
type BackendInfo struct {
	Provider    string  `json:"provider"` // local, cloudA or cloudB
	RouterAlias string  `json:"router_alias"`
	Status      Status  `json:"status"`
	Notes       *string `json:"notes"`
	Pricing     *string `json:"pricing"`
	// BaseURLEnv names the provider URL the backend uses (local, cloudA, cloudB);
	// "" means the URL of Provider. Only in catalog files, never in /v1/info.
	BaseURLEnv string `json:"base_url_env,omitempty"`
}

// urlProvider is the provider whose URL and API key the backend uses.
func (b *BackendInfo) urlProvider() string {
	if b.BaseURLEnv != "" {
		return b.BaseURLEnv
	}
	return b.Provider
}

// NewCatalog validates models (the rules of ParseCatalog) and returns an indexed
// catalog holding a deep copy of them.
func NewCatalog(models []ModelInfo, notes string) (*Catalog, error) {
	c := (&Catalog{Models: models, Notes: notes}).Clone()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Lookup returns the model with alias, or nil. The result points into the catalog
// and must not be modified.
func (c *Catalog) Lookup(alias string) *ModelInfo {
	if c == nil {
		return nil
	}
	if c.index != nil {
		if i, ok := c.index[alias]; ok && i < len(c.Models) && c.Models[i].Alias == alias {
			return &c.Models[i]
		}
		return nil
	}
	for i := range c.Models {
		if c.Models[i].Alias == alias {
			return &c.Models[i]
		}
	}
	return nil
}

// LookupKind returns the model alias when it has kind and tenant t allows it,
// else model_not_in_allowlist (model); a model that is not Configured is
// model_not_configured (model). The result points into the catalog and must
// not be modified.
func (c *Catalog) LookupKind(t *auth.Tenant, alias, kind string) (*ModelInfo, error) {
	m := c.Lookup(alias)
	if m == nil || m.Kind != kind || !t.AllowsModel(alias) {
		return nil, errcat.Newf(errcat.ModelNotInAllowlist, "model",
			"Model %q is not %s model this tenant may use; GET /v1/models lists them.", alias, kindPhrase(kind))
	}
	if err := m.NotConfigured(); err != nil {
		return nil, err
	}
	return m, nil
}

// kindPhrase is kind with its article, as LookupKind's message says it.
func kindPhrase(kind string) string {
	switch kind {
	case KindEmbeddings:
		return "an embeddings"
	case KindImageGeneration:
		return "an image generation"
	case KindAudioTranscription:
		return "an audio transcription"
	}
	return "a " + kind
}

// Aliases returns the public aliases in catalog order.
func (c *Catalog) Aliases() []string {
	out := make([]string, len(c.Models))
	for i := range c.Models {
		out[i] = c.Models[i].Alias
	}
	return out
}

// Clone returns an indexed deep copy of c that shares no memory with it but
// the learned context windows (Window), which every copy sees alike.
func (c *Catalog) Clone() *Catalog {
	out := &Catalog{Notes: c.Notes, Models: make([]ModelInfo, len(c.Models))}
	for i, m := range c.Models {
		m.Backends = slices.Clone(m.Backends)
		for j := range m.Backends {
			b := &m.Backends[j]
			b.Notes = clonePtr(b.Notes)
			b.Pricing = clonePtr(b.Pricing)
		}
		m.Constraints.MinMaxTokens = clonePtr(m.Constraints.MinMaxTokens)
		m.Constraints.TypicalResponseSeconds = clonePtr(m.Constraints.TypicalResponseSeconds)
		out.Models[i] = m
	}
	out.reindex()
	return out
}

// reindex rebuilds the alias index; on duplicate aliases the first one wins
// (validate rejects duplicates anyway). A model without a learned-window cell
// gets one.
func (c *Catalog) reindex() {
	c.index = make(map[string]int, len(c.Models))
	for i := range c.Models {
		if c.Models[i].learned == nil {
			c.Models[i].learned = new(learnedCell)
		}
		if _, dup := c.index[c.Models[i].Alias]; !dup {
			c.index[c.Models[i].Alias] = i
		}
	}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// learnedCell holds a model's learned context window; nil or empty means none.
type learnedCell struct{ v atomic.Pointer[learnedWindow] }

// learnedWindow is one learned context window and where it came from.
type learnedWindow struct {
	tokens int
	source string
}

func (c *learnedCell) load() *learnedWindow {
	if c == nil {
		return nil
	}
	return c.v.Load()
}
