package preflight_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/metrics"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestGuardMetrics: every classification is counted with the tenant's mode
// and its decision; a flagged verdict beside a failure counts as flagged, as
// it answers; an audit is counted when its verdict comes.
func TestGuardMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(metrics.Config{Registerer: reg, TenantLabel: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode    string
		verdict guard.Verdict
		err     error
	}{
		{"block", guard.Verdict{}, nil},
		{"block", flagged, guard.ErrUnavailable},
		{"block", guard.Verdict{}, guard.ErrUnavailable},
		{"audit", flagged, nil},
		{"audit", guard.Verdict{}, guard.ErrUnavailable},
		{"audit", guard.Verdict{}, nil},
		{"audit", guard.Verdict{}, nil},
	} {
		info := new(httpx.Info)
		info.Init("req_guard", slog.New(slog.DiscardHandler))
		info.Tenant = "acme"
		info.Metrics = m.Begin(time.Now())
		c := newFakeClassifier(tc.verdict, tc.err)
		_, _ = preflight.Check(httpx.WithInfo(context.Background(), info), guardRequest(tc.mode, guardBody, &preflight.Guard{Classifier: c}))
		<-c.done
	}
	want := `
# HELP chatgw_content_guard_decisions_total Content guard classifications, by the tenant's mode and the decision.
# TYPE chatgw_content_guard_decisions_total counter
chatgw_content_guard_decisions_total{decision="allowed",mode="audit",tenant="acme"} 2
chatgw_content_guard_decisions_total{decision="allowed",mode="block",tenant="acme"} 1
chatgw_content_guard_decisions_total{decision="failed",mode="audit",tenant="acme"} 1
chatgw_content_guard_decisions_total{decision="failed",mode="block",tenant="acme"} 1
chatgw_content_guard_decisions_total{decision="flagged",mode="audit",tenant="acme"} 1
chatgw_content_guard_decisions_total{decision="flagged",mode="block",tenant="acme"} 1
`
	// The audits count on their own goroutines, after their verdicts.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := testutil.GatherAndCompare(reg, strings.NewReader(want), "chatgw_content_guard_decisions_total")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
}
