package upstream_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// attempts is an upstream.Observer that keeps what it is told.
type attempts struct {
	mu   sync.Mutex
	list []upstream.Attempt
}

func (a *attempts) ObserveAttempt(_ context.Context, at upstream.Attempt) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, at)
}

func (a *attempts) get() []upstream.Attempt {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]upstream.Attempt(nil), a.list...)
}

// TestObserver: every attempt is reported once, with its position, its
// outcome and the backend tried next; the attempt that answered only when its
// body is closed, with the outcome of reading it.
func TestObserver(t *testing.T) {
	t.Parallel()
	dropped := answers(upstreamtest.Reply{Chunks: 4, Drop: true, DropAfter: 1})
	tests := []struct {
		name                string
		local, cloudA, cldB backend
		stream              bool
		want                []upstream.Attempt
	}{
		{"first answers", ok(), ok(), ok(), false, []upstream.Attempt{
			{Position: 1, Provider: "local", RouterAlias: scoutLocal, Outcome: upstream.OutcomeOK, Status: 200},
		}},
		{"503 then 429 then ok", status(503), status(429), ok(), false, []upstream.Attempt{
			{Position: 1, Provider: "local", RouterAlias: scoutLocal, Outcome: upstream.OutcomeStatus, Status: 503, Next: "cloudA"},
			{Position: 2, Provider: "cloudA", RouterAlias: scoutCloudA, Outcome: upstream.OutcomeStatus, Status: 429, Next: "cloudB"},
			{Position: 3, Provider: "cloudB", RouterAlias: scoutCloudB, Outcome: upstream.OutcomeOK, Status: 200},
		}},
		{"refused then ok", refused(), ok(), ok(), false, []upstream.Attempt{
			{Position: 1, Provider: "local", RouterAlias: scoutLocal, Outcome: upstream.OutcomeConnectError, Next: "cloudA"},
			{Position: 2, Provider: "cloudA", RouterAlias: scoutCloudA, Outcome: upstream.OutcomeOK, Status: 200},
		}},
		{"last fails", refused(), refused(), status(500), false, []upstream.Attempt{
			{Position: 1, Provider: "local", RouterAlias: scoutLocal, Outcome: upstream.OutcomeConnectError, Next: "cloudA"},
			{Position: 2, Provider: "cloudA", RouterAlias: scoutCloudA, Outcome: upstream.OutcomeConnectError, Next: "cloudB"},
			{Position: 3, Provider: "cloudB", RouterAlias: scoutCloudB, Outcome: upstream.OutcomeStatus, Status: 500},
		}},
		{"4xx is not retried", status(400), ok(), ok(), false, []upstream.Attempt{
			{Position: 1, Provider: "local", RouterAlias: scoutLocal, Outcome: upstream.OutcomeStatus, Status: 400},
		}},
		{"stream cut while read", dropped, ok(), ok(), true, []upstream.Attempt{
			{Position: 1, Provider: "local", RouterAlias: scoutLocal, Outcome: upstream.OutcomeReadError, Status: 200},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lu, _ := tt.local.start(t)
			au, _ := tt.cloudA.start(t)
			bu, _ := tt.cldB.start(t)
			obs := &attempts{}
			r, _ := newRouter(t, upstream.Backends{LocalURL: lu, CloudAURL: au, CloudBURL: bu, FirstByteTimeout: time.Second},
				upstream.WithObserver(obs))
			body := `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}]}`
			if tt.stream {
				body = `{"model":"lm-4-scout","stream":true,"messages":[{"role":"user","content":"hi"}]}`
			}
			resp, err := r.Do(context.Background(), &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions",
				Body: []byte(body), Stream: tt.stream})
			if err == nil {
				if n := len(obs.get()); n != len(tt.want)-1 {
					t.Errorf("%d attempts reported before the body was read, want %d", n, len(tt.want)-1)
				}
				if resp.Attempt != len(tt.want) {
					t.Errorf("Response.Attempt = %d, want %d", resp.Attempt, len(tt.want))
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				resp.Body.Close() // reported once
			}
			got := obs.get()
			for i := range tt.want {
				tt.want[i].Alias, tt.want[i].Path = "lm-4-scout", "/chat/completions"
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(upstream.Attempt{}, "Duration"),
				cmpopts.IgnoreUnexported(upstream.Attempt{})); diff != "" {
				t.Errorf("attempts mismatch (-want +got):\n%s", diff)
			}
			for _, a := range got {
				if a.Duration <= 0 {
					t.Errorf("attempt %d: Duration %v, want > 0", a.Position, a.Duration)
				}
			}
		})
	}
}

// TestObserverReadEnded: a stream whose read the caller ends is reported
// once it is closed: cancelled when the caller went away, ok when the caller
// closed the body to end a read it was blocked in (a relay's bounded wait for
// a stream's end), since the answer was read as far as the caller wanted.
func TestObserverReadEnded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		end  func(cancel context.CancelFunc, body io.Closer)
		want string
	}{
		{"the caller went away", func(cancel context.CancelFunc, _ io.Closer) { cancel() }, upstream.OutcomeCancelled},
		{"closed while read", func(_ context.CancelFunc, body io.Closer) {
			time.AfterFunc(10*time.Millisecond, func() { body.Close() })
		}, upstream.OutcomeOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Chunks: 50, Interval: 50 * time.Millisecond}))
			obs := &attempts{}
			r, _ := newRouter(t, upstream.Backends{LocalURL: fake.URL}, upstream.WithObserver(obs))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp, err := r.Do(ctx, &upstream.Request{Alias: "lm-4-scout-local", Path: "/chat/completions",
				Body: []byte(`{"model":"x","stream":true,"messages":[]}`), Stream: true})
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			if _, err := resp.Body.Read(buf); err != nil {
				t.Fatal(err)
			}
			tt.end(cancel, resp.Body)
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					break
				}
			}
			resp.Body.Close()
			got := obs.get()
			if len(got) != 1 || got[0].Outcome != tt.want || got[0].Status != http.StatusOK {
				t.Errorf("attempts = %+v, want one %s attempt with status 200", got, tt.want)
			}
		})
	}
}
