package upstream_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// backend describes one fake of a test: refused connections or a reply.
type backend struct {
	refused bool
	reply   upstreamtest.Reply
}

func refused() backend                     { return backend{refused: true} }
func answers(r upstreamtest.Reply) backend { return backend{reply: r} }
func ok() backend                          { return backend{} }
func status(code int) backend              { return answers(upstreamtest.Reply{Status: code}) }

// start starts the fake of b and returns its URL and server (nil when refused).
func (b backend) start(t *testing.T) (string, *upstreamtest.Server) {
	if b.refused {
		return upstreamtest.RefusedURL(t), nil
	}
	s := upstreamtest.New(t, upstreamtest.WithReply(b.reply))
	return s.URL, s
}

func calls(s *upstreamtest.Server) int {
	if s == nil {
		return 0
	}
	return s.CallCount()
}

func TestFallback(t *testing.T) {
	t.Parallel()
	hang := answers(upstreamtest.Reply{Hang: true})
	slow := answers(upstreamtest.Reply{Latency: 5 * time.Second})
	tests := []struct {
		name                string
		local, cloudA, cldB backend
		wantProvider        string
		wantRouterAlias     string
		wantFallback        bool
		wantCalls           [3]int
	}{
		{"local answers", ok(), ok(), ok(), "local", scoutLocal, false, [3]int{1, 0, 0}},
		{"local refused", refused(), ok(), ok(), "cloudA", scoutCloudA, true, [3]int{0, 1, 0}},
		{"local 500", status(500), ok(), ok(), "cloudA", scoutCloudA, true, [3]int{1, 1, 0}},
		{"local 429", status(429), ok(), ok(), "cloudA", scoutCloudA, true, [3]int{1, 1, 0}},
		{"local 503 cloudA 502", status(503), status(502), ok(), "cloudB", scoutCloudB, true, [3]int{1, 1, 1}},
		{"local first-byte time-out", slow, ok(), ok(), "cloudA", scoutCloudA, true, [3]int{1, 1, 0}},
		{"local hangs", hang, ok(), ok(), "cloudA", scoutCloudA, true, [3]int{1, 1, 0}},
		{"local and cloudA refused", refused(), refused(), ok(), "cloudB", scoutCloudB, true, [3]int{0, 0, 1}},
		{"cloudA hangs", refused(), hang, ok(), "cloudB", scoutCloudB, true, [3]int{0, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lu, ls := tt.local.start(t)
			au, as := tt.cloudA.start(t)
			bu, bs := tt.cldB.start(t)
			// A silent backend is waited for quickTimeout; the others
			// answer at once.
			firstByte := time.Second
			for _, b := range []backend{tt.local, tt.cloudA, tt.cldB} {
				if b.reply.Hang || b.reply.Latency > 0 {
					firstByte = quickTimeout
				}
			}
			r, logs := newRouter(t, upstream.Backends{LocalURL: lu, CloudAURL: au, CloudBURL: bu,
				FirstByteTimeout: firstByte})
			defer func() {
				if t.Failed() {
					t.Logf("logs:\n%s", logs)
				}
			}()

			resp, body, err := doRead(t, r, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions",
				Body: chatBody("lm-4-scout"), RequestID: "req-1"})
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			got := struct {
				Status                int
				Provider, RouterAlias string
				Fallback              bool
				Calls                 [3]int
			}{resp.StatusCode, resp.Provider, resp.RouterAlias, resp.Fallback, [3]int{calls(ls), calls(as), calls(bs)}}
			want := got
			want.Status, want.Provider, want.RouterAlias, want.Fallback, want.Calls =
				http.StatusOK, tt.wantProvider, tt.wantRouterAlias, tt.wantFallback, tt.wantCalls
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Do() mismatch (-want +got):\n%s", diff)
			}
			if len(body) == 0 {
				t.Error("empty body")
			}
		})
	}
}

// TestFallbackCancelsAbandonedAttempt checks that a backend timed out before its
// first byte sees its request cancelled.
func TestFallbackCancelsAbandonedAttempt(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Hang: true}))
	cloudA := upstreamtest.New(t)
	r, logs := newRouter(t, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL,
		FirstByteTimeout: quickTimeout})
	if _, _, err := doRead(t, r, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions",
		Body: chatBody("lm-4-scout"), RequestID: "req-fb"}); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if err := local.AwaitCanceled(ctxWithTimeout(t, 2*time.Second), 1); err != nil {
		t.Fatalf("local never saw its request cancelled: %v", err)
	}
	for _, want := range []string{`"outcome":"first_byte_timeout"`, `"outcome":"ok"`, `"request_id":"req-fb"`, `"attempt":2`,
		`"error":"upstream: first-byte time-out passed`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
}

func TestPinnedAliasesDoNotFallBack(t *testing.T) {
	t.Parallel()
	tests := []struct {
		alias      string
		fail       int // which backend fails: 0 local, 1 cloudA, 2 cloudB
		wantStatus int
		wantCode   errcat.Code
	}{
		{"lm-4-scout-local", 0, 0, errcat.UpstreamError},
		{"lm-4-scout-cloudA", 1, 429, errcat.UpstreamBadRequest},
		{"lm-4-scout-cloudB", 2, 0, errcat.UpstreamError},
	}
	for _, tt := range tests {
		t.Run(tt.alias, func(t *testing.T) {
			t.Parallel()
			var fakes [3]*upstreamtest.Server
			for i := range fakes {
				r := upstreamtest.Reply{}
				if i == tt.fail {
					r.Status = 500
					if tt.wantStatus != 0 {
						r.Status = tt.wantStatus
					}
				}
				fakes[i] = upstreamtest.New(t, upstreamtest.WithReply(r))
			}
			r, _ := newRouter(t, upstream.Backends{LocalURL: fakes[0].URL, CloudAURL: fakes[1].URL, CloudBURL: fakes[2].URL})
			_, err := r.Do(t.Context(), &upstream.Request{Alias: tt.alias, Path: "/chat/completions", Body: chatBody(tt.alias)})
			e := asErr(t, err)
			if e.Code != tt.wantCode || e.Status != tt.wantStatus {
				t.Errorf("error = %s (status %d), want %s (status %d)", e.Code, e.Status, tt.wantCode, tt.wantStatus)
			}
			var want, got [3]int
			want[tt.fail] = 1
			for i, f := range fakes {
				got[i] = f.CallCount()
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("calls per backend mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNoFallbackOn4xx(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Status: 400, ErrorMessage: "bad messages"}))
	cloudA := upstreamtest.New(t)
	r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL})
	_, err := r.Do(t.Context(), &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: chatBody("lm-4-scout")})
	want := &errcat.Error{Code: errcat.UpstreamBadRequest, Status: 400, Message: "bad messages"}
	if diff := cmp.Diff(want, asErr(t, err), ignoreCause); diff != "" {
		t.Errorf("Do() error mismatch (-want +got):\n%s", diff)
	}
	if n := cloudA.CallCount(); n != 0 {
		t.Errorf("cloudA got %d calls after a 400, want 0", n)
	}
}

func TestSkipsUnconfiguredBackends(t *testing.T) {
	t.Parallel()
	cloudB := upstreamtest.New(t)
	r, _ := newRouter(t, upstream.Backends{CloudBURL: cloudB.URL})
	resp, _, err := doRead(t, r, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: chatBody("lm-4-scout")})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if resp.Provider != "cloudB" || resp.Fallback {
		t.Errorf("Provider, Fallback = %s, %v; want cloudB, false (the first configured backend)", resp.Provider, resp.Fallback)
	}
}

func TestSkipsPlannedBackends(t *testing.T) {
	t.Parallel()
	def, _ := upstream.DefaultCatalog()
	m := *def.Lookup("lm-4-scout")
	m.Backends = append([]upstream.BackendInfo(nil), m.Backends...)
	m.Backends[0].Status = upstream.StatusPlanned
	m.Backends[1].Status = upstream.StatusDeprecated
	cat, err := upstream.NewCatalog([]upstream.ModelInfo{m}, "")
	if err != nil {
		t.Fatal(err)
	}
	local, cloudA := upstreamtest.New(t), upstreamtest.New(t)
	r, err := upstream.NewRouter(cat, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	resp, _, err := doRead(t, r, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: chatBody("lm-4-scout")})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if resp.Provider != "cloudA" || local.CallCount() != 0 {
		t.Errorf("Provider %s, local calls %d; want the deprecated cloudA and no call to the planned local", resp.Provider, local.CallCount())
	}
	got := []upstream.Status{}
	for _, b := range r.Catalog().Lookup("lm-4-scout").Backends {
		got = append(got, b.Status)
	}
	want := []upstream.Status{upstream.StatusPlanned, upstream.StatusDeprecated, upstream.StatusUnconfigured}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Catalog() statuses mismatch (-want +got):\n%s", diff)
	}
}

func TestSlowErrorBodyIsBounded(t *testing.T) {
	t.Parallel()
	// The local backend sends 500 headers, then one event, then stalls.
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Status: 500,
		Events: []string{"{}", "{}"}, Interval: 10 * time.Second}))
	cloudA := upstreamtest.New(t)
	r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL, FirstByteTimeout: quickTimeout})
	within(t, 3*time.Second, func() {
		if _, _, err := doRead(t, r, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: chatBody("lm-4-scout")}); err != nil {
			t.Errorf("Do: %v", err)
		}
	})
}
