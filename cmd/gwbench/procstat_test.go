package main

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{name: "plain", stat: "1234 (gwbench) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 8 0 100 1000 200",
			want: 3800 * time.Millisecond},
		{name: "command with spaces and parentheses", stat: "42 (a b) (c)) R 1 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0",
			want: 100 * time.Millisecond},
		{name: "truncated", stat: "42 (x) R 1 1", wantErr: true},
		{name: "no command", stat: "42 x R", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tc.stat))
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseStatCPU() error = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("parseStatCPU() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStatusKB(t *testing.T) {
	status := "Name:\tgwbench\nVmPeak:\t  999 kB\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n"
	for name, want := range map[string]int64{"VmHWM": 20480, "VmRSS": 10240, "VmSwap": 0} {
		if got := statusKB([]byte(status), name); got != want {
			t.Errorf("statusKB(%s) = %d, want %d", name, got, want)
		}
	}
}

func TestReadProcStatSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux only")
	}
	st, err := readProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.RSSKB <= 0 || st.PeakRSSKB < st.RSSKB {
		t.Errorf("readProcStat(self) = %+v, want RSS > 0 and peak >= RSS", st)
	}
}
