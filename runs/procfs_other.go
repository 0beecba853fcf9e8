//go:build !linux

package runs

import "errors"

// procStat is what recovery reads of a process; see procfs_linux.go.
type procStat struct {
	pid, pgid int
	start     uint64
	gone      bool
}

// errNoProcfs: without /proc, start times are unknown and recovery cannot
// tell a command from a process that got its pid since.
var errNoProcfs = errors.New("runs: no /proc on this system")

func readStat(pid int) (procStat, error) { return procStat{}, errNoProcfs }

func bootID() string { return "" }

func pidNamespace() string { return "" }

func listStats() ([]procStat, error) { return nil, errNoProcfs }

func runIDsOf(pid int) []string { return nil }
