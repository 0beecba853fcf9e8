// Package lease lets one of several gateway replicas sharing a store do a
// piece of work at a time: a lease is a holder and an expiry, taken and
// renewed in one store transaction, so that two replicas never both hold it,
// and left to expire when its holder dies, so that another takes over.
//
// Time comes from the callers' clock.Clock. Replicas judge expiry by their
// own clocks, so their clocks must agree to well within a lease's length
// (NTP does: milliseconds against leases of seconds or minutes).
//
// runs keeps a Lease in each run record it executes. A Worker does a piece of
// background work in rounds while it holds a Named lease, kept in a bucket of
// its own: the expiry purgers of images and usage are Workers.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/store"
)

// Lease is a holder's claim on a piece of work until Until.
type Lease struct {
	// Holder names who holds the lease (NewHolder); "" holds nothing.
	Holder string `json:"holder"`
	// Until is when the lease expires unless its holder renews it.
	Until time.Time `json:"until"`
}

// Live reports whether the lease binds at now: it has a holder and now is
// before Until. An expired lease is free for anyone to take.
func (l Lease) Live(now time.Time) bool {
	return l.Holder != "" && now.Before(l.Until)
}

// NewHolder returns a new random holder name: 32 hex digits. Random rather
// than built from host name and pid, because those repeat: every container
// runs its gateway as pid 1, often under the same host name, and one process
// may hold several services over one store.
func NewHolder() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// Named is the lease stored under Key in Bucket of Store, as its would-be
// holder Holder sees it. Its methods are safe for concurrent use.
type Named struct {
	Store  store.Store
	Clock  clock.Clock
	Bucket []byte
	Key    []byte
	// Holder is who takes the lease (NewHolder).
	Holder string
	// TTL is how long a take or renewal lasts.
	TTL time.Duration
}

// Acquire takes the lease for Holder, or renews it, until Clock.Now()+TTL,
// when it is free, expired or already Holder's, in one Update transaction; it
// reports whether Holder holds the lease then. Two holders calling Acquire at
// once never both get true while the lease lives: the store serializes their
// transactions, and the second sees the first's lease.
func (n *Named) Acquire(ctx context.Context) (bool, error) {
	now := n.Clock.Now()
	var held bool
	err := n.Store.Update(ctx, func(tx store.Tx) error {
		held = false // the store may run the callback again
		cur, err := read(tx, n.Bucket, n.Key)
		if err != nil {
			return err
		}
		if cur.Live(now) && cur.Holder != n.Holder {
			return nil
		}
		held = true
		return store.PutJSON(tx, n.Bucket, n.Key, Lease{Holder: n.Holder, Until: now.Add(n.TTL)})
	})
	if err != nil {
		return false, fmt.Errorf("lease.Acquire %s: %w", n.Key, err)
	}
	return held, nil
}

// Release deletes the lease when Holder holds it, so that another holder
// takes it at once instead of after its expiry. Releasing a lease Holder does
// not hold changes nothing.
func (n *Named) Release(ctx context.Context) error {
	err := n.Store.Update(ctx, func(tx store.Tx) error {
		cur, err := read(tx, n.Bucket, n.Key)
		if err != nil || cur.Holder != n.Holder {
			return err
		}
		return tx.Delete(n.Bucket, n.Key)
	})
	if err != nil {
		return fmt.Errorf("lease.Release %s: %w", n.Key, err)
	}
	return nil
}

// read returns the lease stored under key; the zero Lease (free) when none is.
func read(tx store.Tx, bucket, key []byte) (Lease, error) {
	var l Lease
	_, err := store.GetJSON(tx, bucket, key, &l)
	return l, err
}
