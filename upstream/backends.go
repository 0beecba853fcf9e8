package upstream

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The default upstream time-outs: connect 5 s, first byte 120 s (a trigger for
// fallback), total 600 s.
const (
	DefaultConnectTimeout   = 5 * time.Second
	DefaultFirstByteTimeout = 120 * time.Second
	DefaultTotalTimeout     = 600 * time.Second
)

// Backends is where the model backends live: the provider base URLs (OpenAI
// compatible, normally ending in /v1), their API keys and the time-outs. The zero
// value has every backend unconfigured and the default time-outs.
type Backends struct {
	// LocalURL is GATEWAY_LOCAL_URL; "" leaves the local backend unconfigured.
	// (gatewayd's default, http://127.0.0.1:11434/v1, is applied by gatewayd.)
	LocalURL string
	// LocalAPIKey is sent as a bearer token to the local backend; "" sends none.
	LocalAPIKey string
	// CloudAURL and CloudAAPIKey are GATEWAY_CLOUDA_URL and GATEWAY_CLOUDA_API_KEY.
	CloudAURL, CloudAAPIKey string
	// CloudBURL and CloudBAPIKey are GATEWAY_CLOUDB_URL and GATEWAY_CLOUDB_API_KEY.
	CloudBURL, CloudBAPIKey string
	// RouterURL is GATEWAY_ROUTER_URL, an external OpenAI-compatible model router.
	// When set, every model call goes there (with the backend's router_alias as
	// model, the chain still tried in order), every backend counts as configured,
	// and Probe reports it as the router. "" means the built-in router.
	RouterURL string
	// RouterAPIKey is sent as a bearer token to RouterURL; "" sends none. Provider
	// keys are never sent to the external router.
	RouterAPIKey string
	// ConnectTimeout bounds dialling a backend; 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// FirstByteTimeout bounds each attempt's wait for the response headers
	// (GATEWAY_FIRST_BYTE_TIMEOUT); passing it moves to the next backend of the
	// chain. 0 means DefaultFirstByteTimeout.
	FirstByteTimeout time.Duration
	// TotalTimeout bounds a whole call, reading the response body included
	// (GATEWAY_UPSTREAM_TIMEOUT); 0 means DefaultTotalTimeout.
	TotalTimeout time.Duration
}

// URL returns the base URL of provider (local, cloudA, cloudB), "" when it is
// unconfigured or unknown.
func (b Backends) URL(provider string) string {
	switch provider {
	case ProviderLocal:
		return b.LocalURL
	case ProviderCloudA:
		return b.CloudAURL
	case ProviderCloudB:
		return b.CloudBURL
	}
	return ""
}

// APIKey returns the API key of provider, "" when it has none.
func (b Backends) APIKey(provider string) string {
	switch provider {
	case ProviderLocal:
		return b.LocalAPIKey
	case ProviderCloudA:
		return b.CloudAAPIKey
	case ProviderCloudB:
		return b.CloudBAPIKey
	}
	return ""
}

// Configured reports whether calls for provider can be sent anywhere: its URL is
// set, or an external router is.
func (b Backends) Configured(provider string) bool {
	return b.RouterURL != "" || b.URL(provider) != ""
}

// Validate checks that every set URL is an absolute http(s) URL and that no
// time-out is negative.
func (b Backends) Validate() error {
	for _, u := range []struct{ name, url string }{
		{"local", b.LocalURL}, {"cloudA", b.CloudAURL}, {"cloudB", b.CloudBURL}, {"router", b.RouterURL},
	} {
		if u.url == "" {
			continue
		}
		p, err := url.Parse(u.url)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("upstream: %s URL must be an absolute http(s) URL", u.name)
		}
	}
	if b.ConnectTimeout < 0 || b.FirstByteTimeout < 0 || b.TotalTimeout < 0 {
		return errors.New("upstream: time-outs must not be negative")
	}
	return nil
}

func (b Backends) withDefaults() Backends {
	if b.ConnectTimeout == 0 {
		b.ConnectTimeout = DefaultConnectTimeout
	}
	if b.FirstByteTimeout == 0 {
		b.FirstByteTimeout = DefaultFirstByteTimeout
	}
	if b.TotalTimeout == 0 {
		b.TotalTimeout = DefaultTotalTimeout
	}
	return b
}

// WithStatus returns a copy of the catalog as GET /v1/info shows it for b: a
// backend whose provider URL (base_url_env, else provider) is unset, with no
// external router, has status unconfigured; other statuses stay as the catalog
// says; base_url_env is omitted. A model none of whose backends can then be
// tried is not Configured, and says which variable would configure it.
func (c *Catalog) WithStatus(b Backends) *Catalog { return c.withStatus(b, nil) }

// withStatus is WithStatus, and with rd, the statuses of a probe too: an
// available or deprecated backend whose probe (its provider's, or the
// external router's) found it configured but unreachable is unconfigured, as
// /readyz reports it.
func (c *Catalog) withStatus(b Backends, rd *Readiness) *Catalog {
	out := c.Clone()
	for i := range out.Models {
		m := &out.Models[i]
		m.setup = setupOf(m, b)
		for j := range m.Backends {
			be := &m.Backends[j]
			tried := be.Status == StatusAvailable || be.Status == StatusDeprecated
			if !b.Configured(be.urlProvider()) || tried && rd != nil && unreachable(rd, probeKey(be.urlProvider(), b)) {
				be.Status = StatusUnconfigured
			}
			be.BaseURLEnv = ""
		}
	}
	return out
}

// unreachable reports whether rd probed key and found it configured but not
// reachable.
func unreachable(rd *Readiness, key string) bool {
	p, ok := rd.Probes[key]
	return ok && p.Configured && !p.Reachable
}

// setupOf says what would give m a backend to try with b, "" when it has
// one: the variables of the unset URLs of its backends that the catalog lets
// be tried (the chain is tried "in order", so any of them is enough), or the
// catalog file itself when it marks every backend planned or unconfigured.
func setupOf(m *ModelInfo, b Backends) string {
	var vars []string
	for i := range m.Backends {
		be := &m.Backends[i]
		if be.Status == StatusPlanned || be.Status == StatusUnconfigured {
			continue
		}
		if b.Configured(be.urlProvider()) {
			return ""
		}
		if v := urlVariable(be.urlProvider()); !slices.Contains(vars, v) {
			vars = append(vars, v)
		}
	}
	if len(vars) == 0 {
		return "the models file (GATEWAY_MODELS_FILE) marks each of its backends planned or unconfigured; mark one available"
	}
	return "set " + strings.Join(vars, " or ") + " (or GATEWAY_ROUTER_URL, an external router) and restart the gateway"
}

// urlVariable is gatewayd's variable of provider's base URL.
func urlVariable(provider string) string {
	return "GATEWAY_" + strings.ToUpper(provider) + "_URL"
}

// joinURL appends an API path ("/chat/completions") to a base URL ("…/v1").
func joinURL(base, path string) string {
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}

// newTransport is the tuned transport shared by every call of a Router: many idle
// connections per host (high concurrency to few backends), HTTP/2 when offered, a
// bounded connect, and no response-header time-out (the first-byte time-out is
// applied per attempt by the Router).
func newTransport(connect time.Duration) *http.Transport {
	dialer := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   connect,
		ExpectContinueTimeout: time.Second,
	}
}
