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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Fewer collections while the live heap is small, unless GOGC is set.
	defer gctune.StartDefault(os.LookupEnv)()
	if err := run(ctx, os.Args[1:], os.LookupEnv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gatewayd:", err)
		os.Exit(1)
	}
}
