package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/store"
)

// The buckets of stored responses (layout in the package doc).
var (
	responsesBucket = []byte("resp/responses")
	itemsBucket     = []byte("resp/items")
)

// maxIDLen bounds the ids worth looking up; longer ones are unknown.
const maxIDLen = 128

// owner is whom a stored response belongs to: a tenant, and the end user
// named by GW-User-Id ("" for a request without it): "stored responses are
// scoped to the user when the header is present"
// (docs/contract.md#94-more-client-apis).
type owner struct {
	tenant, user string
}

// key is the key of id (a response's or an item's) of o.
func (o owner) key(id string) []byte {
	return store.AppendString(store.AppendString(store.AppendString(nil, o.tenant), o.user), id)
}

// record is a stored response: the response object as it was answered, its
// own input items (ids given, references resolved) and the response it
// continued.
type record struct {
	Response json.RawMessage `json:"response"`
	Input    []item          `json:"input"`
	Previous string          `json:"previous_response_id,omitempty"`
}

// output returns the output items of the stored response.
func (rec *record) output() ([]item, error) {
	var r struct {
		Output []item `json:"output"`
	}
	if err := json.Unmarshal(rec.Response, &r); err != nil {
		return nil, fmt.Errorf("stored response: %w", err)
	}
	return r.Output, nil
}

// items returns the input then the output items of the stored response.
func (rec *record) items() ([]item, error) {
	out, err := rec.output()
	if err != nil {
		return nil, err
	}
	return append(slices.Clip(rec.Input), out...), nil
}

// notFound is the error of an unknown response (or one of another tenant or
// user: the same answer), named by param.
func notFound(param, id string) *errcat.Error {
	return errcat.Newf(errcat.ResponseNotFound, param, "No stored response or item %q for this caller.", id)
}

// errNotFound leaves a transaction without committing it.
var errNotFound = errors.New("responses: not found")

// getRecord reads o's response id, or returns errNotFound.
func getRecord(tx store.Tx, o owner, id string) (*record, error) {
	if id == "" || len(id) > maxIDLen {
		return nil, errNotFound
	}
	var rec record
	ok, err := store.GetJSON(tx, responsesBucket, o.key(id), &rec)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errNotFound
	}
	return &rec, nil
}

// resolved is what a request continues from: the items of its
// previous_response_id chain, oldest first, and its input with every
// item_reference replaced by the stored item.
type resolved struct {
	history, input []item
}

// resolve reads, in one transaction, the chain of q.previous (at most
// maxChain responses) and the items q's references name.
func (s *Service) resolve(ctx context.Context, o owner, q *request) (resolved, error) {
	if q.previous == "" && !slices.ContainsFunc(q.input, isReference) {
		return resolved{input: q.input}, nil
	}
	res, err := store.ViewValue(ctx, s.st, func(tx store.Tx) (resolved, error) {
		history, err := s.chain(tx, o, q.previous)
		if err != nil {
			return resolved{}, err
		}
		in, err := references(tx, o, q.input)
		return resolved{history: history, input: in}, err
	})
	var e *errcat.Error
	switch {
	case errors.As(err, &e):
		return resolved{}, e
	case err != nil:
		return resolved{}, errcat.Storage(fmt.Errorf("responses.resolve: %w", err))
	}
	return res, nil
}

func isReference(it item) bool { return it.Type == "item_reference" }

// chain returns the items of the chain that ends with o's response id,
// oldest first: each response's input, then its output. A chain stops at a
// response that was deleted; an unknown id itself is response_not_found,
// a chain of more than maxChain responses invalid_field.
func (s *Service) chain(tx store.Tx, o owner, id string) ([]item, error) {
	var segments [][]item
	for depth := 0; id != ""; depth++ {
		if depth == s.maxChain {
			return nil, errcat.Newf(errcat.InvalidField, "previous_response_id",
				"The chain of previous responses is longer than %d responses; start a new chain with the items you need as input.", s.maxChain)
		}
		rec, err := getRecord(tx, o, id)
		if errors.Is(err, errNotFound) {
			if depth == 0 {
				return nil, notFound("previous_response_id", id)
			}
			break
		}
		if err != nil {
			return nil, err
		}
		items, err := rec.items()
		if err != nil {
			return nil, err
		}
		segments = append(segments, items)
		id = rec.Previous
	}
	slices.Reverse(segments)
	return slices.Concat(segments...), nil
}

// references returns in with each item_reference replaced by the stored
// item of o it names (found through the item index), or
// response_not_found naming input[N].id.
func references(tx store.Tx, o owner, in []item) ([]item, error) {
	out := slices.Clone(in)
	for i, it := range out {
		if !isReference(it) {
			continue
		}
		stored, err := storedItem(tx, o, it.ID)
		if errors.Is(err, errNotFound) {
			return nil, notFound(fmt.Sprintf("input[%d].id", i), it.ID)
		}
		if err != nil {
			return nil, err
		}
		out[i] = stored
	}
	return out, nil
}

// storedItem returns o's stored item id, or errNotFound.
func storedItem(tx store.Tx, o owner, id string) (item, error) {
	if id == "" || len(id) > maxIDLen {
		return item{}, errNotFound
	}
	respID := tx.Get(itemsBucket, o.key(id))
	if respID == nil {
		return item{}, errNotFound
	}
	rec, err := getRecord(tx, o, string(respID))
	if errors.Is(err, errNotFound) {
		return item{}, fmt.Errorf("item %q indexed under a missing response", id)
	}
	if err != nil {
		return item{}, err
	}
	items, err := rec.items()
	if err != nil {
		return item{}, err
	}
	for _, it := range items {
		if it.ID == id {
			return it, nil
		}
	}
	return item{}, fmt.Errorf("item %q not in its indexed response", id)
}

// save stores the response r of o, its input items and the response it
// continued, and indexes the ids of its input and output items that no
// stored item has yet, in one transaction: all of it or nothing.
func (s *Service) save(ctx context.Context, o owner, in []item, r *response) error {
	b, err := json.Marshal(r)
	if err != nil {
		return errcat.Internal(err)
	}
	rec := record{Response: b, Input: in}
	if r.PreviousResponseID != nil {
		rec.Previous = *r.PreviousResponseID
	}
	err = s.st.Update(ctx, func(tx store.Tx) error {
		if err := store.PutJSON(tx, responsesBucket, o.key(r.ID), &rec); err != nil {
			return err
		}
		for _, it := range slices.Concat(in, r.Output) {
			k := o.key(it.ID)
			if tx.Get(itemsBucket, k) != nil {
				continue // an item sent back: it stays found where it was first stored
			}
			if err := tx.Put(itemsBucket, k, []byte(r.ID)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return errcat.Storage(fmt.Errorf("responses.save: %w", err))
	}
	return nil
}

// get returns o's stored response id, or response_not_found.
func (s *Service) get(ctx context.Context, o owner, id string) (*record, error) {
	rec, err := store.ViewValue(ctx, s.st, func(tx store.Tx) (*record, error) {
		return getRecord(tx, o, id)
	})
	switch {
	case errors.Is(err, errNotFound):
		return nil, notFound("response_id", id)
	case err != nil:
		return nil, errcat.Storage(fmt.Errorf("responses.get: %w", err))
	}
	return rec, nil
}

// remove deletes o's stored response id and the index entries of its
// items, or answers response_not_found.
func (s *Service) remove(ctx context.Context, o owner, id string) error {
	err := s.st.Update(ctx, func(tx store.Tx) error {
		rec, err := getRecord(tx, o, id)
		if err != nil {
			return err
		}
		items, err := rec.items()
		if err != nil {
			return err
		}
		for _, it := range items {
			k := o.key(it.ID)
			if string(tx.Get(itemsBucket, k)) != id {
				continue // indexed under the response that first stored it
			}
			if err := tx.Delete(itemsBucket, k); err != nil {
				return err
			}
		}
		return tx.Delete(responsesBucket, o.key(id))
	})
	switch {
	case errors.Is(err, errNotFound):
		return notFound("response_id", id)
	case err != nil:
		return errcat.Storage(fmt.Errorf("responses.remove: %w", err))
	}
	return nil
}
