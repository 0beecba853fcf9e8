// Package connlimit bounds the connections a server holds open: in all, and
// per client address. A connection over either cap is closed as soon as it is
// accepted, so the server keeps serving the connections it holds instead of
// running out of file descriptors (at which point accept fails for everyone,
// health checks included).
package connlimit

import (
	"net"
	"sync"
	"sync/atomic"
)

// Listener is a net.Listener that admits at most Max connections at once, and
// at most PerClient from one client IP address. Zero means no cap. It is safe
// for concurrent use; set the fields before the first Accept.
type Listener struct {
	net.Listener
	Max       int
	PerClient int
	// Refused, when non-nil, is called (without locks held) for every
	// connection refused at accept, just before it is closed, with the cap it passed ("total" or
	// "client") and its remote address, so the server can log it.
	Refused func(cap string, addr net.Addr)

	mu     sync.Mutex
	open   int
	byHost map[string]int
}

// Accept waits for a connection within the caps and returns it; connections
// over a cap are closed and not returned. Closing a returned connection frees
// its place.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := hostOf(c.RemoteAddr())
		if over := l.admit(host); over != "" {
			if l.Refused != nil {
				l.Refused(over, c.RemoteAddr())
			}
			c.Close()
			continue
		}
		return &conn{Conn: c, l: l, host: host}, nil
	}
}

// Open returns the number of connections held now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// admit takes a place for a connection from host, or names the cap it passed.
func (l *Listener) admit(host string) (over string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Max > 0 && l.open >= l.Max {
		return "total"
	}
	if l.PerClient > 0 {
		if l.byHost == nil {
			l.byHost = make(map[string]int)
		}
		if l.byHost[host] >= l.PerClient {
			return "client"
		}
		l.byHost[host]++
	}
	l.open++
	return ""
}

func (l *Listener) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.PerClient > 0 {
		if n := l.byHost[host] - 1; n > 0 {
			l.byHost[host] = n
		} else {
			delete(l.byHost, host) // the map holds only addresses with connections
		}
	}
}

// hostOf is the IP address of a remote address, or the whole address when it
// has no port (a Unix socket).
func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	if t, ok := a.(*net.TCPAddr); ok {
		return string(t.IP.To16())
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// conn frees its place in the listener once, on the first Close.
type conn struct {
	net.Conn
	l      *Listener
	host   string
	closed atomic.Bool
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.release(c.host)
	}
	return err
}
