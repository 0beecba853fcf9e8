package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/tenantconfig"
	"github.com/chatgw/gateway/upstream"
)

// Images serves the generated-image endpoints of /v1 and purges expired
// images. Generated images are kept in the Store, tenant-scoped (no per-user
// filter; GW-User-Id is optional everywhere, DECISIONS 8 item 25), each with a
// time-to-live.
//
// # POST /v1/images/generations
//
// An OpenAI image generation request plus the gateway's ttl_hours. Checks,
// before anything is forwarded (each a 400 unless said otherwise):
//   - model: an alias of kind image_generation that the tenant's allowlist
//     allows, else model_not_in_allowlist (model); not a string is
//     invalid_field (model). Absent or null means the catalog's first
//     image_generation alias that the tenant allows; when there is none,
//     missing_field (model).
//   - prompt: absent or null is missing_field (prompt); not a string is
//     invalid_field (prompt).
//   - n: an integer from 1 to 10 (default 1), and not more than the tenant's
//     image_gen_rate_per_hour (a request that could never pass); else
//     invalid_field (n).
//   - ttl_hours: an integer from 1 to the tenant's image_max_ttl_hours; else
//     invalid_field (ttl_hours). Absent or null means 12 (DefaultImageTTLHours),
//     or the tenant's image_max_ttl_hours when that is lower.
//   - response_format: "url" (the default, as OpenAI's) or "b64_json"; else
//     invalid_field (response_format). It chooses what the answer carries; the
//     upstream is always asked for b64_json, since the gateway stores the bytes.
//   - stream: true is invalid_field (stream); streamed partial images are not
//     supported.
//
// Every other field (size, quality, style, user...) is forwarded verbatim;
// ttl_hours is not forwarded.
//
// Rate: the tenant's image_gen_rate_per_hour caps the images generated in any
// sliding window of one hour (Clock). The n images of a request are reserved
// before the upstream call, so concurrent requests cannot overshoot; a failed
// call returns its reservation, and an answer with fewer images than n is
// charged what it delivered. A request that does not fit answers 429
// model_quota_exhausted (the catalog's code for a tenant's rate budget for a
// model; rate_limit_exceeded is the per-token bucket) with Retry-After: the
// whole seconds until enough earlier images leave the window.
//
// The answer is OpenAI's shape with the gateway's metadata in each item:
//
//	{"created":1700000000,
//	 "data":[{"id":"img_...","object":"image","created_at":"...","expires_at":"...",
//	          "ttl_hours":12,"model":"lm-image","mime_type":"image/png","bytes":68,
//	          "revised_prompt":"...",            (when the upstream gave one)
//	          "url":"https://gw.example/v1/images/img_.../content"}],   (or "b64_json":"...")
//	 "usage":{...}}                              (when the upstream gave one)
//
// The url is the image's content endpoint on the gateway, built from the
// request (scheme from TLS or X-Forwarded-Proto, host from X-Forwarded-Host
// or Host, the mount prefix from the request URI); fetching it needs the bearer
// token, as every /v1 endpoint does.
//
// # GET /v1/images
//
// The tenant's live images, newest first, without their bytes:
// {"object":"list","data":[<metadata>...],"limit":N,"offset":N,"has_more":bool},
// where a metadata object is an item of the answer above without url and
// b64_json. limit defaults to 50 and must be 1..500, offset >= 0; otherwise
// 400 invalid_field (query.limit, query.offset).
//
// # GET /v1/images/{id}, GET /v1/images/{id}/content, DELETE /v1/images/{id}
//
// GET answers the metadata plus "b64_json"; /content answers the image bytes
// with their media type; DELETE removes the image and answers
// {"id":...,"object":"image","deleted":true}. An id that is unknown, belongs to
// another tenant or has expired (expires_at <= Clock.Now(), even before the
// purger ran) answers 404 image_not_found (id).
//
// # Storage
//
//	img/meta    str(tenant) str(id)                 -> metadata (JSON)
//	img/data    str(tenant) str(id)                 -> image bytes
//	img/expiry  u64(expires_at ns) str(tenant) str(id) -> ""  (purge index)
//	img/rate    str(tenant) u64(reserved_at ns) str(rid) -> image count (decimal)
//
// Ids are "img_" + 16 hex digits of the creation time in Unix nanoseconds + 16
// random hex digits, so a tenant's images sort by creation time. An image is
// written, and deleted, with its three records in one transaction.
// PurgeExpired walks img/expiry from the oldest expiry up to Clock.Now(), so it
// never reads live images, and drops rate-ledger entries older than the window.
type Images struct {
	up      upstream.Upstream
	catalog *upstream.Catalog
	st      store.Store
	clock   clock.Clock
	logger  *slog.Logger
	// maxBytes bounds the upstream's JSON answer, which is held whole to
	// decode and store its images.
	maxBytes int64
}

// ImagesConfig configures Images.
type ImagesConfig struct {
	// Upstream sends the generation calls. Required.
	Upstream upstream.Upstream
	// Catalog is the model catalog. Required.
	Catalog *upstream.Catalog
	// Store keeps the images, their expiry index and the rate ledger (buckets
	// img/...), and holds the tenant configuration. Required.
	Store store.Store
	// Clock stamps images and decides expiry and the rate window. Nil means
	// clock.Wall.
	Clock clock.Clock
	// Logger logs the purger's failures. Nil discards them.
	Logger *slog.Logger
	// MaxResponseBytes bounds what the gateway holds of one upstream answer
	// (relay.Options.MaxBytes). 0 means relay.DefaultMaxBytes (16 MiB).
	MaxResponseBytes int64
}

// Image limits and defaults.
const (
	// DefaultImageTTLHours is the time-to-live of an image whose request has no
	// ttl_hours (spec States: default 12 h).
	DefaultImageTTLHours = 12
	// MaxImagesPerRequest is the largest n of a generation request.
	MaxImagesPerRequest = 10
	// ImageRateWindow is the window of image_gen_rate_per_hour.
	ImageRateWindow = time.Hour
	// DefaultImagePurgeInterval is RunPurger's interval when given none.
	DefaultImagePurgeInterval = time.Minute
)

// NewImages returns the image endpoints for cfg.
func NewImages(cfg ImagesConfig) *Images {
	m := &Images{up: cfg.Upstream, catalog: cfg.Catalog, st: cfg.Store, clock: cfg.Clock, logger: cfg.Logger, maxBytes: cfg.MaxResponseBytes}
	if m.maxBytes <= 0 {
		m.maxBytes = relay.DefaultMaxBytes
	}
	if m.clock == nil {
		m.clock = clock.Wall{}
	}
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	return m
}

// imageJSON is an image's metadata as stored and answered; URL and B64JSON are
// only set in answers.
type imageJSON struct {
	ID            string    `json:"id"`
	Object        string    `json:"object"`
	CreatedAt     time.Time `json:"created_at"`
	ExpiresAt     time.Time `json:"expires_at"`
	TTLHours      int       `json:"ttl_hours"`
	Model         string    `json:"model"`
	MimeType      string    `json:"mime_type"`
	Bytes         int       `json:"bytes"`
	RevisedPrompt string    `json:"revised_prompt,omitempty"`
	URL           string    `json:"url,omitempty"`
	B64JSON       string    `json:"b64_json,omitempty"`
}

// genRequest is a checked generation request.
type genRequest struct {
	model  *upstream.ModelInfo
	n      int
	ttl    int
	format string // "url" or "b64_json"
	body   []byte // for the upstream
}

// Generate serves POST /v1/images/generations (see Images).
func (m *Images) Generate(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	body, err := httpx.ReadBody(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	obj, err := httpx.ParseObject(body)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	cfg, err := tenantconfig.Load(ctx, m.st, p.Tenant)
	if err != nil {
		httpx.WriteError(w, r, errcat.Storage(err))
		return
	}
	req, err := m.checkGenerate(obj, p.Tenant, cfg)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	reservation, err := m.reserve(ctx, p.Tenant.ID, req.n, cfg.ImageGenRatePerHour)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	images, usage, err := m.generate(ctx, req)
	if err != nil {
		m.release(ctx, reservation)
		httpx.WriteError(w, r, err)
		return
	}
	saved, err := m.save(ctx, p.Tenant.ID, req, images, reservation)
	if err != nil {
		m.release(ctx, reservation)
		httpx.WriteError(w, r, err)
		return
	}
	out := struct {
		Created int64           `json:"created"`
		Data    []imageJSON     `json:"data"`
		Usage   json.RawMessage `json:"usage,omitempty"`
	}{Created: saved[0].CreatedAt.Unix(), Data: saved, Usage: usage}
	for i := range out.Data {
		if req.format == "b64_json" {
			out.Data[i].B64JSON = base64.StdEncoding.EncodeToString(images[i].data)
		} else {
			out.Data[i].URL = contentURL(r, out.Data[i].ID)
		}
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// checkGenerate applies the request checks of Generate.
func (m *Images) checkGenerate(obj httpx.Object, t *auth.Tenant, cfg tenantconfig.Config) (*genRequest, error) {
	req := &genRequest{n: 1, format: "url"}
	if raw := obj.Get("model"); wire.IsNull(raw) {
		for i := range m.catalog.Models {
			if mi := &m.catalog.Models[i]; mi.Kind == upstream.KindImageGeneration && t.AllowsModel(mi.Alias) {
				req.model = mi
				break
			}
		}
		if req.model == nil {
			return nil, errcat.New(errcat.MissingField, "model",
				"model is required: this tenant has no default image generation model; GET /v1/models lists the models.")
		}
	} else {
		alias, err := obj.Model()
		if err != nil {
			return nil, err
		}
		if req.model, err = m.catalog.LookupKind(t, alias, upstream.KindImageGeneration); err != nil {
			return nil, err
		}
	}

	switch raw := obj.Get("prompt"); {
	case wire.IsNull(raw):
		return nil, errcat.New(errcat.MissingField, "prompt", "prompt is required: a text description of the image.")
	case raw[0] != '"':
		return nil, errcat.New(errcat.InvalidField, "prompt", "prompt must be a string.")
	}

	if raw := obj.Get("n"); !wire.IsNull(raw) {
		n, ok := isJSONInt(raw)
		if !ok || n < 1 || n > MaxImagesPerRequest {
			return nil, errcat.Newf(errcat.InvalidField, "n", "n must be an integer from 1 to %d.", MaxImagesPerRequest)
		}
		req.n = n
	}
	if req.n > cfg.ImageGenRatePerHour {
		return nil, errcat.Newf(errcat.InvalidField, "n",
			"n (%d) is more than this tenant's image_gen_rate_per_hour (%d).", req.n, cfg.ImageGenRatePerHour)
	}

	req.ttl = min(DefaultImageTTLHours, cfg.ImageMaxTTLHours)
	if raw := obj.Get("ttl_hours"); !wire.IsNull(raw) {
		ttl, ok := isJSONInt(raw)
		if !ok || ttl < 1 || ttl > cfg.ImageMaxTTLHours {
			return nil, errcat.Newf(errcat.InvalidField, "ttl_hours",
				"ttl_hours must be an integer from 1 to %d (this tenant's image_max_ttl_hours).", cfg.ImageMaxTTLHours)
		}
		req.ttl = ttl
	}

	if raw := obj.Get("response_format"); !wire.IsNull(raw) {
		switch string(raw) {
		case `"url"`:
		case `"b64_json"`:
			req.format = "b64_json"
		default:
			return nil, errcat.New(errcat.InvalidField, "response_format", `response_format must be "url" or "b64_json".`)
		}
	}
	if raw := obj.Get("stream"); !wire.IsNull(raw) && string(raw) != "false" {
		return nil, errcat.New(errcat.InvalidField, "stream", "Streamed image generation is not supported; omit stream.")
	}

	up := obj.Set("response_format", json.RawMessage(`"b64_json"`))
	req.body = up.Build(req.model.Alias, map[string]bool{"ttl_hours": true})
	return req, nil
}

// isJSONInt reports whether raw is a JSON integer literal (no fraction or
// exponent) and returns its value when it fits in an int.
func isJSONInt(raw json.RawMessage) (int, bool) {
	s := string(raw)
	if s == "" || strings.ContainsAny(s, ".eE") {
		return 0, false
	}
	n := 0
	neg := false
	if s[0] == '-' {
		neg, s = true, s[1:]
	}
	if s == "" || len(s) > 9 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// genImage is one image of an upstream answer.
type genImage struct {
	data          []byte
	mime          string
	revisedPrompt string
}

// generate calls the upstream and decodes its images.
func (m *Images) generate(ctx context.Context, req *genRequest) ([]genImage, json.RawMessage, error) {
	resp, err := m.up.Do(ctx, &upstream.Request{
		Alias:     req.model.Alias,
		Path:      "/images/generations",
		Body:      req.body,
		RequestID: httpx.InfoFrom(ctx).RequestID,
	})
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(relay.LimitReader(resp.Body, m.maxBytes))
	if err != nil {
		return nil, nil, errcat.As(err)
	}
	// The cause summarises the answer (redact.Body), which an operator needs
	// to tell an error object from a cut or empty answer, without its text,
	// which may quote the prompt.
	bad := func(msg string, cause error) error {
		summary := fmt.Errorf("openai.generate: upstream answer of %s", redact.Body(raw))
		if cause != nil {
			summary = fmt.Errorf("%w: %w", summary, cause)
		}
		return &errcat.Error{Code: errcat.UpstreamError, Message: msg, Cause: summary}
	}
	var ans struct {
		Data []struct {
			B64JSON       string `json:"b64_json"`
			RevisedPrompt string `json:"revised_prompt"`
		} `json:"data"`
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, nil, bad("The upstream's image answer is not valid JSON.", err)
	}
	if len(ans.Data) == 0 {
		return nil, nil, bad("The upstream answered without images.", nil)
	}
	images := make([]genImage, len(ans.Data))
	for i, d := range ans.Data {
		b, err := base64.StdEncoding.DecodeString(d.B64JSON)
		if err != nil || len(b) == 0 {
			return nil, nil, bad("The upstream answered without valid image data (b64_json).", err)
		}
		images[i] = genImage{data: b, mime: imageMime(b), revisedPrompt: d.RevisedPrompt}
	}
	if wire.IsNull(ans.Usage) {
		ans.Usage = nil
	}
	return images, ans.Usage, nil
}

// imageMime sniffs the media type of an image's bytes.
func imageMime(b []byte) string {
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(b))
	if strings.HasPrefix(mt, "image/") {
		return mt
	}
	return "application/octet-stream"
}

// contentURL is the absolute URL of the content endpoint of image id, as the
// client reached the gateway.
func contentURL(r *http.Request, id string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := firstValue(r.Header.Get("X-Forwarded-Proto")); p == "http" || p == "https" {
		scheme = p
	}
	host := r.Host
	if h := firstValue(r.Header.Get("X-Forwarded-Host")); h != "" {
		host = h
	}
	// A gateway mounted under a prefix (http.StripPrefix) sees a shorter
	// URL.Path than the request URI: keep the prefix.
	prefix := ""
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil && strings.HasSuffix(u.Path, r.URL.Path) {
		prefix = strings.TrimSuffix(u.Path, r.URL.Path)
	}
	if host == "" {
		return prefix + "/v1/images/" + id + "/content"
	}
	return scheme + "://" + host + prefix + "/v1/images/" + id + "/content"
}

func firstValue(h string) string {
	v, _, _ := strings.Cut(h, ",")
	return strings.TrimSpace(v)
}
