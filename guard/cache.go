package guard

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"
	"time"

	"github.com/chatgw/gateway/clock"
)

// The defaults of Cached.
const (
	DefaultCacheTTL  = time.Minute
	DefaultCacheSize = 4096
)

// Cached returns a Classifier that remembers c's verdicts for ttl, so that a
// retried request is not classified twice. It is safe for concurrent use.
//
// A verdict is keyed by the SHA-256 of the input: its texts and images, each
// with its length, so no two inputs share a key. The key is of the exact
// bytes, not of the normalised text: c may tell apart what normalisation
// merges (Moderation sees the text as sent), and a retry sends the same bytes.
// Only verdicts are kept, flagged or clean; an error is never cached, so the
// next call asks c again. A verdict is kept with the Version of c when it was
// asked, and forgotten once that changes: reloaded rules judge every text
// anew, including one judged a moment before. Concurrent calls with the same input while none is
// cached each ask c.
//
// At most max verdicts are kept (max <= 0 means DefaultCacheSize); when full,
// the oldest goes first. Time comes from clk (nil means clock.Wall), ttl <= 0
// means DefaultCacheTTL. Callers get their own copy of a verdict.
func Cached(c Classifier, clk clock.Clock, ttl time.Duration, max int) Classifier {
	if clk == nil {
		clk = clock.Wall{}
	}
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	if max <= 0 {
		max = DefaultCacheSize
	}
	return &cache{c: c, clk: clk, ttl: ttl, max: max, m: make(map[digest]cacheEntry)}
}

type digest [sha256.Size]byte

type cacheEntry struct {
	v       Verdict
	expires time.Time
	version uint64 // Version of the classifier that gave v
}

type cache struct {
	c   Classifier
	clk clock.Clock
	ttl time.Duration
	max int

	mu sync.Mutex
	m  map[digest]cacheEntry
	// order holds the keys in the order they were stored, oldest first, as a
	// ring; a key stored again appears twice, and the older place is
	// skipped when it comes up (its entry's expiry no longer matches).
	order []orderItem
	head  int // index of the oldest item in order
	n     int // items in order
}

type orderItem struct {
	key     digest
	expires time.Time
}

func (k *cache) Classify(ctx context.Context, in Input) (Verdict, error) {
	key := inputDigest(in)
	now := k.clk.Now()
	version := Version(k.c)
	k.mu.Lock()
	if e, ok := k.m[key]; ok && now.Before(e.expires) && e.version == version {
		k.mu.Unlock()
		return e.v.clone(), nil
	}
	k.mu.Unlock()
	v, err := k.c.Classify(ctx, in)
	if err != nil {
		return v, err
	}
	k.store(key, cacheEntry{v: v.clone(), version: version}, k.clk.Now())
	return v, nil
}

func (k *cache) store(key digest, entry cacheEntry, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	// Entries share one TTL, so the ring's oldest items expire first: drop
	// them while they have expired (or were stored again since), then the
	// oldest live ones while the cache is full.
	for k.n > 0 {
		it := k.order[k.head]
		e, ok := k.m[it.key]
		current := ok && e.expires.Equal(it.expires)
		if current && now.Before(e.expires) {
			if _, replaced := k.m[key]; replaced || len(k.m) < k.max {
				break
			}
		}
		if current {
			delete(k.m, it.key)
		}
		k.order[k.head] = orderItem{}
		k.head = (k.head + 1) % len(k.order)
		k.n--
	}
	entry.expires = now.Add(k.ttl)
	k.push(key, entry)
}

// push stores the entry and appends its key to the ring, growing it when
// full.
func (k *cache) push(key digest, e cacheEntry) {
	k.m[key] = e
	if k.n == len(k.order) {
		grown := make([]orderItem, max(16, 2*len(k.order)))
		for i := range k.n {
			grown[i] = k.order[(k.head+i)%len(k.order)]
		}
		k.order, k.head = grown, 0
	}
	k.order[(k.head+k.n)%len(k.order)] = orderItem{key: key, expires: e.expires}
	k.n++
}

// inputDigest returns the SHA-256 of in's texts and images, each preceded by
// its length, the images after a count of the texts.
func inputDigest(in Input) digest {
	h := sha256.New()
	var n [8]byte
	write := func(h hash.Hash, s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	binary.BigEndian.PutUint64(n[:], uint64(len(in.Texts)))
	h.Write(n[:])
	for _, t := range in.Texts {
		write(h, t)
	}
	for _, u := range in.Images {
		write(h, u)
	}
	var d digest
	h.Sum(d[:0])
	return d
}
