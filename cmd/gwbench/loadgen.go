package main

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// A sample is the outcome of one request of a load run.
type sample struct {
	Index int
	// Lag is how late the request was sent: actual send time minus scheduled
	// time (open loop; 0 in the closed loop).
	Lag time.Duration
	// Latency runs from the scheduled send time (open loop) or the actual send
	// time (closed loop) to the end of the response body.
	Latency time.Duration
	// TTFB runs from the same origin to the first SSE data event; 0 when not
	// measured (JSON answers).
	TTFB time.Duration
	// Err is why the request failed; nil for a success.
	Err error
	// Truncated marks a stream that did not end with data: [DONE].
	Truncated bool
}

// outcome is what one request reports to the load generator.
type outcome struct {
	firstEvent time.Time // the first SSE data event arrived; zero for JSON
	truncated  bool
	err        error
}

// doFunc sends request i and reads its whole answer.
type doFunc func(ctx context.Context, i int) outcome

// errDropped is the error of a scheduled request that was not sent because the
// maximum number of requests in flight was reached.
var errDropped = errors.New("dropped: max in-flight reached")

// loadResult sums up one run of a loop.
type loadResult struct {
	Sent, Dropped int
	// Elapsed runs from the first scheduled send to the end of the last answer.
	Elapsed time.Duration
}

// openLoop sends requests at fixed times, Rate per second for Duration, each
// in a goroutine of its own, whether or not earlier answers came back: a slow
// answer never delays the schedule, so latency measured from the scheduled
// time includes every wait a client would see (no coordinated omission). When
// MaxInflight requests are in flight, a scheduled request is dropped (counted,
// as an error) instead of delaying the schedule.
type openLoop struct {
	Rate        float64
	Duration    time.Duration
	MaxInflight int
	// sleepUntil waits until the given time; nil means newPacer's. Tests inject
	// a late sleeper.
	sleepUntil func(time.Time)
}

// scheduledCount is the number of requests an open loop schedules: one at each
// i/rate for i/rate < d.
func scheduledCount(rate float64, d time.Duration) int {
	if rate <= 0 || d <= 0 {
		return 0
	}
	return int(math.Ceil(rate*d.Seconds() - 1e-9))
}

// scheduleOffset is the scheduled send time of request i after the start.
func scheduleOffset(rate float64, i int) time.Duration {
	return time.Duration(math.Round(float64(i) * float64(time.Second) / rate))
}

// run sends the scheduled requests with do and gives every outcome to sink,
// which is called concurrently. It returns when every answer is in or ctx ends.
func (o openLoop) run(ctx context.Context, do doFunc, sink func(sample)) loadResult {
	var (
		wg       sync.WaitGroup
		inflight atomic.Int64
		res      loadResult
	)
	n := scheduledCount(o.Rate, o.Duration)
	start := time.Now()
	dispatched := make(chan struct{})
	go func() { // a goroutine of its own: newPacer locks it to its thread
		defer close(dispatched)
		sleepUntil := o.sleepUntil
		if sleepUntil == nil {
			sleepUntil = newPacer()
		}
		for i := range n {
			at := start.Add(scheduleOffset(o.Rate, i))
			sleepUntil(at)
			if ctx.Err() != nil {
				return
			}
			if inflight.Load() >= int64(o.MaxInflight) {
				res.Dropped++
				sink(sample{Index: i, Err: errDropped})
				continue
			}
			res.Sent++
			inflight.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer inflight.Add(-1)
				sink(measure(ctx, do, i, at))
			}()
		}
	}()
	<-dispatched
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res
}

// measure runs request i scheduled at at (the actual send time in the closed
// loop) and times it from at.
func measure(ctx context.Context, do doFunc, i int, at time.Time) sample {
	sent := time.Now()
	out := do(ctx, i)
	s := sample{Index: i, Lag: sent.Sub(at), Latency: time.Since(at), Err: out.err, Truncated: out.truncated}
	if !out.firstEvent.IsZero() {
		s.TTFB = out.firstEvent.Sub(at)
	}
	return s
}

// closedLoop runs Workers clients, each sending its next request as soon as
// the previous answer is in, for Duration: the peak throughput, not a latency
// measure (latency is from the actual send time).
type closedLoop struct {
	Workers  int
	Duration time.Duration
}

// run is openLoop.run's closed-loop counterpart.
func (c closedLoop) run(ctx context.Context, do doFunc, sink func(sample)) loadResult {
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	start := time.Now()
	end := start.Add(c.Duration)
	for range c.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(end) {
				sink(measure(ctx, do, int(next.Add(1)-1), time.Now()))
			}
		}()
	}
	wg.Wait()
	return loadResult{Sent: int(next.Load()), Elapsed: time.Since(start)}
}
