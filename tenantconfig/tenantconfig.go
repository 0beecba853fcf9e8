// Package tenantconfig holds the tenant configuration: the writable keys of
// PUT /v1/tenant/config with their defaults, ranges and hard caps, stored in the
// gateway's Store. It is a leaf package of its own because several families read
// it (chat for default_model, images for TTLs, agents for compaction) and families
// must not import one another.
//
// # Keys
//
// Writable by a tenant (scope tenant_config:write), with their defaults and ranges:
//
//	default_model            string   "lm-4-scout"  a chat alias of the catalog in the tenant's allowlist
//	image_gen_rate_per_hour  integer  60            1 .. 200
//	image_max_ttl_hours      integer  168           1 .. 720
//	compact_keep_last_n      integer  20            1 .. 200
//
// The maxima are the hard caps, which "the operator can lift ... in token
// configuration": a tenant's config_caps in the token file
// replace the cap of a key (normally to lift it; a lower value lowers it). The
// effective value of an integer key is the stored value, or the default, clamped
// into the key's current range, so that a cap lowered by the operator applies at
// once. A stored default_model that the tenant's allowlist no longer allows gives
// way to the default.
//
// Operator keys, shown by GET and answered tenant_config_key_readonly by PUT:
// models (the effective allowlist), c1_cloud_doc_consent, content_guard ("off",
// "audit" or "block"), content_guard_classifiers (the names of the classifiers
// that guard the tenant, such as ["moderation","rules"]; [] when its guard is
// off), coding_agent_repos, config_caps (the effective cap of each capped key)
// and quotas.
//
// # Storage
//
// Bucket tenantcfg/values: the tenant id -> a JSON object of the keys the tenant
// wrote. Load reads one key; PUT rewrites it in one transaction.
//
// # HTTP
//
// GET /v1/tenant/config (scope tenant_config:read) answers
//
//	{"tenant_id":"acme",
//	 "values":{"default_model":"lm-4-scout","image_gen_rate_per_hour":60,...,"models":[...],...},
//	 "keys":{"default_model":{"value":"lm-4-scout","writable":true,"type":"string","default":"lm-4-scout","enum":[...]},
//	         "image_gen_rate_per_hour":{"value":60,"writable":true,"type":"integer","default":60,"range":{"min":1,"max":200}},
//	         "models":{"value":[...],"writable":false,"type":"array"}, ...},
//	 "writable_keys":["compact_keep_last_n","default_model","image_gen_rate_per_hour","image_max_ttl_hours"]}
//
// PUT /v1/tenant/config (scope tenant_config:write) takes {"key","value"} and
// answers 200 with the same document after the write. A null value resets the
// key to its default. Errors: missing key or value is 400 missing_field
// (body.key, body.value); an operator key is 400 tenant_config_key_readonly
// (key); an unknown key, a value of the wrong JSON type, out of range, or a model
// that is not a chat alias of the catalog in the tenant's allowlist is 400
// tenant_config_invalid_value (key).
package tenantconfig

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/store"
)

// Config is the effective configuration of one tenant: stored values over defaults.
type Config struct {
	DefaultModel        string `json:"default_model"`
	ImageGenRatePerHour int    `json:"image_gen_rate_per_hour"`
	ImageMaxTTLHours    int    `json:"image_max_ttl_hours"`
	CompactKeepLastN    int    `json:"compact_keep_last_n"`
}

// Defaults returns the values of a tenant that never wrote a key. It is a
// function, not a variable, so that no caller can change them for the
// whole process (two gateways in one process share nothing).
func Defaults() Config {
	return Config{
		DefaultModel:        "lm-4-scout",
		ImageGenRatePerHour: 60,
		ImageMaxTTLHours:    168,
		CompactKeepLastN:    20,
	}
}

// Names of the writable keys.
const (
	KeyDefaultModel        = "default_model"
	KeyImageGenRatePerHour = "image_gen_rate_per_hour"
	KeyImageMaxTTLHours    = "image_max_ttl_hours"
	KeyCompactKeepLastN    = "compact_keep_last_n"
)

// intKey describes an integer key: its range before config_caps and where it
// lives in Config and in the stored record.
type intKey struct {
	name    string
	min     int
	hardCap int
	field   func(*Config) *int
	stored  func(*record) **int
}

// intKeys returns the integer keys in name order.
func intKeys() []intKey {
	return []intKey{
		{KeyCompactKeepLastN, 1, 200,
			func(c *Config) *int { return &c.CompactKeepLastN }, func(r *record) **int { return &r.CompactKeepLastN }},
		{KeyImageGenRatePerHour, 1, 200,
			func(c *Config) *int { return &c.ImageGenRatePerHour }, func(r *record) **int { return &r.ImageGenRatePerHour }},
		{KeyImageMaxTTLHours, 1, 720,
			func(c *Config) *int { return &c.ImageMaxTTLHours }, func(r *record) **int { return &r.ImageMaxTTLHours }},
	}
}

// Cap returns the largest value tenant t may set for the integer key: the
// tenant's config_caps entry when it has one, else the hard cap; 0 for a
// key without a cap.
func Cap(t *auth.Tenant, key string) int {
	for _, k := range intKeys() {
		if k.name == key {
			return k.cap(t)
		}
	}
	return 0
}

func (k intKey) cap(t *auth.Tenant) int {
	if t != nil {
		if c, ok := t.ConfigCaps[k.name]; ok && c > 0 {
			return c
		}
	}
	return k.hardCap
}

// record is the stored form: only the keys the tenant wrote.
type record struct {
	DefaultModel        *string `json:"default_model,omitempty"`
	ImageGenRatePerHour *int    `json:"image_gen_rate_per_hour,omitempty"`
	ImageMaxTTLHours    *int    `json:"image_max_ttl_hours,omitempty"`
	CompactKeepLastN    *int    `json:"compact_keep_last_n,omitempty"`
}

// bucket holds one record per tenant, keyed by tenant id.
var bucket = []byte("tenantcfg/values")

func readRecord(tx store.Tx, tenant string) (record, error) {
	var rec record
	raw := tx.Get(bucket, []byte(tenant))
	if raw == nil {
		return rec, nil
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, fmt.Errorf("tenantconfig: record of tenant %q: %w", tenant, err)
	}
	return rec, nil
}

// effective applies rec over the defaults for tenant t.
func effective(t *auth.Tenant, rec record) Config {
	c := Defaults()
	if rec.DefaultModel != nil && (t == nil || t.AllowsModel(*rec.DefaultModel)) {
		c.DefaultModel = *rec.DefaultModel
	}
	for _, k := range intKeys() {
		v := k.field(&c)
		if s := *k.stored(&rec); s != nil {
			*v = *s
		}
		*v = max(k.min, min(*v, k.cap(t)))
	}
	return c
}

// Load returns the effective configuration of tenant t (Defaults for a nil t).
// A store failure is returned wrapped; callers answer storage_error.
func Load(ctx context.Context, st store.Store, t *auth.Tenant) (Config, error) {
	var c Config
	err := st.View(ctx, func(tx store.Tx) error {
		var err error
		c, err = LoadTx(tx, t)
		return err
	})
	if err != nil {
		return Config{}, fmt.Errorf("tenantconfig.Load: %w", err)
	}
	return c, nil
}

// LoadTx is Load in the caller's read transaction, so that a request that
// reads several families' records before calling upstream makes one
// transaction (one round trip on a database server).
func LoadTx(tx store.Tx, t *auth.Tenant) (Config, error) {
	if t == nil {
		return Defaults(), nil
	}
	rec, err := readRecord(tx, t.ID)
	if err != nil {
		return Config{}, fmt.Errorf("tenantconfig: read %s: %w", t.ID, err)
	}
	return effective(t, rec), nil
}

// AppendReads appends to dst the read of LoadTx for tenant t (its record),
// for a caller that prefetches its read transaction (store.Prefetcher).
func AppendReads(dst []store.Read, t *auth.Tenant) []store.Read {
	if t == nil {
		return dst
	}
	return append(dst, store.Read{Bucket: bucket, Key: []byte(t.ID)})
}
