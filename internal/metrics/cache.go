package metrics

import (
	"sync"
	"sync/atomic"
)

// cache maps label values (K) to the child collectors they resolve to (V),
// so that a request finds its children with an atomic load and a Go map
// look-up, without the vectors' hashing and locks. The map is copied on
// write: label vocabularies are closed, so after the first requests of each
// kind nothing is written again and every read is lock-free.
type cache[K comparable, V any] struct {
	m  atomic.Pointer[map[K]V]
	mu sync.Mutex // serialises the writers
}

// load returns the value of k, if it is there.
func (c *cache[K, V]) load(k K) (V, bool) {
	if m := c.m.Load(); m != nil {
		v, ok := (*m)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// get returns the value of k, creating it with create the first time.
func (c *cache[K, V]) get(k K, create func() V) V {
	if v, ok := c.load(k); ok {
		return v
	}
	return c.add(k, create)
}

// add is get's slow path, apart so that get stays small enough to inline.
func (c *cache[K, V]) add(k K, create func() V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
	}
	n := make(map[K]V, 1)
	if old != nil {
		n = make(map[K]V, len(*old)+1)
		for ok, ov := range *old {
			n[ok] = ov
		}
	}
	v := create()
	n[k] = v
	c.m.Store(&n)
	return v
}
