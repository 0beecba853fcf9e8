package preflight

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
)

// Consents stores the tenant-wide cloud-consent grants made with ;persist.
// Implementations are safe for concurrent use; failures are returned wrapped and
// Check answers them as storage_error.
type Consents interface {
	// Granted reports whether tenantID granted consent for contentHash.
	Granted(ctx context.Context, tenantID, contentHash string) (bool, error)
	// Grant stores a permanent grant of tenantID for contentHash; granting twice
	// is not an error.
	Grant(ctx context.Context, tenantID, contentHash string) error
}

// consentBucket holds the persisted grants: key <tenant>\x00<content_hash>,
// value {"granted_at":"<RFC 3339>"}.
const consentBucket = "consent/grants"

// StoreConsents is the Consents of a store.Store (bucket consent/grants).
type StoreConsents struct {
	st  store.Store
	clk clock.Clock
}

var _ Consents = (*StoreConsents)(nil)

// NewStoreConsents returns the Consents kept in st; clk stamps each grant (nil
// means the wall clock).
func NewStoreConsents(st store.Store, clk clock.Clock) *StoreConsents {
	if clk == nil {
		clk = clock.Wall{}
	}
	return &StoreConsents{st: st, clk: clk}
}

func consentKey(tenantID, hash string) []byte {
	return []byte(tenantID + "\x00" + strings.ToLower(hash))
}

// Granted reports whether tenantID persisted a grant for contentHash (compared
// case-insensitively).
func (c *StoreConsents) Granted(ctx context.Context, tenantID, contentHash string) (bool, error) {
	var ok bool
	err := c.st.View(ctx, func(tx store.Tx) error {
		ok = tx.Get([]byte(consentBucket), consentKey(tenantID, contentHash)) != nil
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("preflight.Granted: %w", err)
	}
	return ok, nil
}

// Grant persists tenantID's grant for contentHash; a second grant keeps the
// first one's time.
func (c *StoreConsents) Grant(ctx context.Context, tenantID, contentHash string) error {
	key := consentKey(tenantID, contentHash)
	val, _ := json.Marshal(struct {
		GrantedAt time.Time `json:"granted_at"`
	}{c.clk.Now().UTC()})
	err := c.st.Batch(ctx, func(tx store.Tx) error {
		if tx.Get([]byte(consentBucket), key) != nil {
			return nil
		}
		return tx.Put([]byte(consentBucket), key, val)
	})
	if err != nil {
		return fmt.Errorf("preflight.Grant: %w", err)
	}
	return nil
}

// consentEntry is one entry of the GW-Cloud-Consent header.
type consentEntry struct {
	hash    string // lower case
	persist bool
}

// parseConsent parses <content_hash>[;persist][, ...]; empty entries and
// unknown parameters are ignored.
func parseConsent(h string) []consentEntry {
	var out []consentEntry
	for entry := range strings.SplitSeq(h, ",") {
		hash, params, _ := strings.Cut(entry, ";")
		hash = strings.ToLower(strings.TrimSpace(hash))
		if hash == "" {
			continue
		}
		e := consentEntry{hash: hash}
		for p := range strings.SplitSeq(params, ";") {
			if strings.EqualFold(strings.TrimSpace(p), "persist") {
				e.persist = true
			}
		}
		out = append(out, e)
	}
	return out
}

// requiredConsent is one entry of required_consents.
type requiredConsent struct {
	ContentHash string `json:"content_hash"`
	DocName     string `json:"doc_name"`
}

// reachesCloud reports whether a request for m may be answered by a backend
// that is not local: one whose status lets the router try it.
func reachesCloud(m *upstream.ModelInfo) bool {
	for _, b := range m.Backends {
		if b.Provider != "local" && (b.Status == upstream.StatusAvailable || b.Status == upstream.StatusDeprecated) {
			return true
		}
	}
	return false
}

// checkConsent enforces cloud consent for docs and stores ;persist grants.
func checkConsent(ctx context.Context, req *Request, m *upstream.ModelInfo, docs []Document) error {
	if !req.Tenant.Settings.CloudDocConsent || len(docs) == 0 {
		return nil
	}
	entries := parseConsent(req.CloudConsent)
	listed := func(hash string) (found, persist bool) {
		for _, e := range entries {
			if e.hash == hash {
				found, persist = true, persist || e.persist
			}
		}
		return found, persist
	}
	if reachesCloud(m) {
		var missing []requiredConsent
		for i, d := range docs {
			if slices.ContainsFunc(docs[:i], func(o Document) bool { return o.ContentHash == d.ContentHash }) {
				continue
			}
			if ok, _ := listed(d.ContentHash); ok {
				continue
			}
			if req.Consents != nil {
				ok, err := req.Consents.Granted(ctx, req.Tenant.ID, d.ContentHash)
				if err != nil {
					return errcat.Storage(err)
				}
				if ok {
					continue
				}
			}
			missing = append(missing, requiredConsent{ContentHash: d.ContentHash, DocName: d.Name})
		}
		if len(missing) > 0 {
			return &errcat.Error{
				Code:  errcat.CloudConsentRequired,
				Param: req.ParamPrefix + "attachments",
				Message: "Document attachments would be sent to a cloud model. Repeat the request with the header " +
					"GW-Cloud-Consent: <content_hash>[;persist] for each document in required_consents, or use a local model.",
				Extra: map[string]any{"required_consents": missing},
			}
		}
	}
	if req.Consents == nil {
		return nil
	}
	for i, d := range docs {
		if _, persist := listed(d.ContentHash); !persist ||
			slices.ContainsFunc(docs[:i], func(o Document) bool { return o.ContentHash == d.ContentHash }) {
			continue
		}
		if err := req.Consents.Grant(ctx, req.Tenant.ID, d.ContentHash); err != nil {
			return errcat.Storage(err)
		}
	}
	return nil
}
