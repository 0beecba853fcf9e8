package guard_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// fakeEndpoint is a recording fake of a classifier endpoint: it answers every
// request with status and body, after delay.
type fakeEndpoint struct {
	*httptest.Server
	status int
	body   string
	delay  time.Duration

	mu    sync.Mutex
	calls []fakeCall
}

type fakeCall struct {
	Method, Path, Query, Authorization, ContentType string
	Body                                            map[string]any
}

func newFakeEndpoint(t *testing.T, status int, body string) *fakeEndpoint {
	t.Helper()
	f := &fakeEndpoint{status: status, body: body}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		c := fakeCall{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Authorization: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type")}
		if err := json.Unmarshal(data, &c.Body); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		if f.delay > 0 {
			select {
			case <-time.After(f.delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		io.WriteString(w, f.body)
	}))
	t.Cleanup(f.Close)
	return f
}

// Calls returns the requests received so far.
func (f *fakeEndpoint) Calls() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}
