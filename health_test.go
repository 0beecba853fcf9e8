package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// TestInfoAgreesWithReadyz: after /readyz finds the local backend down,
// /v1/info shows it unconfigured too, and available again once /readyz
// found it back: both read one probe.
func TestInfoAgreesWithReadyz(t *testing.T) {
	var down atomic.Bool
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() { // a backend that accepts and drops connections
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	t.Cleanup(local.Close)
	e := newEnvOn(t, nil, upstream.Backends{LocalURL: local.URL + "/v1"})

	type view struct{ Readyz, Info string }
	look := func() view {
		_, b := e.do(t, call{method: "GET", path: "/readyz"})
		var rep struct {
			LocalBackend string `json:"local_backend"`
		}
		json.Unmarshal(b, &rep)
		_, b = e.do(t, call{method: "GET", path: "/v1/info", token: "member"})
		var info struct {
			Models []struct {
				Alias    string
				Backends []struct{ Status string }
			}
		}
		json.Unmarshal(b, &info)
		for _, m := range info.Models {
			if m.Alias == "lm-4-scout-local" {
				return view{rep.LocalBackend, m.Backends[0].Status}
			}
		}
		t.Fatalf("no lm-4-scout-local in /v1/info: %s", b)
		return view{}
	}
	for _, step := range []struct {
		down bool
		want view
	}{
		{false, view{"available", "available"}},
		{true, view{"unconfigured", "unconfigured"}},
		{false, view{"available", "available"}},
	} {
		down.Store(step.down)
		if diff := cmp.Diff(step.want, look()); diff != "" {
			t.Errorf("backend down %v: /readyz and /v1/info mismatch (-want +got):\n%s", step.down, diff)
		}
	}
}
