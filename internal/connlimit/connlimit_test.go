package connlimit_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/connlimit"
)

// accepted runs Accept in the background and hands over what it returns.
func accepted(t *testing.T, l *connlimit.Listener) <-chan net.Conn {
	t.Helper()
	ch := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(ch)
				return
			}
			ch <- c
		}
	}()
	return ch
}

// isClosedByServer reports whether the server closed c: a read ends at once
// with EOF instead of waiting.
func isClosedByServer(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

func TestCaps(t *testing.T) {
	for _, tc := range []struct {
		name           string
		max, perClient int
		dials          int
		wantAccepted   int
		wantRefusedCap string
	}{
		{name: "total cap", max: 2, dials: 3, wantAccepted: 2, wantRefusedCap: "total"},
		{name: "per-client cap", max: 10, perClient: 2, dials: 3, wantAccepted: 2, wantRefusedCap: "client"},
		{name: "no caps", dials: 5, wantAccepted: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var refused []string
			l := &connlimit.Listener{Listener: inner, Max: tc.max, PerClient: tc.perClient,
				Refused: func(cap string, _ net.Addr) { mu.Lock(); refused = append(refused, cap); mu.Unlock() }}
			defer l.Close()
			got := accepted(t, l)
			var clients []net.Conn
			for range tc.dials {
				c, err := net.Dial("tcp", inner.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				clients = append(clients, c)
			}
			var server []net.Conn
			for range tc.wantAccepted {
				server = append(server, <-got)
			}
			if tc.wantRefusedCap != "" {
				if !isClosedByServer(t, clients[len(clients)-1]) {
					t.Fatalf("the connection over the cap was not closed")
				}
				mu.Lock()
				if len(refused) != 1 || refused[0] != tc.wantRefusedCap {
					t.Errorf("refused %v, want [%s]", refused, tc.wantRefusedCap)
				}
				mu.Unlock()
			}
			if n := l.Open(); n != tc.wantAccepted {
				t.Errorf("Open() = %d, want %d", n, tc.wantAccepted)
			}
			// Closing one frees its place: a new client gets in.
			server[0].Close()
			server[0].Close() // twice frees once
			if n := l.Open(); n != tc.wantAccepted-1 {
				t.Errorf("Open() after a close = %d, want %d", n, tc.wantAccepted-1)
			}
			c, err := net.Dial("tcp", inner.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			select {
			case s := <-got:
				s.Close()
			case <-time.After(5 * time.Second):
				t.Fatalf("no connection accepted after one was closed")
			}
		})
	}
}
