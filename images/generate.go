package images

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/redact"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/tenantconfig"
	"github.com/chatgw/gateway/upstream"
)

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

// Generate serves POST /v1/images/generations (see the package doc).
func (s *Service) Generate(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	obj, err := httpx.ReadObject(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	cfg, err := tenantconfig.Load(ctx, s.st, p.Tenant)
	if err != nil {
		httpx.WriteError(w, r, errcat.Storage(err))
		return
	}
	req, err := s.checkGenerate(obj, p.Tenant, cfg)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	reservation, err := s.reserve(ctx, p.Tenant.ID, req.n, cfg.ImageGenRatePerHour)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	images, usage, err := s.generate(ctx, req)
	if err != nil {
		s.release(ctx, reservation)
		httpx.WriteError(w, r, err)
		return
	}
	saved, err := s.save(ctx, p.Tenant.ID, req, images, reservation)
	if err != nil {
		s.release(ctx, reservation)
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
func (s *Service) checkGenerate(obj httpx.Object, t *auth.Tenant, cfg tenantconfig.Config) (*genRequest, error) {
	req := &genRequest{n: 1, format: "url"}
	if raw := obj.Get("model"); wire.IsNull(raw) {
		for i := range s.catalog.Models {
			if mi := &s.catalog.Models[i]; mi.Kind == upstream.KindImageGeneration && t.AllowsModel(mi.Alias) {
				req.model = mi
				break
			}
		}
		if req.model == nil {
			return nil, errcat.New(errcat.MissingField, "model",
				"model is required: this tenant has no default image generation model; GET /v1/models lists the models.")
		}
		if err := req.model.NotConfigured(); err != nil {
			return nil, err
		}
	} else {
		alias, err := obj.Model()
		if err != nil {
			return nil, err
		}
		if req.model, err = s.catalog.LookupKind(t, alias, upstream.KindImageGeneration); err != nil {
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
		if !ok || n < 1 || n > MaxPerRequest {
			return nil, errcat.Newf(errcat.InvalidField, "n", "n must be an integer from 1 to %d.", MaxPerRequest)
		}
		req.n = n
	}
	if req.n > cfg.ImageGenRatePerHour {
		return nil, errcat.Newf(errcat.InvalidField, "n",
			"n (%d) is more than this tenant's image_gen_rate_per_hour (%d).", req.n, cfg.ImageGenRatePerHour)
	}

	req.ttl = min(DefaultTTLHours, cfg.ImageMaxTTLHours)
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
func (s *Service) generate(ctx context.Context, req *genRequest) ([]genImage, json.RawMessage, error) {
	resp, err := s.up.Do(ctx, &upstream.Request{
		Alias:     req.model.Alias,
		Path:      "/images/generations",
		Body:      req.body,
		RequestID: httpx.InfoFrom(ctx).RequestID,
	})
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(relay.LimitReader(resp.Body, s.maxBytes))
	if err != nil {
		return nil, nil, errcat.As(err)
	}
	// The cause summarises the answer (redact.Body), which an operator needs
	// to tell an error object from a cut or empty answer, without its text,
	// which may quote the prompt.
	bad := func(msg string, cause error) error {
		summary := fmt.Errorf("images.generate: upstream answer of %s", redact.Body(raw))
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
	// The usage record counts what the upstream says it used, even when its
	// images turn out unusable.
	httpx.MeterOf(ctx).Report(ans.Usage)
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
