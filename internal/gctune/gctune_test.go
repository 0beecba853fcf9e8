package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	s := Settings{Headroom: 32 << 20, Base: 100}
	tests := []struct {
		name                  string
		live, stacks, globals uint64
		want                  int
	}{
		{"empty heap gets the ceiling, where the runtime's floor is the headroom", 0, 0, 0, 800},
		{"tiny heap is clamped to the ceiling", 1 << 20, 0, 0, 800},
		{"4 MiB of roots get 8x headroom", 3 << 20, 512 << 10, 512 << 10, 800},
		{"5 MiB of roots", 5 << 20, 0, 0, 640},
		{"rounds up a fraction", 6 << 20, 0, 0, 534},
		{"32 MiB of roots need only the base", 30 << 20, 2 << 20, 0, 100},
		{"a large heap keeps the base", 400 << 20, 260 << 20, 1 << 20, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Percent(tt.live, tt.stacks, tt.globals); got != tt.want {
				t.Errorf("Percent(%d, %d, %d) = %d, want %d", tt.live, tt.stacks, tt.globals, got, tt.want)
			}
		})
	}
}

// gcPercent reads the current GC percentage.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestStartTunesAfterEachCollectionAndStopRestores(t *testing.T) {
	before := debug.SetGCPercent(77)
	defer debug.SetGCPercent(before)

	// A headroom far above this test's heap: every collection must raise the
	// percentage to its ceiling, 60 MiB / 4 MiB * 100.
	stop := Start(Settings{Headroom: 60 << 20, Base: 100})
	if got := gcPercent(); got != 1500 {
		t.Errorf("after Start: GC percent %d, want 1500", got)
	}
	// Someone else changes it; the next collection's cleanup sets it back.
	debug.SetGCPercent(100)
	deadline := time.Now().Add(5 * time.Second)
	for gcPercent() != 1500 {
		if time.Now().After(deadline) {
			t.Fatalf("GC percent %d after collections, want 1500 again", gcPercent())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	stop()
	stop() // twice is harmless
	if got := gcPercent(); got != 77 {
		t.Errorf("after stop: GC percent %d, want the 77 found at Start", got)
	}
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if got := gcPercent(); got != 77 {
		t.Errorf("a collection after stop changed the GC percent to %d", got)
	}
}

func TestStartDefaultLeavesAnOperatorsGOGC(t *testing.T) {
	before := debug.SetGCPercent(55)
	defer debug.SetGCPercent(before)
	stop := StartDefault(func(k string) (string, bool) { return "55", k == "GOGC" })
	defer stop()
	runtime.GC()
	if got := gcPercent(); got != 55 {
		t.Errorf("GOGC set: GC percent %d, want 55 untouched", got)
	}
}
