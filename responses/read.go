package responses

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

// target is a stored response a request names: its owner and id.
type target struct {
	owner
	id string
}

// targetOf reads whose stored response r names: the caller's tenant and
// GW-User-Id, the path's id.
func targetOf(r *http.Request) (target, error) {
	c, err := httpx.CallerOf(r, httpx.UserOptional, r.Method == http.MethodGet)
	if err != nil {
		return target{}, err
	}
	return target{owner: owner{tenant: c.Tenant.ID, user: c.User}, id: httpx.Param(r, "id")}, nil
}

// getTargetOf is targetOf for GET /v1/responses/{id}, whose stream and
// include parameters ask for what the gateway does not have: streaming a
// response again is for OpenAI's background responses, and it stores
// nothing to include.
func getTargetOf(r *http.Request) (target, error) {
	v := r.URL.Query()
	for _, name := range []string{"stream", "starting_after", "include", "include[]"} {
		if v.Has(name) && !(name == "stream" && v.Get(name) == "false") {
			return target{}, errcat.Newf(errcat.InvalidField, "query."+strings.TrimSuffix(name, "[]"),
				"%s is not supported: the gateway answers a stored response as JSON only (it has no background responses to stream again) and stores nothing to include.",
				strings.TrimSuffix(name, "[]"))
		}
	}
	return targetOf(r)
}

// Get serves GET /v1/responses/{id}: the stored response object as it was
// answered, or 404 response_not_found (unknown, deleted, another tenant's or
// user's). stream, starting_after and include answer 400.
func (s *Service) Get(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, getTargetOf, func(ctx context.Context, t target) (json.RawMessage, error) {
		rec, err := s.get(ctx, t.owner, t.id)
		if err != nil {
			return nil, err
		}
		return rec.Response, nil
	})
}

// deleted is OpenAI's answer to a deletion.
type deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// Delete serves DELETE /v1/responses/{id}: the stored response and the index
// entries of its items are removed; it answers OpenAI's deletion object
// {"id","object":"response","deleted":true}, or 404 response_not_found.
func (s *Service) Delete(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, targetOf, func(ctx context.Context, t target) (deleted, error) {
		if err := s.remove(ctx, t.owner, t.id); err != nil {
			return deleted{}, err
		}
		return deleted{ID: t.id, Object: "response", Deleted: true}, nil
	})
}

// Paging of input_items, OpenAI's: limit 1 to 100, default 20; order desc
// (the default) or asc; after, an item id of the list.
const (
	defaultItemsLimit = 20
	maxItemsLimit     = 100
)

// itemsQuery is a request of GET /v1/responses/{id}/input_items.
type itemsQuery struct {
	target
	after string
	limit int
	asc   bool
}

// itemList is OpenAI's ResponseItemList.
type itemList struct {
	Object  string `json:"object"`
	Data    []item `json:"data"`
	FirstID string `json:"first_id"`
	LastID  string `json:"last_id"`
	HasMore bool   `json:"has_more"`
}

// itemsQueryOf reads the target and the paging of r: limit, order, after;
// include has no value the gateway can honour.
func itemsQueryOf(r *http.Request) (itemsQuery, error) {
	t, err := targetOf(r)
	if err != nil {
		return itemsQuery{}, err
	}
	v := r.URL.Query()
	q := itemsQuery{target: t, after: v.Get("after"), limit: defaultItemsLimit}
	if v.Has("limit") {
		n, err := strconv.Atoi(v.Get("limit"))
		if err != nil || n < 1 || n > maxItemsLimit {
			return itemsQuery{}, errcat.Newf(errcat.InvalidField, "query.limit", "limit must be an integer from 1 to %d.", maxItemsLimit)
		}
		q.limit = n
	}
	switch v.Get("order") {
	case "", "desc":
	case "asc":
		q.asc = true
	default:
		return itemsQuery{}, errcat.New(errcat.InvalidField, "query.order", "order must be asc or desc.")
	}
	if v.Has("include") || v.Has("include[]") {
		return itemsQuery{}, errcat.New(errcat.InvalidField, "query.include",
			"include cannot be honoured: the gateway stores no log probabilities, reasoning or built-in tool results. Leave it out.")
	}
	return q, nil
}

// ListInputItems serves GET /v1/responses/{id}/input_items: the input items
// of the stored response (its own, references resolved; not those of its
// previous_response_id chain), newest first unless order=asc, a page of
// limit after the item after, as OpenAI's list: {"object":"list","data",
// "first_id","last_id","has_more"}.
func (s *Service) ListInputItems(w http.ResponseWriter, r *http.Request) {
	httpx.Handle(w, r, itemsQueryOf, func(ctx context.Context, q itemsQuery) (itemList, error) {
		rec, err := s.get(ctx, q.owner, q.id)
		if err != nil {
			return itemList{}, err
		}
		return page(rec.Input, q)
	})
}

// page returns the page of items q asks for.
func page(items []item, q itemsQuery) (itemList, error) {
	items = slices.Clone(items)
	if !q.asc {
		slices.Reverse(items)
	}
	if q.after != "" {
		i := slices.IndexFunc(items, func(it item) bool { return it.ID == q.after })
		if i < 0 {
			return itemList{}, errcat.New(errcat.InvalidField, "query.after", "after must be the id of an input item of this response.")
		}
		items = items[i+1:]
	}
	l := itemList{Object: "list", Data: items[:min(q.limit, len(items))], HasMore: len(items) > q.limit}
	if len(l.Data) > 0 {
		l.FirstID, l.LastID = l.Data[0].ID, l.Data[len(l.Data)-1].ID
	}
	return l, nil
}
