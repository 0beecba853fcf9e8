package upstreamtest

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
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

func TestNotHTTPURLAnswersWhatIsNotHTTP(t *testing.T) {
	resp, err := http.Post(NotHTTPURL(t, "garbage 42 here")+"/chat/completions", "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("POST answered %d; want an error", resp.StatusCode)
	}
	if !strings.Contains(err.Error(), `malformed HTTP`) || !strings.Contains(err.Error(), `"42"`) {
		t.Errorf("POST: %v; want net/http's malformed-answer error quoting the answer", err)
	}
}
