//go:build !unix

package upstreamtest

import "net"

// refusedAddr returns a loopback port that was just released: connections to
// it are refused unless another process takes the port meanwhile.
func refusedAddr() (addr string, release func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr = l.Addr().String()
	l.Close()
	return addr, func() {}, nil
}
