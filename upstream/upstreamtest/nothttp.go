package upstreamtest

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// NotHTTPURL returns a base URL, for the rest of the test, whose server
// answers every request with answer followed by a blank line, which an HTTP
// client cannot read as a response (unless answer is one): a backend that
// does not speak HTTP, or speaks it wrongly. net/http quotes such bytes into
// its errors, which is what a test of error texts or log lines needs.
func NotHTTPURL(t testing.TB, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("upstreamtest.NotHTTPURL: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by the cleanup
			}
			go serveNotHTTP(c, answer)
		}
	}()
	return "http://" + ln.Addr().String() + "/v1"
}

// serveNotHTTP reads a request's header, so that the client is not cut off
// while it writes, answers and closes the connection.
func serveNotHTTP(c net.Conn, answer string) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil || line == "\r\n" {
			break
		}
	}
	_, _ = c.Write([]byte(answer + "\r\n\r\n"))
}
