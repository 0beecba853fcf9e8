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
	httpx.WriteJSON(w, http.StatusOK, s.info(s.infoOf(r.Context()), p.Tenant))
}

// infoModel is a ModelInfo as GET /v1/info shows it, with the additive
// field status: unconfigured for a model none of whose backends is
// configured (it answers model_not_configured), available otherwise.
//
// context_window is the effective window (upstream.ModelInfo.Window: what its
// servers said they serve, else the catalog's), and the additive
// context_window_source says where it came from.
type infoModel struct {
	upstream.ModelInfo
	Status              upstream.Status `json:"status"`
	ContextWindowSource string          `json:"context_window_source"`
}

// infoCatalog is the ModelCatalog of GET /v1/info.
type infoCatalog struct {
	Models []infoModel `json:"models"`
	Notes  string      `json:"notes"`
}

// info is the tenant's view of cat.
func (s *Service) info(cat *upstream.Catalog, t *auth.Tenant) infoCatalog {
	out := infoCatalog{Models: []infoModel{}, Notes: cat.Notes}
	for _, m := range cat.Models {
		if !t.AllowsModel(m.Alias) {
			continue
		}
		backends := make([]upstream.BackendInfo, len(m.Backends))
		for i, b := range m.Backends {
			b.BaseURLEnv = "" // a catalog-file field, never on the wire
			backends[i] = b
		}
		m.Backends = backends
		m.ContextWindow = m.Window()
		out.Models = append(out.Models, infoModel{ModelInfo: m, Status: modelStatus(&m), ContextWindowSource: m.WindowSource()})
	}
	return out
}

// modelStatus is the additive status of a model in /v1/info and
// /v1/models: unconfigured when it answers model_not_configured.
func modelStatus(m *upstream.ModelInfo) upstream.Status {
	if !m.Configured() {
		return upstream.StatusUnconfigured
	}
	return upstream.StatusAvailable
}
