package memory

import (
	"context"
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
		return "", errcat.Newf(errcat.MissingField, param, "%s is required.", httpx.FieldName(param))
	}
	if *v == "" {
		return "", errcat.Newf(errcat.InvalidField, param, "%s must not be empty.", httpx.FieldName(param))
	}
	return *v, nil
}

// bodyParam names a field of a request body.
func bodyParam(field string) string { return "body." + field }

// entryInput is the entry a request names: its bucket and key, and for a
// write the value.
type entryInput struct {
	b          bucketKey
	key, value string
}

// PutEntry handles POST /v1/memory (scope memory:write): upsert of
// {"key","value","visibility","scope_id"?}; 200 with the Entry.
func (s *Service) PutEntry(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, decodePut, func(ctx context.Context, in entryInput) (Entry, error) {
		return s.putEntry(ctx, in.b, in.key, in.value)
	})
}

// decodePut reads the body of POST /v1/memory.
func decodePut(r *http.Request) (entryInput, error) {
	var in entryInput
	tenant, user, err := callerOf(r)
	if err != nil {
		return in, err
	}
	var req putRequest
	if err := httpx.Decode(r, &req); err != nil {
		return in, err
	}
	if in.key, err = requiredString(req.Key, "body.key"); err != nil {
		return in, err
	}
	if in.value, err = requiredString(req.Value, "body.value"); err != nil {
		return in, err
	}
	in.b, err = bucketOf(tenant, user, req.Visibility, req.ScopeID, bodyParam)
	return in, err
}

// queryBuckets resolves the bucket named by the query (visibility, scope_id)
// of r. With optionalVis, an absent visibility yields both buckets of the scope
// (private first).
func queryBuckets(r *http.Request, optionalVis bool) ([]bucketKey, error) {
	tenant, user, err := callerOf(r)
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

// listedBuckets are the buckets GET /v1/memory lists.
func listedBuckets(r *http.Request) ([]bucketKey, error) { return queryBuckets(r, true) }

// queryBucket is the one bucket the query of r names (visibility required).
func queryBucket(r *http.Request) (bucketKey, error) {
	bs, err := queryBuckets(r, false)
	if err != nil {
		return bucketKey{}, err
	}
	return bs[0], nil
}

// queryEntry is the entry the query of r names: its bucket, then key.
func queryEntry(r *http.Request) (entryInput, error) {
	b, err := queryBucket(r)
	if err != nil {
		return entryInput{}, err
	}
	q := r.URL.Query()
	if !q.Has("key") {
		return entryInput{}, errcat.New(errcat.MissingField, "query.key", "key is required.")
	}
	key := q.Get("key")
	if key == "" {
		return entryInput{}, errcat.New(errcat.InvalidField, "query.key", "key must not be empty.")
	}
	return entryInput{b: b, key: key}, nil
}

// ListEntries handles GET /v1/memory?visibility=&scope_id= (scope memory:read):
// {"object":"list","data":[Entry...]} sorted by key; without visibility, the
// private entries of the caller then the public entries of the scope.
func (s *Service) ListEntries(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, listedBuckets, func(ctx context.Context, bs []bucketKey) (entryList, error) {
		es, err := s.listEntries(ctx, bs...)
		return entryList{Object: "list", Data: es}, err
	})
}

// DeleteEntry handles DELETE /v1/memory?visibility=&key=&scope_id= (scope
// memory:write): {"deleted":true} when the entry existed, {"deleted":false}
// otherwise.
func (s *Service) DeleteEntry(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, queryEntry, func(ctx context.Context, in entryInput) (map[string]bool, error) {
		deleted, err := s.deleteEntry(ctx, in.b, in.key)
		return map[string]bool{"deleted": deleted}, err
	})
}

// GetUsage handles GET /v1/memory/usage?visibility=&scope_id= (scope
// memory:read): {"used_bytes","cap_bytes","entries"} of the bucket.
func (s *Service) GetUsage(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, queryBucket, s.usage)
}
