//go:build unix

package upstreamtest

import (
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// refusedAddr binds a TCP socket on a free loopback port without listening
// on it: connections to the port are refused, and the port stays taken until
// release.
func refusedAddr() (addr string, release func(), err error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return "", nil, fmt.Errorf("socket: %w", err)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return "", nil, fmt.Errorf("bind: %w", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return "", nil, fmt.Errorf("getsockname: %w", err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), func() { syscall.Close(fd) }, nil
}
