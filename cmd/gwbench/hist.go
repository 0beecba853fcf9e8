package main

import (
	"math"
	"math/bits"
	"time"
)

// Histogram layout: values are recorded in whole microseconds in log-linear
// buckets, as HdrHistogram does. Below 2*histSub µs every bucket is one
// microsecond wide; above, each power of two is cut into histSub buckets, so a
// bucket is at most 1/histSub of its value wide and a percentile is off by at
// most half of that (0.2%). Values above histMax are counted in the last bucket
// (the exact maximum is kept apart).
const (
	histSubBits = 8
	histSub     = 1 << histSubBits
	histMax     = 60 * time.Second
)

// histBuckets is the number of buckets up to histMax: about 5000 (40 KB).
var histBuckets = bucketOf(uint64(histMax/time.Microsecond)) + 1

// hist is a latency histogram with fixed memory and 1 µs resolution up to 60 s.
// It is not safe for concurrent use (tally locks around it). The zero value is
// not usable: use newHist.
type hist struct {
	counts   []uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

func newHist() *hist { return &hist{counts: make([]uint64, histBuckets)} }

// bucketOf returns the bucket index of a value in microseconds.
func bucketOf(us uint64) int {
	shift := max(bits.Len64(us)-histSubBits-1, 0)
	return shift<<histSubBits + int(us>>shift)
}

// bucketRange returns the lowest and highest microsecond values of bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < 2*histSub {
		return uint64(i), uint64(i)
	}
	shift := i>>histSubBits - 1
	m := uint64(i - shift<<histSubBits)
	return m << shift, (m+1)<<shift - 1
}

// Record adds one value; negative values count as 0.
func (h *hist) Record(d time.Duration) {
	d = max(d, 0)
	us := uint64((d + time.Microsecond/2) / time.Microsecond)
	i := min(bucketOf(us), len(h.counts)-1)
	h.counts[i]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += d
}

// Merge adds the values of o.
func (h *hist) Merge(o *hist) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of recorded values.
func (h *hist) Count() uint64 { return h.n }

// Max returns the largest recorded value (exact), 0 when empty.
func (h *hist) Max() time.Duration { return h.max }

// Mean returns the mean of the recorded values, 0 when empty.
func (h *hist) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Quantile returns the value below which a fraction q (0..1) of the recorded
// values fall: the value of rank ceil(q*n), as the middle of its bucket clamped
// to the exact minimum and maximum. It returns 0 when the histogram is empty;
// Quantile(1) is the exact maximum.
func (h *hist) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	if q >= 1 {
		return h.max
	}
	rank := max(uint64(math.Ceil(q*float64(h.n)-1e-9)), 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketRange(i)
			mid := time.Duration((lo+hi)/2) * time.Microsecond
			if lo == hi {
				mid = time.Duration(lo) * time.Microsecond
			}
			return min(max(mid, h.min), h.max)
		}
	}
	return h.max
}
