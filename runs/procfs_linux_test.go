package runs

import "testing"

// TestParseStat: the fields are counted from the last ')', since the command
// name may hold spaces and parentheses.
func TestParseStat(t *testing.T) {
	const tail = " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 987654 18 19\n"
	for _, tt := range []struct {
		name, line string
		want       procStat
		err        bool
	}{
		{"plain", "42 (sleep) S 1 4242" + tail, procStat{pid: 42, pgid: 4242, start: 987654}, false},
		{"spaces and parens", "42 (a) b (c) S 1 7" + tail, procStat{pid: 42, pgid: 7, start: 987654}, false},
		{"zombie", "42 (sh) Z 1 7" + tail, procStat{pid: 42, pgid: 7, start: 987654, gone: true}, false},
		{"dead", "42 (sh) X 1 7" + tail, procStat{pid: 42, pgid: 7, start: 987654, gone: true}, false},
		{"no name", "42 sh S 1 7" + tail, procStat{}, true},
		{"short", "42 (sh) S 1 7 8\n", procStat{}, true},
		{"bad pgrp", "42 (sh) S 1 x" + tail, procStat{}, true},
		{"bad starttime", "42 (sh) S 1 7 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 -1 18 19", procStat{}, true},
	} {
		got, err := parseStat(42, []byte(tt.line))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: parseStat = %+v, %v; want %+v, error %v", tt.name, got, err, tt.want, tt.err)
		}
	}
}
