package memory

import (
	"net/http"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// putRequest is the body of POST /v1/memory.
type putRequest struct {
	Key        *string `json:"key"`
	Value      *string `json:"value"`
	Visibility *string `json:"visibility"`
	ScopeID    *string `json:"scope_id"`
}

// entryList is the answer of GET /v1/memory.
type entryList struct {
	Object string  `json:"object"`
	Data   []Entry `json:"data"`
}

// requiredString checks a required, non-empty string field.
func requiredString(v *string, param string) (string, error) {
	if v == nil {
		return "", errcat.Newf(errcat.MissingField, param, "%s is required.", fieldName(param))
	}
	if *v == "" {
		return "", errcat.Newf(errcat.InvalidField, param, "%s must not be empty.", fieldName(param))
	}
	return *v, nil
}

// PutEntry handles POST /v1/memory (scope memory:write): upsert of
// {"key","value","visibility","scope_id"?}; 200 with the Entry.
func (s *Service) PutEntry(w http.ResponseWriter, r *http.Request) {
	b, key, value, err := s.decodePut(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	e, err := s.putEntry(r.Context(), b, key, value)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, e)
}

func (s *Service) decodePut(r *http.Request) (b bucketKey, key, value string, err error) {
	tenant, err := tenantOf(r)
	if err != nil {
		return b, "", "", err
	}
	user, err := userOf(r)
	if err != nil {
		return b, "", "", err
	}
	var req putRequest
	if err := httpx.Decode(r, &req); err != nil {
		return b, "", "", err
	}
	if key, err = requiredString(req.Key, "body.key"); err != nil {
		return b, "", "", err
	}
	if value, err = requiredString(req.Value, "body.value"); err != nil {
		return b, "", "", err
	}
	vis, err := visibilityOf(req.Visibility, "body.visibility")
	if err != nil {
		return b, "", "", err
	}
	scope := ""
	if req.ScopeID != nil {
		scope = *req.ScopeID
	}
	if scope, err = scopeOf(scope, "body.scope_id"); err != nil {
		return b, "", "", err
	}
	return newBucketKey(tenant, scope, vis, user), key, value, nil
}

// queryBuckets resolves the bucket named by the query (visibility, scope_id)
// of r. With optionalVis, an absent visibility yields both buckets of the scope
// (private first).
func queryBuckets(r *http.Request, optionalVis bool) ([]bucketKey, error) {
	tenant, err := tenantOf(r)
	if err != nil {
		return nil, err
	}
	user, err := userOf(r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	scope, err := scopeOf(q.Get("scope_id"), "query.scope_id")
	if err != nil {
		return nil, err
	}
	v := q.Get("visibility")
	if v == "" && optionalVis {
		return []bucketKey{newBucketKey(tenant, scope, Private, user), newBucketKey(tenant, scope, Public, user)}, nil
	}
	vis, err := visibilityOf(&v, "query.visibility")
	if err != nil {
		return nil, err
	}
	return []bucketKey{newBucketKey(tenant, scope, vis, user)}, nil
}

// ListEntries handles GET /v1/memory?visibility=&scope_id= (scope memory:read):
// {"object":"list","data":[Entry...]} sorted by key; without visibility, the
// private entries of the caller then the public entries of the scope.
func (s *Service) ListEntries(w http.ResponseWriter, r *http.Request) {
	bs, err := queryBuckets(r, true)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	es, err := s.listEntries(r.Context(), bs...)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, entryList{Object: "list", Data: es})
}

// DeleteEntry handles DELETE /v1/memory?visibility=&key=&scope_id= (scope
// memory:write): {"deleted":true} when the entry existed, {"deleted":false}
// otherwise.
func (s *Service) DeleteEntry(w http.ResponseWriter, r *http.Request) {
	bs, err := queryBuckets(r, false)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	q := r.URL.Query()
	if !q.Has("key") {
		httpx.WriteError(w, r, errcat.New(errcat.MissingField, "query.key", "key is required."))
		return
	}
	key := q.Get("key")
	if key == "" {
		httpx.WriteError(w, r, errcat.New(errcat.InvalidField, "query.key", "key must not be empty."))
		return
	}
	deleted, err := s.deleteEntry(r.Context(), bs[0], key)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]bool{"deleted": deleted})
}

// GetUsage handles GET /v1/memory/usage?visibility=&scope_id= (scope
// memory:read): {"used_bytes","cap_bytes","entries"} of the bucket.
func (s *Service) GetUsage(w http.ResponseWriter, r *http.Request) {
	bs, err := queryBuckets(r, false)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	u, err := s.usage(r.Context(), bs[0])
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, u)
}
