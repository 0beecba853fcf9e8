package gateway

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/upstream"
)

// index answers GET / with what this service is and where to go next.
func (g *Gateway) index(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		httpx.WriteError(w, r, errcat.Newf(errcat.RouteNotFound, "", "No route for %s %s.", r.Method, r.URL.Path))
		return
	}
	// One URL, two audiences: a browser gets the landing page, any other
	// client the JSON (curl sends Accept: */*).
	w.Header().Set("Vary", "Accept")
	if strings.Contains(r.Header.Get("Accept"), "text/html") {
		g.apidocs.Landing(w, r)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{
		"name":    "chatgw",
		"version": Version,
		"links": map[string]string{
			"health":        "/healthz",
			"ready":         "/readyz",
			"errors":        "/errors",
			"errors_html":   "/docs/errors",
			"models":        "/v1/models",
			"info":          "/v1/info",
			"playground":    "/playground",
			"api_reference": "/redoc",
			"openapi":       "/openapi.json",
		},
	})
}

// healthz answers 200 while the process is alive.
func (g *Gateway) healthz(w http.ResponseWriter, _ *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyReport is the ReadyReport (ready, router, local_backend) plus the
// additive probes object.
type readyReport struct {
	Ready        bool                            `json:"ready"`
	Router       upstream.Status                 `json:"router"`
	LocalBackend upstream.Status                 `json:"local_backend"`
	Probes       map[string]upstream.ProbeResult `json:"probes,omitempty"`
}

// readyz probes the router and the backends in parallel (1 s each) and answers
// 200 when the router is available, 503 otherwise, with the report either way.
// The probe becomes the latest one /v1/info shows (upstream.Health).
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	rep := readyReport{Router: upstream.StatusUnconfigured, LocalBackend: upstream.StatusUnconfigured}
	if g.health != nil {
		// Recorded for /v1/info, which then shows what this probe found.
		ctx, cancel := context.WithTimeout(r.Context(), 1500*time.Millisecond)
		res := g.health.Probe(ctx)
		cancel()
		rep.Router, rep.LocalBackend, rep.Probes = res.Router, res.LocalBackend, res.Probes
	} else {
		// An embedder's upstream that cannot probe is taken as reachable.
		rep.Router = upstream.StatusAvailable
	}
	rep.Ready = rep.Router == upstream.StatusAvailable
	status := http.StatusOK
	if !rep.Ready {
		status = http.StatusServiceUnavailable
	}
	httpx.WriteJSON(w, status, rep)
}

// docs serves /docs/*: the error catalog as HTML (/docs/errors) and the API
// reference (/docs/api/ and its files).
func (g *Gateway) docs(w http.ResponseWriter, r *http.Request) {
	rest := httpx.Param(r, "path")
	switch rest {
	case "/errors", "/errors/":
		g.errorsHTML.ServeHTTP(w, r)
	default:
		if g.apidocs.Reference(w, r, rest) {
			return
		}
		httpx.WriteError(w, r, errcat.Newf(errcat.RouteNotFound, "", "No route for %s %s.", r.Method, r.URL.Path))
	}
}
