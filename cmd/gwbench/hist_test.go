package main

import (
	"testing"
	"time"
)

func TestHistQuantiles(t *testing.T) {
	us := time.Microsecond
	ms := time.Millisecond
	seq := func(from, to, step time.Duration) []time.Duration {
		var out []time.Duration
		for d := from; d <= to; d += step {
			out = append(out, d)
		}
		return out
	}
	repeat := func(d time.Duration, n int) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = d
		}
		return out
	}
	tests := []struct {
		name   string
		values []time.Duration
		q      float64
		want   time.Duration
		tol    float64 // relative tolerance; 0 means exact
	}{
		{name: "empty", q: 0.5, want: 0},
		{name: "one value", values: []time.Duration{42 * us}, q: 0.99, want: 42 * us},
		{name: "1..100 µs p50", values: seq(us, 100*us, us), q: 0.5, want: 50 * us},
		{name: "1..100 µs p90", values: seq(us, 100*us, us), q: 0.9, want: 90 * us},
		{name: "1..100 µs p99", values: seq(us, 100*us, us), q: 0.99, want: 99 * us},
		{name: "1..100 µs max", values: seq(us, 100*us, us), q: 1, want: 100 * us},
		{name: "q 0 is the minimum", values: seq(7*us, 100*us, us), q: 0, want: 7 * us},
		{name: "sub-µs rounds", values: []time.Duration{1400 * time.Nanosecond, 1600 * time.Nanosecond}, q: 0.5, want: 1400 * time.Nanosecond},
		{name: "p99.9 ignores one outlier in 1001", values: append(repeat(ms, 1000), 50*ms), q: 0.999, want: ms},
		{name: "max keeps the outlier", values: append(repeat(ms, 1000), 50*ms), q: 1, want: 50 * ms},
		{name: "p99 of 0.1..10 ms", values: seq(100*us, 10*ms, 100*us), q: 0.99, want: 9900 * us, tol: 0.002},
		{name: "seconds within 0.2%", values: []time.Duration{1234567 * us, 1234567 * us}, q: 0.5, want: 1234567 * us, tol: 0.002},
		{name: "beyond 60 s clamps the bucket, max exact", values: []time.Duration{ms, 90 * time.Second}, q: 1, want: 90 * time.Second},
		{name: "beyond 60 s percentile stays near 60 s", values: []time.Duration{ms, 90 * time.Second, 90 * time.Second}, q: 0.5, want: 60 * time.Second, tol: 0.003},
		{name: "negative counts as 0", values: []time.Duration{-5 * us}, q: 0.5, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist()
			for _, v := range tc.values {
				h.Record(v)
			}
			got := h.Quantile(tc.q)
			if tc.tol == 0 {
				if got != tc.want {
					t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
				}
				return
			}
			if diff := float64(got-tc.want) / float64(tc.want); diff > tc.tol || diff < -tc.tol {
				t.Errorf("Quantile(%v) = %v, want %v within %.1f%%", tc.q, got, tc.want, tc.tol*100)
			}
		})
	}
}

func TestHistBucketsContiguous(t *testing.T) {
	// Every microsecond value up to 2^20 falls in a bucket whose range holds it,
	// and bucket indexes never go backwards.
	prev := 0
	for us := uint64(0); us < 1<<20; us++ {
		i := bucketOf(us)
		if i < prev || i > prev+1 {
			t.Fatalf("bucketOf(%d) = %d after %d: not contiguous", us, i, prev)
		}
		lo, hi := bucketRange(i)
		if us < lo || us > hi {
			t.Fatalf("bucketOf(%d) = %d whose range is [%d, %d]", us, i, lo, hi)
		}
		if w := hi - lo + 1; us >= 2*histSub && float64(w)/float64(us) > 1.0/histSub {
			t.Fatalf("bucket %d of %d µs is %d µs wide: over 1/%d", i, us, w, histSub)
		}
		prev = i
	}
	if histBuckets > 6000 {
		t.Errorf("histBuckets = %d, want a few thousand", histBuckets)
	}
}

func TestHistMerge(t *testing.T) {
	a, b := newHist(), newHist()
	for i := 1; i <= 50; i++ {
		a.Record(time.Duration(i) * time.Microsecond)
		b.Record(time.Duration(i+50) * time.Microsecond)
	}
	a.Merge(b)
	a.Merge(newHist())
	if a.Count() != 100 || a.Quantile(0.5) != 50*time.Microsecond || a.Max() != 100*time.Microsecond || a.Quantile(0) != time.Microsecond {
		t.Errorf("merged: count %d p50 %v max %v min %v, want 100, 50µs, 100µs, 1µs", a.Count(), a.Quantile(0.5), a.Max(), a.Quantile(0))
	}
	if got := a.Mean(); got != 50500*time.Nanosecond {
		t.Errorf("Mean() = %v, want 50.5µs", got)
	}
}
