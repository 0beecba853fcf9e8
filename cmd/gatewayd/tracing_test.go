package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestTracerProvider: tracing is on only when the standard variables ask
// for it, and an exporter or protocol gatewayd does not speak stops it.
func TestTracerProvider(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantOn  bool
		wantErr bool
	}{
		{"unset", nil, false, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, false},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, false},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, false},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false, false},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, false},
		{"traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "nope", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, true, false},
		{"zipkin", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
		{"http/json", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := tracerProvider(t.Context(), envOf(tt.env))
			if (err != nil) != tt.wantErr || (tp != nil) != tt.wantOn {
				t.Fatalf("tracerProvider = %v, %v; want on %v, error %v", tp, err, tt.wantOn, tt.wantErr)
			}
			if err := shutdownTracing(tp); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
	}
}

// TestTracesExported: with OTEL_EXPORTER_OTLP_ENDPOINT set, gatewayd exports
// its spans over OTLP/HTTP to a collector stand-in, flushed when it stops,
// with service.name chatgw.
func TestTracesExported(t *testing.T) {
	var mu sync.Mutex
	var got []*collectortrace.ExportTraceServiceRequest
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		b, _ := io.ReadAll(r.Body)
		req := new(collectortrace.ExportTraceServiceRequest)
		if err := proto.Unmarshal(b, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	// The exporter reads the process's environment; run decides by its own.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	base, token, _, stop := startDevEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL})
	req, _ := http.NewRequest("GET", base+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	names, service := map[string]bool{}, ""
	for _, r := range got {
		for _, rs := range r.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names[s.Name] = true
				}
			}
		}
	}
	if !names["GET /v1/models"] || service != "chatgw" {
		t.Errorf("exported spans %v of service %q, want GET /v1/models of chatgw (%d exports)", names, service, len(got))
	}
}
