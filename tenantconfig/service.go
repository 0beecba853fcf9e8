package tenantconfig

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"sort"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
)

// Service serves GET and PUT /v1/tenant/config. It is safe for concurrent use.
type Service struct {
	st          store.Store
	cat         *upstream.Catalog
	classifiers []string
}

// NewService returns the tenant-config handlers over st. cat is the model
// catalog default_model is checked against; it must not be nil nor modified
// afterwards. classifiers name the content guard's classifiers (guard.Names),
// shown as content_guard_classifiers to the tenants whose guard is on.
func NewService(st store.Store, cat *upstream.Catalog, classifiers ...string) *Service {
	return &Service{st: st, cat: cat, classifiers: classifiers}
}

// View is the answer of GET and PUT /v1/tenant/config.
type View struct {
	TenantID string `json:"tenant_id"`
	// Values are the effective values of every key, writable or not.
	Values map[string]any `json:"values"`
	// Keys describe every key.
	Keys         map[string]KeyInfo `json:"keys"`
	WritableKeys []string           `json:"writable_keys"`
}

// KeyInfo describes one key.
type KeyInfo struct {
	Value    any    `json:"value"`
	Writable bool   `json:"writable"`
	Type     string `json:"type"` // integer, string, boolean, array or object
	// Default is the value of a tenant that never wrote the key (writable keys).
	Default any `json:"default,omitempty"`
	// Range bounds an integer key; its max is the tenant's cap.
	Range *Range `json:"range,omitempty"`
	// Enum lists the allowed values of a string key.
	Enum []string `json:"enum,omitempty"`
}

// Range is an inclusive integer range.
type Range struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// Operator-controlled keys, read-only through the API.
const (
	keyModels           = "models"
	keyCloudDocConsent  = "c1_cloud_doc_consent"
	keyContentGuard     = "content_guard"
	keyGuardClassifiers = "content_guard_classifiers"
	keyCodingAgentRepos = "coding_agent_repos"
	keyConfigCaps       = "config_caps"
	keyQuotas           = "quotas"
)

func operatorKey(k string) bool {
	switch k {
	case keyModels, keyCloudDocConsent, keyContentGuard, keyGuardClassifiers, keyCodingAgentRepos, keyConfigCaps, keyQuotas:
		return true
	}
	return false
}

// chatAliases returns the chat aliases of the catalog that t allows, in
// catalog order.
func (s *Service) chatAliases(t *auth.Tenant) []string {
	out := []string{}
	if s.cat == nil {
		return out
	}
	for _, m := range s.cat.Models {
		if m.Kind == upstream.KindChat && t.AllowsModel(m.Alias) {
			out = append(out, m.Alias)
		}
	}
	return out
}

// view builds the document of tenant t whose stored record is rec.
func (s *Service) view(t *auth.Tenant, rec record) View {
	c := effective(t, rec)
	v := View{TenantID: t.ID, Values: map[string]any{}, Keys: map[string]KeyInfo{}}
	add := func(name string, ki KeyInfo) {
		v.Keys[name] = ki
		v.Values[name] = ki.Value
		if ki.Writable {
			v.WritableKeys = append(v.WritableKeys, name)
		}
	}
	add(KeyDefaultModel, KeyInfo{Value: c.DefaultModel, Writable: true, Type: "string",
		Default: Defaults().DefaultModel, Enum: s.chatAliases(t)})
	caps := map[string]int{}
	for _, k := range intKeys() {
		d := Defaults()
		add(k.name, KeyInfo{Value: *k.field(&c), Writable: true, Type: "integer",
			Default: *k.field(&d), Range: &Range{Min: k.min, Max: k.cap(t)}})
		caps[k.name] = k.cap(t)
	}
	models := t.Models
	if models == nil && s.cat != nil {
		models = s.cat.Aliases()
	}
	guard, classifiers := t.Settings.ContentGuard, s.classifiers
	if guard == "" || guard == "off" {
		guard, classifiers = "off", nil
	}
	quotas := t.Quotas
	if quotas == nil {
		quotas = map[string]auth.Quota{}
	}
	add(keyModels, KeyInfo{Value: nonNil(models), Type: "array"})
	add(keyCloudDocConsent, KeyInfo{Value: t.Settings.CloudDocConsent, Type: "boolean"})
	add(keyContentGuard, KeyInfo{Value: guard, Type: "string", Enum: []string{"off", "audit", "block"}})
	add(keyGuardClassifiers, KeyInfo{Value: nonNil(classifiers), Type: "array"})
	add(keyCodingAgentRepos, KeyInfo{Value: nonNil(t.Settings.CodingAgentRepos), Type: "array"})
	add(keyConfigCaps, KeyInfo{Value: caps, Type: "object"})
	add(keyQuotas, KeyInfo{Value: quotas, Type: "object"})
	sort.Strings(v.WritableKeys)
	return v
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Get handles GET /v1/tenant/config (scope tenant_config:read).
func (s *Service) Get(w http.ResponseWriter, r *http.Request) {
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	t := p.Tenant
	var rec record
	err = s.st.View(r.Context(), func(tx store.Tx) error {
		var err error
		rec, err = readRecord(tx, t.ID)
		return err
	})
	if err != nil {
		httpx.WriteError(w, r, errcat.Storage(err))
		return
	}
	httpx.WriteJSON(w, http.StatusOK, s.view(t, rec))
}

// putRequest is the body of PUT /v1/tenant/config.
type putRequest struct {
	Key   *string         `json:"key"`
	Value json.RawMessage `json:"value"`
}

// Put handles PUT /v1/tenant/config (scope tenant_config:write): {"key","value"}
// writes one key (null resets it) and answers the document after the write.
func (s *Service) Put(w http.ResponseWriter, r *http.Request) {
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	t := p.Tenant
	var req putRequest
	if err := httpx.Decode(r, &req); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	if req.Key == nil || *req.Key == "" {
		httpx.WriteError(w, r, errcat.New(errcat.MissingField, "body.key", "key is required."))
		return
	}
	if req.Value == nil {
		httpx.WriteError(w, r, errcat.New(errcat.MissingField, "body.value", "value is required (null resets the key to its default)."))
		return
	}
	set, err := s.setter(t, *req.Key, req.Value)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	var rec record
	err = s.st.Update(r.Context(), func(tx store.Tx) error {
		var err error
		if rec, err = readRecord(tx, t.ID); err != nil {
			return err
		}
		set(&rec)
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return tx.Put(bucket, []byte(t.ID), b)
	})
	if err != nil {
		httpx.WriteError(w, r, errcat.Storage(err))
		return
	}
	httpx.WriteJSON(w, http.StatusOK, s.view(t, rec))
}

// setter validates value for key and returns the change to apply to the record.
func (s *Service) setter(t *auth.Tenant, key string, value json.RawMessage) (func(*record), error) {
	reset := bytes.Equal(bytes.TrimSpace(value), []byte("null"))
	if key == KeyDefaultModel {
		if reset {
			return func(r *record) { r.DefaultModel = nil }, nil
		}
		var alias string
		if err := json.Unmarshal(value, &alias); err != nil {
			return nil, invalid("default_model must be a string (a chat model alias).")
		}
		if !slices.Contains(s.chatAliases(t), alias) {
			return nil, invalid("default_model %q is not a chat model alias allowed for this tenant.", alias)
		}
		return func(r *record) { r.DefaultModel = &alias }, nil
	}
	for _, k := range intKeys() {
		if k.name != key {
			continue
		}
		if reset {
			return func(r *record) { *k.stored(r) = nil }, nil
		}
		n, ok := integer(value)
		if !ok {
			return nil, invalid("%s must be an integer.", key)
		}
		if n < int64(k.min) || n > int64(k.cap(t)) {
			return nil, invalid("%s must be between %d and %d; got %d.", key, k.min, k.cap(t), n)
		}
		v := int(n)
		return func(r *record) { *k.stored(r) = &v }, nil
	}
	if operatorKey(key) {
		return nil, errcat.Newf(errcat.TenantConfigKeyReadonly, "key", "%s is controlled by the gateway operator and cannot be written.", key)
	}
	return nil, invalid("Unknown tenant config key %q; writable keys: compact_keep_last_n, default_model, image_gen_rate_per_hour, image_max_ttl_hours.", key)
}

func invalid(format string, args ...any) *errcat.Error {
	return errcat.Newf(errcat.TenantConfigInvalidValue, "key", format, args...)
}

// integer parses a JSON integer (no fraction, no exponent, no quotes).
func integer(raw json.RawMessage) (int64, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return 0, false
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	n, err := num.Int64()
	return n, err == nil
}
