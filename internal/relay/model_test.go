package relay_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/chatgw/gateway/internal/relay"
	"github.com/google/go-cmp/cmp"
)

// TestModelIsTheAlias: the top-level "model" of a JSON answer and of every
// chunk of a stream is the client's alias, whatever the backend called its
// model; nothing else of the answer changes.
func TestModelIsTheAlias(t *testing.T) {
	for _, tc := range []struct {
		name, upstream, want string
	}{
		{"plain", `{"id":"c","model":"/models/llama.gguf","choices":[]}`, `{"id":"c","model":"lm","choices":[]}`},
		{"spaces kept", "{ \"model\" :\n \"x\" , \"n\":1}", "{ \"model\" :\n \"lm\" , \"n\":1}"},
		{"not a string", `{"model":null,"n":1}`, `{"model":"lm","n":1}`},
		{"escaped key", `{"mod\u0065l":"x"}`, `{"mod\u0065l":"lm"}`},
		{"repeated key", `{"model":"a","x":{"model":"nested"},"model":"b"}`, `{"model":"lm","x":{"model":"nested"},"model":"lm"}`},
		{"no model", `{"id":"c","choices":[]}`, `{"id":"c","choices":[]}`},
		{"look-alike values", `{"id":"\"model\":","model":"x"}`, `{"id":"\"model\":","model":"lm"}`},
	} {
		t.Run(tc.name+"/json", func(t *testing.T) {
			w := httptest.NewRecorder()
			res := relay.Response(w, httptest.NewRequest("POST", "/", nil), jsonResponse(tc.upstream), relay.Options{Model: "lm"})
			if !res.Complete {
				t.Fatalf("relay not complete: %v", res.Err)
			}
			if diff := cmp.Diff(tc.want, w.Body.String()); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
			if got := w.Header().Get("Content-Length"); got != strconv.Itoa(len(tc.want)) {
				t.Errorf("Content-Length = %s, want %d", got, len(tc.want))
			}
		})
		t.Run(tc.name+"/stream", func(t *testing.T) {
			// A line break in an event's data is a new data: line.
			lines := func(s string) string { return "data: " + strings.ReplaceAll(s, "\n", "\ndata: ") + "\n\n" }
			resp, _ := sseResponse(strings.NewReader(lines(tc.upstream) + "data: [DONE]\n\n"))
			w := newRecorder()
			relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{Model: "lm"})
			want := lines(tc.want) + "data: [DONE]\n\n"
			if diff := cmp.Diff(want, w.String()); diff != "" {
				t.Errorf("stream mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestModelKeptWithoutAlias: without Options.Model the answer is relayed as
// the backend sent it, and an Encoder names the model of its own API.
func TestModelKeptWithoutAlias(t *testing.T) {
	const answer = `{"id":"c","model":"backend","choices":[]}`
	w := httptest.NewRecorder()
	relay.Response(w, httptest.NewRequest("POST", "/", nil), jsonResponse(answer), relay.Options{})
	if w.Body.String() != answer {
		t.Errorf("body = %s, want it unchanged", w.Body)
	}
}

// TestBackendHeaders: a relayed answer names the backend that served it;
// an error answer does not.
func TestBackendHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         http.Header
	}{
		{"answer", `{"model":"m"}`, http.Header{"Gw-Backend": {"local"}, "Gw-Backend-Model": {"llama3.2"}}},
		{"error", `not json`, http.Header{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := jsonResponse(tc.answer)
			resp.Provider, resp.RouterAlias = "local", "llama3.2"
			w := httptest.NewRecorder()
			relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{Model: "lm"})
			got := http.Header{}
			for _, k := range []string{relay.HeaderBackend, relay.HeaderBackendModel} {
				if v := w.Header().Values(k); v != nil {
					got[http.CanonicalHeaderKey(k)] = v
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("backend headers mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJSONUsageWithAlias: the walk that writes the alias into a JSON answer
// keeps its usage too, as a usage-only capture without an alias keeps it:
// the last top-level "usage" object, nothing nested, no other value.
func TestJSONUsageWithAlias(t *testing.T) {
	tests := []struct{ name, answer, want string }{
		{"usage", `{"model":"m","usage":{"total_tokens":7}}`, `{"total_tokens":7}`},
		{"the last", `{"usage":{"total_tokens":1},"model":"m","usage":{"total_tokens":2}}`, `{"total_tokens":2}`},
		{"not an object", `{"model":"m","usage":7}`, ``},
		{"nested only", `{"model":"m","choices":[{"usage":{"total_tokens":3}}]}`, ``},
		{"none", `{"model":"m"}`, ``},
	}
	for _, tt := range tests {
		for _, alias := range []string{"lm-4-scout", ""} {
			c := relay.Capture{UsageOnly: true}
			res := relay.Response(newRecorder(), httptest.NewRequest("POST", "/", nil), jsonResponse(tt.answer),
				relay.Options{Model: alias, Capture: &c})
			if !res.Complete || string(c.Usage) != tt.want {
				t.Errorf("%s, alias %q: Response() = %+v, usage %s; want complete, usage %s", tt.name, alias, res, c.Usage, tt.want)
			}
		}
	}
}
