package main

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// maxErrorKinds bounds the distinct error kinds a tally keeps; later kinds
// count as "other".
const maxErrorKinds = 16

// tally collects the samples of one target in one scenario, over all rounds.
// Its add method is the sink of the load loops; it is safe for concurrent use.
type tally struct {
	mu        sync.Mutex
	latency   *hist // successful requests only
	ttfb      *hist // successful streams only
	lag       *hist
	ok        int
	errs      int
	dropped   int
	truncated int
	kinds     map[string]int
	elapsed   time.Duration // sum of the rounds' elapsed times
	cpu       time.Duration // CPU time of the target's server over the rounds
	genCPU    time.Duration // CPU time of gwbench itself over the rounds

	// The round in progress, and the rounds done: the targets alternate
	// round by round, so round i of two targets ran next to each other, and
	// their ratio in each round shows how much the machine moved the pooled
	// ratio.
	roundOK, roundN int
	roundTTFB       *hist
	rounds          []roundReport
}

// roundReport is one round of one target: its rate of successful requests,
// the server's CPU per 1000 requests and the TTFB p50 of its streams.
type roundReport struct {
	Rate     float64 `json:"achieved_rate"`
	CPUPer1k float64 `json:"cpu_s_per_1k"`
	TTFBP50  float64 `json:"ttfb_p50_ms,omitempty"`
}

func newTally() *tally {
	return &tally{latency: newHist(), ttfb: newHist(), lag: newHist(), roundTTFB: newHist(), kinds: map[string]int{}}
}

// add records one sample.
func (t *tally) add(s sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case errors.Is(s.Err, errDropped):
		t.dropped++
	default:
		t.lag.Record(s.Lag)
		t.roundN++
	}
	if s.Truncated {
		t.truncated++
	}
	if s.Err != nil {
		t.errs++
		k := errorKind(s.Err)
		if _, ok := t.kinds[k]; !ok && len(t.kinds) >= maxErrorKinds {
			k = "other"
		}
		t.kinds[k]++
		return
	}
	t.ok++
	t.roundOK++
	t.latency.Record(s.Latency)
	if s.TTFB > 0 {
		t.ttfb.Record(s.TTFB)
		t.roundTTFB.Record(s.TTFB)
	}
}

// addRound adds the elapsed time of one round and the CPU time the server and
// gwbench used in it.
func (t *tally) addRound(r loadResult, cpu, genCPU time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.elapsed += r.Elapsed
	t.cpu += cpu
	t.genCPU += genCPU
	rr := roundReport{TTFBP50: ms(t.roundTTFB.Quantile(0.5))}
	if r.Elapsed > 0 {
		rr.Rate = math.Round(float64(t.roundOK)/r.Elapsed.Seconds()*10) / 10
	}
	if t.roundN > 0 {
		rr.CPUPer1k = math.Round(cpu.Seconds()/float64(t.roundN)*1000*1e4) / 1e4
	}
	t.rounds = append(t.rounds, rr)
	t.roundOK, t.roundN, t.roundTTFB = 0, 0, newHist()
}

// statusError is a non-200 answer.
type statusError struct {
	Status        int
	Code, Message string // from the OpenAI-style error body, when there is one
}

func (e *statusError) Error() string {
	s := fmt.Sprintf("HTTP %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// errorKind groups errors for the report: the status and code of an HTTP
// error, and other errors by their text without addresses.
func errorKind(err error) string {
	var se *statusError
	if errors.As(err, &se) {
		if se.Code != "" {
			return fmt.Sprintf("HTTP %d %s", se.Status, se.Code)
		}
		return fmt.Sprintf("HTTP %d", se.Status)
	}
	msg := err.Error()
	for _, known := range []string{"connection refused", "connection reset", "broken pipe", "EOF",
		"Client.Timeout", "context deadline exceeded", "too many open files", "truncated stream"} {
		if strings.Contains(msg, known) {
			return known
		}
	}
	if errors.Is(err, errDropped) {
		return errDropped.Error()
	}
	if len(msg) > 100 {
		msg = msg[:100] + "..."
	}
	return msg
}

// sortedKinds returns the error kinds, most frequent first.
func sortedKinds(kinds map[string]int) []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if kinds[out[i]] != kinds[out[j]] {
			return kinds[out[i]] > kinds[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}
