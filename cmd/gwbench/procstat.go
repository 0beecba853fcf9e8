package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTicks is the kernel's USER_HZ (sysconf(_SC_CLK_TCK)), 100 on every
// Linux platform Go supports; /proc/<pid>/stat counts CPU time in these ticks.
const clockTicks = 100

// procStat is what gwbench reads of a server process in /proc.
type procStat struct {
	// CPU is the process's user plus system CPU time.
	CPU time.Duration
	// RSSKB is the resident set size (VmRSS), PeakRSSKB its high-water mark
	// (VmHWM) since the process started or since resetPeakRSS, in KiB.
	RSSKB, PeakRSSKB int64
}

// readProcStat reads the CPU time and memory of process pid (Linux only).
func readProcStat(pid int) (procStat, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	cpu, err := parseStatCPU(stat)
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procStat{}, err
	}
	return procStat{CPU: cpu, RSSKB: statusKB(status, "VmRSS"), PeakRSSKB: statusKB(status, "VmHWM")}, nil
}

// resetPeakRSS resets the VmHWM of process pid to its current RSS (writing 5
// to clear_refs, Linux 4.0 and later), so that the next read gives the peak of
// what happened in between.
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// parseStatCPU returns utime+stime of a /proc/<pid>/stat line. The command
// name (field 2) is in parentheses and may hold spaces and parentheses, so the
// fields are counted from the last ')': utime and stime are fields 14 and 15.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no ')' after the command name")
	}
	fields := bytes.Fields(stat[i+1:]) // fields[0] is field 3 (state)
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("utime/stime %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// statusKB returns the value in KiB of a "Name:   123 kB" line of
// /proc/<pid>/status, 0 when absent.
func statusKB(status []byte, name string) int64 {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte(name+":"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		n, _ := strconv.ParseInt(string(f[0]), 10, 64)
		return n
	}
	return 0
}
