package testkit

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/chatgw/gateway/store"
)

// ErrCut is the error of a CutStore's writes while it is cut off.
var ErrCut = errors.New("testkit: the store is cut off")

// CutStore is a store.Store a test cuts off from the code that writes to
// it, as a full disk or a process that died is: while Cut is set, Update
// and Batch fail with ErrCut without running their callback; reads go on.
type CutStore struct {
	store.Store
	Cut atomic.Bool
}

// Update runs Store.Update, or fails with ErrCut while the store is cut off.
func (c *CutStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	if c.Cut.Load() {
		return ErrCut
	}
	return c.Store.Update(ctx, fn)
}

// Batch runs Store.Batch, or fails with ErrCut while the store is cut off.
func (c *CutStore) Batch(ctx context.Context, fn func(store.Tx) error) error {
	if c.Cut.Load() {
		return ErrCut
	}
	return c.Store.Batch(ctx, fn)
}
