package upstreamtest

import (
	"errors"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"
)

func TestRefusedURLRefusesAndKeepsItsPort(t *testing.T) {
	first, second := RefusedURL(t), RefusedURL(t)
	if first == second {
		t.Fatalf("two calls gave the same URL %s: the port is not held", first)
	}
	for _, raw := range []string{first, second} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		// Nobody else can listen on the port while the test holds it.
		if l, err := net.Listen("tcp", u.Host); err == nil {
			l.Close()
			t.Errorf("listening on %s succeeded: the port is not held", u.Host)
		}
		c, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("dial %s succeeded; want connection refused", u.Host)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial %s: %v; want connection refused", u.Host, err)
		}
	}
}
