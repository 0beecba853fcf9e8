// Command gatewayd runs the chatgw gateway as a server. Configuration comes from
// GATEWAY_* environment variables and flags of the same names (a flag wins); see
// the README's configuration table or `gatewayd -h`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/chatgw/gateway/internal/gctune"
	"github.com/chatgw/gateway/internal/logwrite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Fewer collections while the live heap is small, unless GOGC is set.
	defer gctune.StartDefault(os.LookupEnv)()
	// Everything gatewayd writes to stderr (its log lines, the address and
	// token it prints) goes through one Writer, in order: a line is written at
	// once when stderr is idle, and under load with the others that came
	// while it was busy, not with a system call each.
	stderr := logwrite.New(os.Stderr)
	err := run(ctx, os.Args[1:], os.LookupEnv, stderr)
	stderr.Close() // written before the exit below
	if err != nil {
		fmt.Fprintln(os.Stderr, "gatewayd:", err)
		os.Exit(1)
	}
}
