//go:build !unix

package pgtest

import (
	"errors"
	"os"
	"syscall"
)

func platformSupported() error {
	return errors.New("pgtest: throw-away PostgreSQL servers are started on unix systems only")
}

func sysProcAttr(*account) *syscall.SysProcAttr { return nil }

func shutdownSignal(bool) os.Signal { return os.Kill }
