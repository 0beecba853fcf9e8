package openai

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// modelsTTL is how long a computed /v1/models list is served ("Cached for 60 s").
const modelsTTL = 60 * time.Second

type modelList struct {
	Object string      `json:"object"`
	Data   []modelItem `json:"data"`
}

type modelItem struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// cachedList is an encoded /v1/models answer and when it expires.
type cachedList struct {
	body    []byte
	expires time.Time
}

// Models serves GET /v1/models (see the package doc).
func (s *Service) Models(w http.ResponseWriter, r *http.Request) {
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	body, err := s.modelList(p.Tenant)
	if err != nil {
		httpx.WriteError(w, r, errcat.Internal(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// The list is the same for 60 s (the cache above); say so to HTTP caches,
	// privately, as it depends on the tenant's allowlist.
	w.Header().Set("Cache-Control", "private, max-age=60")
	w.Write(body)
}

// modelList returns the encoded list for the tenant's allowlist, from the
// cache while it is fresh.
func (s *Service) modelList(t *auth.Tenant) ([]byte, error) {
	key := allowlistKey(t)
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.models[key]; ok && now.Before(c.expires) {
		return c.body, nil
	}
	list := modelList{Object: "list", Data: []modelItem{}}
	for _, m := range s.catalog.Models {
		if !t.AllowsModel(m.Alias) {
			continue
		}
		owner := m.Family
		if owner == "" {
			owner = "chatgw"
		}
		list.Data = append(list.Data, modelItem{ID: m.Alias, Object: "model", Created: s.created, OwnedBy: owner})
	}
	body, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	body = append(body, '\n')
	for k, c := range s.models { // drop stale lists: the map stays as small as the set of allowlists
		if !now.Before(c.expires) {
			delete(s.models, k)
		}
	}
	s.models[key] = cachedList{body: body, expires: now.Add(modelsTTL)}
	return body, nil
}

// allowlistKey identifies an allowlist: "*" for every alias, else the aliases.
func allowlistKey(t *auth.Tenant) string {
	if t.Models == nil {
		return "*"
	}
	return "=" + strings.Join(t.Models, "\x00")
}
