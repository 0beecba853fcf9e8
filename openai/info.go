package openai

import (
	"net/http"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/upstream"
)

// Info serves GET /v1/info: the model catalog restricted to the tenant's
// allowlist (see the package doc).
func (s *Service) Info(w http.ResponseWriter, r *http.Request) {
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, s.info(p.Tenant))
}

// info is the tenant's view of the catalog.
func (s *Service) info(t *auth.Tenant) upstream.Catalog {
	out := upstream.Catalog{Models: []upstream.ModelInfo{}, Notes: s.catalog.Notes}
	for _, m := range s.catalog.Models {
		if !t.AllowsModel(m.Alias) {
			continue
		}
		backends := make([]upstream.BackendInfo, len(m.Backends))
		for i, b := range m.Backends {
			b.BaseURLEnv = "" // a catalog-file field, never on the wire
			backends[i] = b
		}
		m.Backends = backends
		out.Models = append(out.Models, m)
	}
	return out
}
