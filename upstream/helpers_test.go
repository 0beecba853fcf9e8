package upstream_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/upstream"
)

// The router aliases of lm-4-scout's chain in the built-in catalog.
const (
	scoutLocal  = "lm-4-scout:17b-16e-instruct-q4_K_M"
	scoutCloudA = "lm-4-scout-17b-16e-instruct"
	scoutCloudB = "lm-4-scout-17b-16e-instruct:free"
)

// The time-outs of the tests that wait for one. quickTimeout bounds a
// backend that is silent while another, a fake that answers at once, must
// still answer within it on a loaded machine; silentTimeout bounds a call
// where no backend answers at all, so that its length decides nothing but
// how long the test waits.
const (
	quickTimeout  = 250 * time.Millisecond
	silentTimeout = 50 * time.Millisecond
)

// ignoreCause compares *errcat.Error values without their (log-only) cause.
var ignoreCause = cmpopts.IgnoreFields(errcat.Error{}, "Cause")

// logBuffer collects log output safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newRouter builds a Router over the built-in catalog, logging as JSON into the
// returned buffer; it is closed when the test ends.
func newRouter(t *testing.T, b upstream.Backends, opts ...upstream.Option) (*upstream.Router, *logBuffer) {
	t.Helper()
	cat, err := upstream.DefaultCatalog()
	if err != nil {
		t.Fatalf("DefaultCatalog: %v", err)
	}
	logs := &logBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, err := upstream.NewRouter(cat, b, append([]upstream.Option{upstream.WithLogger(logger)}, opts...)...)
	if err != nil {
		t.Fatalf("NewRouter: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r, logs
}

// chatBody is a request body built the way the gateway builds them.
func chatBody(alias string) []byte {
	return []byte(`{"model":"` + alias + `","messages":[{"role":"user","content":"hi"}]}`)
}

// doRead calls r.Do and reads the whole body.
func doRead(t *testing.T, u upstream.Upstream, req *upstream.Request) (*upstream.Response, []byte, error) {
	t.Helper()
	resp, err := u.Do(t.Context(), req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

// asErr returns err as *errcat.Error, failing the test when it is not one.
func asErr(t *testing.T, err error) *errcat.Error {
	t.Helper()
	if err == nil {
		t.Fatal("error = nil, want an *errcat.Error")
	}
	e, ok := err.(*errcat.Error)
	if !ok {
		t.Fatalf("error %T (%v) is not an *errcat.Error", err, err)
	}
	return e
}

// awaitNoClientConns waits until no HTTP client connection goroutine and no
// goroutine started by a method of package upstream is left.
func awaitNoClientConns(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		leaked := ""
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "net/http.(*persistConn)") || strings.Contains(g, "gateway/upstream.(") {
				leaked = g
				break
			}
		}
		if leaked == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leaked goroutine:\n%s", leaked)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// within fails the test when f takes longer than d.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if took := time.Since(start); took > d {
		t.Errorf("took %v, want at most %v", took, d)
	}
}

// ctxWithTimeout is t.Context bounded by d.
func ctxWithTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
