//go:build !linux

package main

import "time"

// newPacer returns the sleep of the open-loop dispatcher: time.Sleep, whose
// resolution off Linux may be coarse (see the "lag" columns of the report).
func newPacer() func(time.Time) {
	return func(t time.Time) {
		if d := time.Until(t); d > 0 {
			time.Sleep(d)
		}
	}
}
