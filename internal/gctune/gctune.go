// Package gctune keeps the garbage collector from running every few megabytes
// of allocation while the live heap is small.
//
// With GOGC=100 the runtime's heap goal is twice the live heap, at least 4 MiB.
// A gateway's live heap is a few megabytes while it allocates tens of
// kilobytes per request, so at a few thousand requests per second it collects
// many times a second, and the collections' assists and CPU show in the
// latency tail. Start raises the GC percentage after every collection so that
// the goal is at least the live heap plus a fixed headroom, and leaves the
// percentage at its base once the live heap is large, where the headroom is
// already there and memory, not GC frequency, is the concern. A memory limit
// (GOMEMLIMIT) still applies on top.
package gctune

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// Settings are the tuner's parameters.
type Settings struct {
	// Headroom is the least heap growth allowed between collections, in bytes.
	Headroom uint64
	// Base is the GC percentage once the headroom is reached anyway, as GOGC.
	Base int
}

// Default is what gatewayd uses: 32 MiB of headroom over GOGC=50. The base
// is half the runtime's default because a live heap past the headroom is
// one of thousands of open streams, each waiting for its next event: the
// gateway then allocates little, so collecting at 50% growth costs little
// CPU, and the heap the collector lets grow is most of each stream's memory
// (with 100, 2,000 slow streams cost 58.6 KiB each, a bare reverse proxy
// 57.0; with 50, 56.0 against 58.0).
var Default = Settings{Headroom: 32 << 20, Base: 50}

// runtimeMinHeap is the runtime's least heap goal at GOGC=100; it scales with
// the percentage.
const runtimeMinHeap = 4 << 20

// Percent returns the GC percentage that gives a heap goal of at least
// live+headroom, given the runtime's goal formula
// live + (live+stacks+globals)*percent/100, and at least Base. It is at most
// Headroom/4 MiB*100, where the runtime's least heap goal (4 MiB*percent/100)
// reaches the headroom: a higher one would only raise that floor.
func (s Settings) Percent(live, stacks, globals uint64) int {
	ceiling := math.Floor(float64(s.Headroom) * 100 / runtimeMinHeap)
	roots := live + stacks + globals
	p := ceiling
	if roots > 0 {
		p = math.Ceil(float64(s.Headroom) * 100 / float64(roots))
	}
	return int(max(min(p, ceiling), float64(s.Base)))
}

// Start applies s after every collection until stop is called, beginning now.
// It changes the process-wide GC percentage, so only a program's main should
// call it; stop restores the percentage found at the start.
func Start(s Settings) (stop func()) {
	t := &tuner{s: s, samples: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"},
	}}
	t.prev = debug.SetGCPercent(s.Base)
	t.adjust()
	t.arm()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.stopped.Store(true)
			t.mu.Lock()
			defer t.mu.Unlock()
			debug.SetGCPercent(t.prev)
		})
	}
}

type tuner struct {
	s       Settings
	stopped atomic.Bool
	mu      sync.Mutex // guards what follows, held while adjusting
	samples []metrics.Sample
	prev    int // the percentage before Start
}

// sentinel is a heap object whose cleanup runs once a collection has found
// it unreachable. It is 16 bytes because the tiny allocator packs smaller
// pointer-free objects together, which would delay the cleanup.
type sentinel [16]byte

// arm allocates a new sentinel, so that the next collection calls adjust.
func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *tuner) {
		if t.stopped.Load() {
			return
		}
		t.adjust()
		t.arm()
	}, t)
}

// adjust reads the heap as the last collection left it and sets the
// percentage that gives the headroom.
func (t *tuner) adjust() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Load() {
		return
	}
	metrics.Read(t.samples)
	p := t.s.Percent(t.samples[0].Value.Uint64(), t.samples[1].Value.Uint64(), t.samples[2].Value.Uint64())
	debug.SetGCPercent(p)
}

// StartDefault starts the tuner with Default, unless lookup finds GOGC set:
// an operator's own GOGC stands untouched. stop is a no-op in that case.
func StartDefault(lookup func(string) (string, bool)) (stop func()) {
	if _, ok := lookup("GOGC"); ok {
		return func() {}
	}
	return Start(Default)
}
