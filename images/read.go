package images

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// List serves GET /v1/images (see the package doc).
func (s *Service) List(w http.ResponseWriter, r *http.Request) {
	httpx.HandleList(w, r, httpx.TenantID, func(ctx context.Context, tenant string, pg httpx.Page) ([]imageJSON, bool, error) {
		return s.list(ctx, tenant, pg)
	})
}

// Get serves GET /v1/images/{id}: the metadata plus b64_json.
func (s *Service) Get(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, httpx.TenantID, func(ctx context.Context, tenant string) (*imageJSON, error) {
		img, data, err := s.get(ctx, tenant, httpx.Param(r, "id"))
		if err != nil {
			return nil, err
		}
		img.B64JSON = base64.StdEncoding.EncodeToString(data)
		return img, nil
	})
}

// Content serves GET /v1/images/{id}/content: the image bytes.
func (s *Service) Content(w http.ResponseWriter, r *http.Request) {
	img, data, err := s.lookup(r)
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
func (s *Service) Delete(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, httpx.TenantID, func(ctx context.Context, tenant string) (deleted, error) {
		id := httpx.Param(r, "id")
		if err := s.delete(ctx, tenant, id); err != nil {
			return deleted{}, err
		}
		return deleted{id, "image", true}, nil
	})
}

// deleted is the answer of DELETE /v1/images/{id}.
type deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// lookup returns the live image of the request's path id for its tenant, with
// its bytes.
func (s *Service) lookup(r *http.Request) (*imageJSON, []byte, error) {
	tenant, err := httpx.TenantID(r)
	if err != nil {
		return nil, nil, err
	}
	return s.get(r.Context(), tenant, httpx.Param(r, "id"))
}

func imageNotFound() error {
	return errcat.New(errcat.ImageNotFound, "id",
		"No such image: the id is unknown, belongs to another tenant, or the image expired.")
}
