package runs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procStat is what recovery reads of a process in /proc/<pid>/stat.
type procStat struct {
	pid, pgid int
	start     uint64 // field 22, starttime: clock ticks after boot
	gone      bool   // a zombie or dead: it runs nothing any more
}

// readStat reads /proc/<pid>/stat.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(pid, b)
}

// parseStat parses the stat line b of process pid: "pid (comm) state ppid
// pgrp ...". comm may hold spaces and parentheses, so fields are counted
// from the last ')'.
func parseStat(pid int, b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("runs: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3, the state
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("runs: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	pgid, err := strconv.Atoi(f[2])
	if err != nil {
		return procStat{}, fmt.Errorf("runs: /proc/%d/stat: pgrp: %w", pid, err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("runs: /proc/%d/stat: starttime: %w", pid, err)
	}
	return procStat{pid: pid, pgid: pgid, start: start, gone: f[0] == "Z" || f[0] == "X"}, nil
}

// bootID returns the kernel's boot id, or "" when it cannot be read.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// pidNamespace returns the pid namespace of this process ("pid:[4026531836]"),
// or "" when it cannot be read.
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}

// listStats returns the stat of every process; those that end while being
// read are left out.
func listStats() ([]procStat, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("runs: list processes: %w", err)
	}
	stats := make([]procStat, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		if st, err := readStat(pid); err == nil {
			stats = append(stats, st)
		}
	}
	return stats, nil
}

// runIDsOf returns the values of GW_RUN_ID in the environment process pid
// was started with; none when it cannot be read (another user's process, or
// one that ended).
func runIDsOf(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil
	}
	var ids []string
	for _, kv := range bytes.Split(b, []byte{0}) {
		if id, ok := bytes.CutPrefix(kv, []byte(EnvRunID+"=")); ok {
			ids = append(ids, string(id))
		}
	}
	return ids
}
