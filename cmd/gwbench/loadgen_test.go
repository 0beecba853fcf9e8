package main

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	tests := []struct {
		name    string
		rate    float64
		d       time.Duration
		count   int
		offsets map[int]time.Duration // request index -> scheduled offset
	}{
		{name: "2000/s for 10s", rate: 2000, d: 10 * time.Second, count: 20000,
			offsets: map[int]time.Duration{0: 0, 1: 500 * time.Microsecond, 19999: 9999500 * time.Microsecond}},
		{name: "3/s for 1s", rate: 3, d: time.Second, count: 3,
			offsets: map[int]time.Duration{1: 333333333, 2: 666666667}},
		{name: "0.5/s for 3s", rate: 0.5, d: 3 * time.Second, count: 2,
			offsets: map[int]time.Duration{1: 2 * time.Second}},
		{name: "200/s for 300ms", rate: 200, d: 300 * time.Millisecond, count: 60,
			offsets: map[int]time.Duration{59: 295 * time.Millisecond}},
		{name: "no duration", rate: 1000, d: 0, count: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := scheduledCount(tc.rate, tc.d); got != tc.count {
				t.Errorf("scheduledCount(%v, %v) = %d, want %d", tc.rate, tc.d, got, tc.count)
			}
			for i, want := range tc.offsets {
				if got := scheduleOffset(tc.rate, i); got != want {
					t.Errorf("scheduleOffset(%v, %d) = %v, want %v", tc.rate, i, got, want)
				}
			}
		})
	}
}

// collect is a sink that keeps every sample, by index.
type collect struct {
	mu      sync.Mutex
	samples map[int]sample
}

func (c *collect) add(s sample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.samples == nil {
		c.samples = map[int]sample{}
	}
	c.samples[s.Index] = s
}

// TestOpenLoop checks, with the wall clock and generous bounds, that latency
// is measured from the scheduled time and that nothing delays the schedule.
func TestOpenLoop(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name    string
		loop    openLoop
		stallAt int           // the request that takes stall to answer
		stall   time.Duration // 0: every request answers at once
		lateAt  int           // the request the sender wakes up late for
		late    time.Duration // 0: the sender is on time
		sent    int
		dropped int // at least
		maxSent int // at most, when dropping
		check   func(t *testing.T, s map[int]sample)
	}{
		{
			name:    "a slow answer does not delay the next requests",
			loop:    openLoop{Rate: 500, Duration: 100 * ms, MaxInflight: 1000},
			stallAt: 5, stall: 150 * ms, sent: 50,
			check: func(t *testing.T, s map[int]sample) {
				if s[5].Latency < 150*ms {
					t.Errorf("stalled request latency = %v, want >= 150ms", s[5].Latency)
				}
				// Requests 6..49 were scheduled during the stall; they were sent on time.
				for i := 6; i < 50; i++ {
					if s[i].Lag > 60*ms || s[i].Latency > 60*ms {
						t.Errorf("request %d: lag %v latency %v, want both well under the 150ms stall", i, s[i].Lag, s[i].Latency)
					}
				}
			},
		},
		{
			name:   "a late sender counts its lag in the latency",
			loop:   openLoop{Rate: 500, Duration: 60 * ms, MaxInflight: 1000},
			lateAt: 10, late: 80 * ms, sent: 30,
			check: func(t *testing.T, s map[int]sample) {
				// Request 10 was due at 20ms and sent at 100ms or later.
				if s[10].Lag < 80*ms || s[10].Latency < 80*ms {
					t.Errorf("request 10: lag %v latency %v, want both >= 80ms", s[10].Lag, s[10].Latency)
				}
				// Request 20 was due at 40ms, sent after the late wake-up at 100ms.
				if s[20].Latency < 55*ms {
					t.Errorf("request 20: latency %v, want >= 55ms (from its scheduled time)", s[20].Latency)
				}
			},
		},
		{
			name:    "max in-flight drops requests instead of delaying them",
			loop:    openLoop{Rate: 1000, Duration: 40 * ms, MaxInflight: 1},
			stallAt: 0, stall: 100 * ms, dropped: 30, maxSent: 10,
			check: func(t *testing.T, s map[int]sample) {
				if !errors.Is(s[1].Err, errDropped) {
					t.Errorf("request 1: err %v, want errDropped", s[1].Err)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			do := func(ctx context.Context, i int) outcome {
				if tc.stall > 0 && i == tc.stallAt {
					time.Sleep(tc.stall)
				}
				return outcome{}
			}
			if tc.late > 0 {
				calls := 0
				tc.loop.sleepUntil = func(at time.Time) {
					if calls == tc.lateAt {
						at = at.Add(tc.late)
					}
					calls++
					time.Sleep(time.Until(at))
				}
			}
			var c collect
			res := tc.loop.run(context.Background(), do, c.add)
			total := scheduledCount(tc.loop.Rate, tc.loop.Duration)
			if res.Sent+res.Dropped != total || len(c.samples) != total {
				t.Fatalf("sent %d + dropped %d, %d samples; want %d scheduled", res.Sent, res.Dropped, len(c.samples), total)
			}
			if tc.sent > 0 && res.Sent != tc.sent {
				t.Errorf("sent %d, want %d", res.Sent, tc.sent)
			}
			if res.Dropped < tc.dropped || (tc.maxSent > 0 && res.Sent > tc.maxSent) {
				t.Errorf("sent %d, dropped %d; want at most %d sent and at least %d dropped", res.Sent, res.Dropped, tc.maxSent, tc.dropped)
			}
			tc.check(t, c.samples)
		})
	}
}

func TestClosedLoop(t *testing.T) {
	var c collect
	do := func(ctx context.Context, i int) outcome { time.Sleep(time.Millisecond); return outcome{} }
	res := closedLoop{Workers: 4, Duration: 50 * time.Millisecond}.run(context.Background(), do, c.add)
	if res.Sent < 20 || len(c.samples) != res.Sent {
		t.Fatalf("sent %d with %d samples, want at least 20 and one sample each", res.Sent, len(c.samples))
	}
	lat := make([]time.Duration, 0, len(c.samples))
	for _, s := range c.samples {
		lat = append(lat, s.Latency)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if lat[0] < time.Millisecond {
		t.Errorf("min latency %v, want >= 1ms: measured from the actual send", lat[0])
	}
}
