package upstream_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

func TestExternalRouter(t *testing.T) {
	t.Parallel()
	rtr := upstreamtest.New(t, upstreamtest.WithScript(upstreamtest.Reply{Status: 502}))
	local := upstreamtest.New(t)
	r, logs := newRouter(t, upstream.Backends{RouterURL: rtr.URL, RouterAPIKey: "rk-router-key",
		LocalURL: local.URL, CloudAAPIKey: "sk-provider-key-A"})

	resp, _, err := doRead(t, r, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: chatBody("lm-4-scout")})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if resp.Provider != "cloudA" || resp.RouterAlias != scoutCloudA || !resp.Fallback {
		t.Errorf("Response = %s %s fallback %v, want cloudA %s fallback true", resp.Provider, resp.RouterAlias, resp.Fallback, scoutCloudA)
	}
	type sent struct{ Path, Model, Authorization string }
	var got []sent
	for _, c := range rtr.Calls() {
		got = append(got, sent{c.Path, c.Model, c.Header.Get("Authorization")})
	}
	want := []sent{
		{"/v1/chat/completions", scoutLocal, "Bearer rk-router-key"},
		{"/v1/chat/completions", scoutCloudA, "Bearer rk-router-key"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("router calls mismatch (-want +got):\n%s", diff)
	}
	if n := local.CallCount(); n != 0 {
		t.Errorf("the local backend got %d calls in router mode, want 0", n)
	}
	if !strings.Contains(logs.String(), `"via":"router"`) {
		t.Errorf("logs lack via=router:\n%s", logs)
	}

	// Every backend counts as configured through the router.
	for _, m := range r.Catalog().Models {
		for _, b := range m.Backends {
			if b.Status != upstream.StatusAvailable {
				t.Errorf("%s/%s status %s in router mode, want available", m.Alias, b.Provider, b.Status)
			}
		}
	}
}

// TestCancel is not parallel: it checks that no client goroutine is left.
func TestCancel(t *testing.T) {
	t.Run("before the headers", func(t *testing.T) {
		local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Hang: true}))
		cloudA := upstreamtest.New(t)
		r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL})
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			_, err := r.Do(ctx, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: chatBody("lm-4-scout")})
			errc <- err
		}()
		if err := local.AwaitCalls(ctxWithTimeout(t, 2*time.Second), 1); err != nil {
			t.Fatalf("the call never arrived: %v", err)
		}
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) || asErr(t, err).Code != errcat.UpstreamUnavailable {
				t.Errorf("Do() = %v, want upstream_unavailable caused by context.Canceled", err)
			}
		case <-time.After(time.Second):
			t.Fatal("Do did not return after cancel")
		}
		if err := local.AwaitCanceled(ctxWithTimeout(t, 2*time.Second), 1); err != nil {
			t.Errorf("the backend never saw the request context end: %v", err)
		}
		if n := cloudA.CallCount(); n != 0 {
			t.Errorf("cloudA got %d calls after cancel, want 0", n)
		}
		r.Close()
		awaitNoClientConns(t)
	})
	t.Run("while streaming", func(t *testing.T) {
		local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Chunks: 50, Interval: 50 * time.Millisecond}))
		r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL})
		ctx, cancel := context.WithCancel(t.Context())
		resp, err := r.Do(ctx, &upstream.Request{Alias: "lm-4-scout-local", Path: "/chat/completions",
			Body: []byte(`{"model":"lm-4-scout-local","stream":true}`), Stream: true})
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
		buf := make([]byte, 16)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatalf("first read: %v", err)
		}
		cancel()
		if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
			t.Errorf("read after cancel = %v, want context.Canceled in the chain", err)
		}
		resp.Body.Close()
		if err := local.AwaitCanceled(ctxWithTimeout(t, 2*time.Second), 1); err != nil {
			t.Errorf("the backend never saw the request context end: %v", err)
		}
		r.Close()
		awaitNoClientConns(t)
	})
	t.Run("closing the body early", func(t *testing.T) {
		local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Chunks: 50, Interval: 50 * time.Millisecond}))
		r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL})
		resp, err := r.Do(t.Context(), &upstream.Request{Alias: "lm-4-scout-local", Path: "/chat/completions",
			Body: []byte(`{"model":"lm-4-scout-local","stream":true}`), Stream: true})
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
		resp.Body.Close()
		if err := local.AwaitCanceled(ctxWithTimeout(t, 2*time.Second), 1); err != nil {
			t.Errorf("the backend never saw the request context end: %v", err)
		}
		r.Close()
		awaitNoClientConns(t)
	})
}
