package clock_test

import (
	"testing"
	"time"

	"github.com/chatgw/gateway/clock"
)

// TestDay: the UTC day number, negative before 1970, whatever t's zone.
func TestDay(t *testing.T) {
	tests := []struct {
		at   time.Time
		want int64
	}{
		{time.Unix(0, 0), 0},
		{time.Unix(86399, 999_999_999), 0},
		{time.Unix(86400, 0), 1},
		{time.Unix(-1, 0), -1},
		{time.Unix(-86400, 0), -1},
		{time.Unix(-86401, 0), -2},
		{time.Date(2025, 6, 1, 23, 59, 59, 0, time.FixedZone("UTC-5", -5*3600)), 20241}, // 2025-06-02 04:59:59 UTC
	}
	for _, tc := range tests {
		if got := clock.Day(tc.at); got != tc.want {
			t.Errorf("clock.Day(%v) = %d, want %d", tc.at, got, tc.want)
		}
	}
	if got, want := clock.DayStart(20241), time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("DayStart(20241) = %v, want %v", got, want)
	}
}
