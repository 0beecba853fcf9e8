//go:build !unix

package main

// autoMaxConns is the default connection cap where the open-file limit is not
// known: a large number, so that only the per-client cap applies.
func autoMaxConns() int { return 1 << 20 }
