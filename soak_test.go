package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway"
	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/upstream"
)

// soakDuration is how long TestSoak loads the gateway: CHATGW_SOAK (a Go
// duration; .ci/run sets 60s), or a 3 s smoke run.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("CHATGW_SOAK")
	if v == "" {
		return 3 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("CHATGW_SOAK=%q: %v", v, err)
	}
	return d
}

// processUsage is what a leak would grow: goroutines, open descriptors and
// resident memory.
type processUsage struct {
	goroutines, fds int
	rssKiB          int64
}

func usageNow(t *testing.T) processUsage {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	u := processUsage{goroutines: runtime.NumGoroutine(), fds: len(fds)}
	status, _ := os.ReadFile("/proc/self/status")
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			u.rssKiB, _ = strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
		}
	}
	return u
}

// soakUpstream answers by the last word of the request: "endless" streams
// until the gateway goes away, "huge" answers a JSON completion of 1 MiB,
// "slow" streams for 2 s, anything else a short answer (stream or JSON).
func soakUpstream() *httptest.Server {
	chunk := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` +
		strings.Repeat("z", 512) + `"}}]}` + "\n\n"
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body := string(b)
		stream := strings.Contains(body, `"stream":true`)
		switch {
		case strings.Contains(body, "huge"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"stop"}]}`,
				strings.Repeat("h", 1<<20))
		case !stream:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			n := 3
			switch {
			case strings.Contains(body, "endless"):
				n = 1 << 30
			case strings.Contains(body, "slow"):
				n = 20
			}
			for i := 0; i < n; i++ {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
				if strings.Contains(body, "slow") {
					w.(http.Flusher).Flush()
					select {
					case <-time.After(100 * time.Millisecond):
					case <-r.Context().Done():
						return
					}
				}
			}
			io.WriteString(w, "data: [DONE]\n\n")
		}
	}))
}

// soakOp is one kind of request of the mixed load; it reports what it saw
// when that is not what the gateway must answer.
type soakOp func(ctx context.Context, base string) error

func soakOps(c *http.Client) map[string]soakOp {
	post := func(ctx context.Context, url, user, body string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer soak")
		if user != "" {
			req.Header.Set("GW-User-Id", user)
		}
		return c.Do(req)
	}
	expect := func(resp *http.Response, err error, status int, tail string) error {
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != status || !strings.Contains(string(b[max(0, len(b)-300):]), tail) {
			return fmt.Errorf("status %d, answer ends %q; want %d ending with %q", resp.StatusCode, b[max(0, len(b)-300):], status, tail)
		}
		return nil
	}
	v1 := func(msg string, stream bool) string {
		return fmt.Sprintf(`{"model":"lm-4-scout-local","stream":%v,"messages":[{"role":"user","content":%q}]}`, stream, msg)
	}
	c1 := func(msg string, stream bool) string {
		return fmt.Sprintf(`{"model":"lm-4-scout-local","stream":%v,"message":%q}`, stream, msg)
	}
	return map[string]soakOp{
		"v1 json": func(ctx context.Context, base string) error {
			resp, err := post(ctx, base+"/v1/chat/completions", "", v1("hi", false))
			return expect(resp, err, 200, `"ok"`)
		},
		"v1 stream": func(ctx context.Context, base string) error {
			resp, err := post(ctx, base+"/v1/chat/completions", "", v1("hi", true))
			return expect(resp, err, 200, "[DONE]")
		},
		"v1 huge json": func(ctx context.Context, base string) error {
			resp, err := post(ctx, base+"/v1/chat/completions", "", v1("huge", false))
			return expect(resp, err, 502, "larger than")
		},
		"c1 endless stream": func(ctx context.Context, base string) error {
			resp, err := post(ctx, base+"/c1/chat", "u"+strconv.Itoa(rand.IntN(4)), c1("endless", true))
			return expect(resp, err, 200, "event: gw.error")
		},
		"c1 stream": func(ctx context.Context, base string) error {
			resp, err := post(ctx, base+"/c1/chat", "u"+strconv.Itoa(rand.IntN(4)), c1("hi", true))
			return expect(resp, err, 200, "[DONE]")
		},
		"v1 endless stream, client leaves": func(ctx context.Context, base string) error {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			resp, err := post(ctx, base+"/v1/chat/completions", "", v1("endless", true))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, err = io.CopyN(io.Discard, resp.Body, 64<<10)
			return err
		},
		"slow stream, client leaves": func(ctx context.Context, base string) error {
			ctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
			defer cancel()
			resp, err := post(ctx, base+"/c1/chat", "u9", c1("slow", true))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			return nil // cut by the client on purpose
		},
		"stalled body": func(ctx context.Context, base string) error {
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				return err
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer soak\r\nContent-Length: 100\r\n\r\n{")
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				return fmt.Errorf("stalled body: %w", err)
			}
			resp.Body.Close()
			if resp.StatusCode != 400 {
				return fmt.Errorf("stalled body: status %d, want 400", resp.StatusCode)
			}
			return nil
		},
	}
}

// TestSoak drives a mixed load (JSON, streams, disconnects, endless and
// oversized upstream answers, stalled bodies) through a gateway on bbolt for
// CHATGW_SOAK, then checks that it leaked nothing: with the gateway and its
// servers closed, goroutines and descriptors are back to what they were
// before, and resident memory stayed bounded throughout.
func TestSoak(t *testing.T) {
	d := soakDuration(t)
	debug.FreeOSMemory()
	before := usageNow(t)

	up := soakUpstream()
	tokens := auth.MustStatic([]*auth.Tenant{{ID: "soak"}}, map[string]auth.StaticToken{"soak": {Tenant: "soak", Role: auth.RoleTenantAdmin}})
	g, err := gateway.New(gateway.WithDataDir(t.TempDir()), gateway.WithTokenCatalog(tokens),
		gateway.WithBackends(upstream.Backends{LocalURL: up.URL}), gateway.WithLogger(slog.New(slog.DiscardHandler)),
		gateway.WithRateLimit(1e6, 1e6), gateway.WithMaxResponseBytes(256<<10), gateway.WithBodyTimeout(200*time.Millisecond, 0))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}

	ops := soakOps(client)
	names := make([]string, 0, len(ops))
	for name := range ops {
		names = append(names, name)
	}
	var (
		wg       sync.WaitGroup
		count    atomic.Int64
		peakRSS  atomic.Int64
		mu       sync.Mutex
		failures = map[string]int{}
		examples = map[string]string{}
	)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ctx.Err() == nil; i++ {
				name := names[i%len(names)]
				if err := ops[name](context.Background(), srv.URL); err != nil {
					mu.Lock()
					failures[name]++
					examples[name] = err.Error()
					mu.Unlock()
				}
				count.Add(1)
			}
		}()
	}
	go func() { // samples resident memory while the load runs
		for ctx.Err() == nil {
			peakRSS.Store(max(peakRSS.Load(), usageNow(t).rssKiB))
			time.Sleep(100 * time.Millisecond)
		}
	}()
	wg.Wait()
	for name, n := range failures {
		t.Errorf("%s: %d failures, e.g. %s", name, n, examples[name])
	}
	t.Logf("soak: %d requests in %v, peak RSS %d MiB (before %d MiB)", count.Load(), d, peakRSS.Load()>>10, before.rssKiB>>10)

	client.CloseIdleConnections()
	srv.Close()
	if err := g.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	up.Close()
	var after processUsage
	settled := waitUntil(10*time.Second, func() bool {
		after = usageNow(t)
		return after.goroutines <= before.goroutines && after.fds <= before.fds
	})
	if !settled {
		buf := make([]byte, 1<<20)
		t.Errorf("after the soak: %d goroutines and %d descriptors, before %d and %d\n%s",
			after.goroutines, after.fds, before.goroutines, before.fds, buf[:runtime.Stack(buf, true)])
	}
	// The memory a request may hold is bounded (256 KiB of capture, 1 MiB of a
	// JSON answer read through the limit); 8 workers cannot need 256 MiB.
	if grew := peakRSS.Load() - before.rssKiB; grew > 256<<10 {
		t.Errorf("resident memory grew by %d MiB under the load, want under 256 MiB", grew>>10)
	}
	debug.FreeOSMemory()
	if grew := usageNow(t).rssKiB - before.rssKiB; grew > 64<<10 {
		t.Errorf("resident memory is %d MiB above the baseline after the soak, want under 64 MiB", grew>>10)
	}
}

// waitUntil polls cond every 10 ms until it holds or d passed.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
