package openai

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// List serves GET /v1/images (see Images).
func (m *Images) List(w http.ResponseWriter, r *http.Request) {
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	pg, err := httpx.ParsePage(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	page, more, err := m.list(r.Context(), p.Tenant.ID, pg.Limit, pg.Offset)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteList(w, pg, page, more)
}

// Get serves GET /v1/images/{id}: the metadata plus b64_json.
func (m *Images) Get(w http.ResponseWriter, r *http.Request) {
	img, data, err := m.lookup(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	img.B64JSON = base64.StdEncoding.EncodeToString(data)
	httpx.WriteJSON(w, http.StatusOK, img)
}

// Content serves GET /v1/images/{id}/content: the image bytes.
func (m *Images) Content(w http.ResponseWriter, r *http.Request) {
	img, data, err := m.lookup(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", img.MimeType)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("Cache-Control", "private")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// Delete serves DELETE /v1/images/{id}.
func (m *Images) Delete(w http.ResponseWriter, r *http.Request) {
	p, err := httpx.Principal(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	id := httpx.Param(r, "id")
	if err := m.delete(r.Context(), p.Tenant.ID, id); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{id, "image", true})
}

// lookup returns the live image of the request's path id for its tenant, with
// its bytes.
func (m *Images) lookup(r *http.Request) (*imageJSON, []byte, error) {
	p, err := httpx.Principal(r)
	if err != nil {
		return nil, nil, err
	}
	return m.get(r.Context(), p.Tenant.ID, httpx.Param(r, "id"))
}

func imageNotFound() error {
	return errcat.New(errcat.ImageNotFound, "id",
		"No such image: the id is unknown, belongs to another tenant, or the image expired.")
}

// RunPurger calls PurgeExpired at once and then every interval (0 or less means
// DefaultImagePurgeInterval) until ctx ends; it returns then. Failures are
// logged and retried at the next interval. The root starts it in a goroutine
// and cancels ctx on Close.
func (m *Images) RunPurger(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = DefaultImagePurgeInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := m.PurgeExpired(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			m.logger.LogAttrs(ctx, slog.LevelWarn, "image purge failed", slog.Int("purged", n), slog.String("error", err.Error()))
		case n > 0:
			m.logger.LogAttrs(ctx, slog.LevelInfo, "expired images purged", slog.Int("purged", n))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
