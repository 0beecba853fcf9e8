package openai

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/upstream"
)

// modelsTTL is how long a computed /v1/models list is served ("Cached for 60 s").
const modelsTTL = 60 * time.Second

type modelList struct {
	Object string      `json:"object"`
	Data   []modelItem `json:"data"`
}

// modelItem is an OpenAI model object with the additive status of
// /v1/info's models (modelStatus), so that a client choosing from the list
// sees which models have no configured backend.
type modelItem struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	OwnedBy string          `json:"owned_by"`
	Status  upstream.Status `json:"status"`
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
	for i := range s.catalog.Models {
		if m := &s.catalog.Models[i]; t.AllowsModel(m.Alias) {
			list.Data = append(list.Data, s.item(m))
		}
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

// item is the model object of m, as the list and GetModel give it.
func (s *Service) item(m *upstream.ModelInfo) modelItem {
	owner := m.Family
	if owner == "" {
		owner = "chatgw"
	}
	return modelItem{ID: m.Alias, Object: "model", Created: s.created, OwnedBy: owner, Status: modelStatus(m)}
}

// GetModel serves GET /v1/models/{id}, OpenAI's model retrieval: the model
// object of GET /v1/models' list for an alias of any kind that the
// tenant's allowlist allows. An alias that is not in the catalog, or that
// the tenant may not use, answers 404 route_not_found, in OpenAI's error
// shape as the gateway's envelope is: the path names no model this tenant
// can see, and the two cases answer alike, so that another tenant's
// allowlist does not show.
func (s *Service) GetModel(w http.ResponseWriter, r *http.Request) {
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	id := httpx.Param(r, "id")
	m := s.catalog.Lookup(id)
	if m == nil || !p.Tenant.AllowsModel(id) {
		httpx.WriteError(w, r, errcat.Newf(errcat.RouteNotFound, "",
			"No model %q for this tenant; GET /v1/models lists the models it may use.", id))
		return
	}
	// The same answer as the list's entry, cached as long.
	w.Header().Set("Cache-Control", "private, max-age=60")
	httpx.WriteJSON(w, http.StatusOK, s.item(m))
}

// allowlistKey identifies an allowlist: "*" for every alias, else the aliases.
func allowlistKey(t *auth.Tenant) string {
	if t.Models == nil {
		return "*"
	}
	return "=" + strings.Join(t.Models, "\x00")
}
