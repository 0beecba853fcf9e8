package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRedactArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "no URL", args: []string{"-quick", "-store-url", "pgtest"}, want: []string{"-quick", "-store-url", "pgtest"}},
		{name: "URL without password", args: []string{"-store-url", "postgres://u@db:5432/x"}, want: []string{"-store-url", "postgres://u@db:5432/x"}},
		{name: "password in the user part", args: []string{"-store-url", "postgres://u:s3cret@db/x"}, want: []string{"-store-url", "postgres://u:xxxxx@db/x"}},
		{name: "flag=URL", args: []string{"-store-url=postgresql://u:s3cret@db/x"}, want: []string{"-store-url=postgresql://u:xxxxx@db/x"}},
		{name: "password parameter", args: []string{"-store-url", "postgres://db/x?sslmode=disable&password=s3cret"}, want: []string{"-store-url", "postgres://db/x?password=xxxxx&sslmode=disable"}},
		{name: "unparsable", args: []string{"-store-url", "postgres://u:s3cret@db:port/x"}, want: []string{"-store-url", "postgres://..."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, redactArgs(tc.args)); diff != "" {
				t.Errorf("redactArgs(%q) mismatch (-want +got):\n%s", tc.args, diff)
			}
		})
	}
}

func TestGatewaySentence(t *testing.T) {
	tests := []struct {
		name string
		rep  report
		want string
	}{
		{name: "no gateway", rep: report{}, want: ""},
		{
			name: "bbolt",
			rep:  report{Store: "bbolt", StoreAbout: "gateway.db in a temporary directory", GatewayReplicas: 1, GatewayLog: "file"},
			want: " Gateway: 1 process. Logs: gatewayd's JSON lines, appended to a file. Store: bbolt, gateway.db in a temporary directory.",
		},
		{
			name: "PostgreSQL replicas",
			rep:  report{Store: "postgresql", StoreVersion: "15.18", StoreAbout: "the database of -store-url, fsync on, synchronous_commit on", GatewayReplicas: 2, GatewayLog: "none"},
			want: " Gateway: 2 replicas on one store, taking its requests in turn (their CPU time and RSS, idle and peak, are summed). Logs: none built (-gateway-log none). Store: PostgreSQL 15.18, the database of -store-url, fsync on, synchronous_commit on.",
		},
		{
			name: "replicas and slow streams",
			rep:  report{Store: "postgresql", StoreVersion: "15.18", StoreAbout: "x", GatewayReplicas: 2, Slow: []slowReport{{Target: targetGateway}}},
			want: " Gateway: 2 replicas on one store, taking its requests in turn (their CPU time and RSS, idle and peak, are summed); slow-streams: 1 process. Logs: gatewayd's JSON lines, appended to a file. Store: PostgreSQL 15.18, x.",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, gatewaySentence(&tc.rep)); diff != "" {
				t.Errorf("gatewaySentence() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
