// Package clock declares Clock, the gateway's source of time, so that TTLs,
// confirm-token lifetimes, quota resets and caches can be tested without sleeping.
package clock

import (
	"sync"
	"time"
)

// Clock tells the current time. Implementations are safe for concurrent use.
type Clock interface {
	Now() time.Time
}

// Wall is the real clock.
type Wall struct{}

// Now returns time.Now().
func (Wall) Now() time.Time { return time.Now() }

// Fake is a Clock that moves only when told to. The zero value starts at the zero
// time; use NewFake for a realistic start.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// NewFake returns a Fake set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake's time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the fake forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// Set moves the fake to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	f.now = t
	f.mu.Unlock()
}

// secsPerDay is the length of a UTC day.
const secsPerDay = 24 * 60 * 60

// Day returns the UTC day number of t: whole days since 1970-01-01 UTC
// (negative before), the day daily quotas and usage records count by.
func Day(t time.Time) int64 {
	s := t.Unix()
	d := s / secsPerDay
	if s%secsPerDay < 0 {
		d--
	}
	return d
}

// DayStart returns 00:00 UTC of day, a Day number.
func DayStart(day int64) time.Time { return time.Unix(day*secsPerDay, 0).UTC() }
