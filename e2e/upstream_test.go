package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

func TestFallback(t *testing.T) {
	t.Parallel()
	type want struct {
		status                int
		code                  string
		local, cloudA, cloudB int // chat calls received per request
		from                  string
		notice                bool
		retryAfter            string
		typ                   string
		reason                string // in the error message: the upstream's reason
	}
	// timeouts sets the first-byte and total upstream time-outs.
	timeouts := func(s *setup, firstByte, total string) {
		s.Env["GATEWAY_FIRST_BYTE_TIMEOUT"] = firstByte
		s.Env["GATEWAY_UPSTREAM_TIMEOUT"] = total
	}
	hang := upstreamtest.Reply{Hang: true}
	cases := []struct {
		name  string
		model string
		mod   func(t *testing.T, s *setup)
		want  want
		ref   string
	}{
		{"local refused -> cloudA", "lm-4-scout", func(t *testing.T, s *setup) { s.LocalURL = refused(t) },
			want{status: 200, cloudA: 1, from: "chatcmpl-clouda", notice: true}, "spec: falls back to cloudA; DECISIONS 4"},
		{"local 500 -> cloudA", "lm-4-scout", func(t *testing.T, s *setup) { s.Local.Reply = upstreamtest.Reply{Status: 500} },
			want{status: 200, local: 1, cloudA: 1, from: "chatcmpl-clouda", notice: true}, "DECISIONS 4: 5xx falls back"},
		{"local 429 -> cloudA", "lm-4-scout", func(t *testing.T, s *setup) { s.Local.Reply = upstreamtest.Reply{Status: 429} },
			want{status: 200, local: 1, cloudA: 1, from: "chatcmpl-clouda", notice: true}, "DECISIONS 4: 429 falls back"},
		{"local 503 cloudA 429 -> cloudB", "lm-4-scout", func(t *testing.T, s *setup) {
			s.Local.Reply = upstreamtest.Reply{Status: 503}
			s.CloudA.Reply = upstreamtest.Reply{Status: 429}
		}, want{status: 200, local: 1, cloudA: 1, cloudB: 1, from: "chatcmpl-cloudb", notice: true}, "DECISIONS 4: 429 falls back"},
		{"local 503 cloudA 502 -> cloudB", "lm-4-scout", func(t *testing.T, s *setup) {
			s.Local.Reply = upstreamtest.Reply{Status: 503}
			s.CloudA.Reply = upstreamtest.Reply{Status: 502}
		}, want{status: 200, local: 1, cloudA: 1, cloudB: 1, from: "chatcmpl-cloudb", notice: true}, "DECISIONS 4: 5xx falls back down the chain"},
		{"local first-byte timeout -> cloudA", "lm-4-scout", func(t *testing.T, s *setup) {
			s.Env["GATEWAY_FIRST_BYTE_TIMEOUT"] = "300ms"
			s.Local.Reply = upstreamtest.Reply{Latency: 5 * time.Second}
		}, want{status: 200, local: 1, cloudA: 1, from: "chatcmpl-clouda", notice: true}, "DECISIONS 4, 8.12: time-out before first byte falls back"},
		{"local hangs past the first-byte timeout -> cloudA", "lm-4-scout", func(t *testing.T, s *setup) {
			timeouts(s, "300ms", "1500ms")
			s.Local.Reply = hang
		}, want{status: 200, local: 1, cloudA: 1, from: "chatcmpl-clouda", notice: true}, "DECISIONS 4, 8.12: a silent backend falls back"},
		{"local ok, no fallback", "lm-4-scout", func(t *testing.T, s *setup) {},
			want{status: 200, local: 1, from: "chatcmpl-local"}, "DECISIONS 4: the first backend that answers"},
		{"local unset -> cloudA, no fallback notice needed", "lm-4-scout", func(t *testing.T, s *setup) { s.LocalURL = emptyURL },
			want{status: 200, cloudA: 1, from: "chatcmpl-clouda"}, "spec /v1/info notes: unconfigured backend skipped"},
		{"local 400 -> no fallback, upstream_bad_request", "lm-4-scout", func(t *testing.T, s *setup) {
			s.Local.Reply = upstreamtest.Reply{Status: 400, ErrorMessage: "bad thing from upstream"}
		}, want{status: 400, code: "upstream_bad_request", typ: "invalid_request_error", local: 1, reason: "bad thing from upstream"}, "spec Codes upstream_bad_request; DECISIONS 4 (4xx other than 429 is not a fallback trigger)"},
		{"pinned local 500 never falls back", "lm-4-scout-local", func(t *testing.T, s *setup) { s.Local.Reply = upstreamtest.Reply{Status: 500} },
			want{status: 502, code: "upstream_error", typ: "api_error", local: 1}, "spec: pinned alias; DECISIONS 8.13"},
		{"pinned local refused", "lm-4-scout-local", func(t *testing.T, s *setup) { s.LocalURL = refused(t) },
			want{status: 503, code: "upstream_unavailable", typ: "overloaded_error"}, "spec Codes upstream_unavailable"},
		{"pinned local 200 with a non-JSON body", "lm-4-scout-local", func(t *testing.T, s *setup) {
			s.Local.Reply = upstreamtest.Reply{Body: []byte("<html>oops</html>"), ContentType: "text/html"}
		}, want{status: 502, code: "upstream_error", typ: "api_error", local: 1}, "spec Codes upstream_error: an answer that is not OpenAI-shaped"},
		{"pinned local 200 with an error object", "lm-4-scout-local", func(t *testing.T, s *setup) {
			s.Local.Reply = upstreamtest.Reply{Body: []byte(`{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`)}
		}, want{status: 502, code: "upstream_error", typ: "api_error", local: 1}, "spec Codes upstream_error: a 200 that is an OpenAI error object"},
		{"pinned cloudA 422 status passthrough", "lm-4-scout-cloudA", func(t *testing.T, s *setup) {
			s.CloudA.Reply = upstreamtest.Reply{Status: 422, ErrorMessage: "unprocessable thing"}
		}, want{status: 422, code: "upstream_bad_request", typ: "invalid_request_error", cloudA: 1, reason: "unprocessable thing"}, "DECISIONS 8.13: same status"},
		{"pinned cloudA 429 with Retry-After", "lm-4-scout-cloudA", func(t *testing.T, s *setup) {
			s.CloudA.Reply = upstreamtest.Reply{Status: 429, RetryAfter: "7"}
		}, want{status: 429, code: "upstream_bad_request", typ: "invalid_request_error", cloudA: 1, retryAfter: "7"}, "DECISIONS 8.13: upstream Retry-After passed on for 429"},
		{"pinned cloudB 404 passthrough", "lm-4-scout-cloudB", func(t *testing.T, s *setup) {
			s.CloudB.Reply = upstreamtest.Reply{Status: 404, ErrorMessage: "no such model upstream"}
		}, want{status: 404, code: "upstream_bad_request", typ: "invalid_request_error", cloudB: 1}, "DECISIONS 8.13"},
		{"pinned cloudB hangs past the total timeout", "lm-4-scout-cloudB", func(t *testing.T, s *setup) {
			timeouts(s, "10s", "800ms")
			s.CloudB.Reply = hang
		}, want{status: 504, code: "upstream_timeout", typ: "timeout_error", cloudB: 1}, "spec Codes upstream_timeout; DECISIONS 2 GATEWAY_UPSTREAM_TIMEOUT"},
		{"pinned cloudB silent past the first-byte timeout", "lm-4-scout-cloudB", func(t *testing.T, s *setup) {
			timeouts(s, "300ms", "1500ms")
			s.CloudB.Reply = hang
		}, want{status: 504, code: "upstream_timeout", typ: "timeout_error", cloudB: 1}, "DECISIONS 8.12: a pinned alias does not fall back"},
		{"chain hangs past the total timeout", "lm-4-scout", func(t *testing.T, s *setup) {
			timeouts(s, "10s", "800ms")
			s.Local.Reply, s.CloudA.Reply, s.CloudB.Reply = hang, hang, hang
		}, want{status: 504, code: "upstream_timeout", typ: "timeout_error", local: 1}, "DECISIONS 2: GATEWAY_UPSTREAM_TIMEOUT bounds the whole chain"},
		{"all refused", "lm-4-scout", func(t *testing.T, s *setup) {
			s.LocalURL, s.CloudAURL, s.CloudBURL = refused(t), refused(t), refused(t)
		}, want{status: 503, code: "upstream_unavailable", typ: "overloaded_error"}, "DECISIONS 8.20"},
		{"all 500", "lm-4-scout", func(t *testing.T, s *setup) {
			s.Local.Reply = upstreamtest.Reply{Status: 500}
			s.CloudA.Reply = upstreamtest.Reply{Status: 500}
			s.CloudB.Reply = upstreamtest.Reply{Status: 502}
		}, want{status: 502, code: "upstream_error", typ: "api_error", local: 1, cloudA: 1, cloudB: 1}, "DECISIONS 8.20"},
		{"last answered wins over refused", "lm-4-scout", func(t *testing.T, s *setup) {
			s.LocalURL = refused(t)
			s.CloudA.Reply = upstreamtest.Reply{Status: 500}
			s.CloudBURL = refused(t)
		}, want{status: 502, code: "upstream_error", typ: "api_error", cloudA: 1}, "DECISIONS 8.20: the error of the last backend that answered"},
		{"local 500, clouds refused", "lm-4-scout", func(t *testing.T, s *setup) {
			s.Local.Reply = upstreamtest.Reply{Status: 500}
			s.CloudAURL, s.CloudBURL = refused(t), refused(t)
		}, want{status: 502, code: "upstream_error", typ: "api_error", local: 1}, "DECISIONS 8.20: the error of the last backend that answered"},
		{"last backend 429", "lm-4-scout", func(t *testing.T, s *setup) {
			s.Local.Reply = upstreamtest.Reply{Status: 500}
			s.CloudA.Reply = upstreamtest.Reply{Status: 500}
			s.CloudB.Reply = upstreamtest.Reply{Status: 429, RetryAfter: "3"}
		}, want{status: 429, code: "upstream_bad_request", typ: "invalid_request_error", local: 1, cloudA: 1, cloudB: 1, retryAfter: "3"}, "DECISIONS 8.13"},
		{"all unconfigured", "lm-4-scout", func(t *testing.T, s *setup) {
			s.LocalURL, s.CloudAURL, s.CloudBURL = emptyURL, unset, unset
		}, want{status: 400, code: "model_not_configured", typ: "invalid_request_error"}, "issue 16 item 7: not a 503 that a retry cannot fix"},
	}
	// the model each backend gets for lm-4-scout: its router_alias (DECISIONS 8.5)
	routerAlias := map[string]string{"chatcmpl-local": "lm-4-scout:17b-16e-instruct-q4_K_M", "chatcmpl-clouda": "lm-4-scout-17b-16e-instruct", "chatcmpl-cloudb": "lm-4-scout-17b-16e-instruct:free"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := start(t, func(s *setup) { tc.mod(t, s) })
			served := map[string]*upstreamtest.Server{"chatcmpl-local": g.Local, "chatcmpl-clouda": g.CloudA, "chatcmpl-cloudb": g.CloudB}
			for _, stream := range []bool{false, true} {
				b := chatBody(tc.model, "hello")
				if stream {
					b["stream"] = true
				}
				reqID := fmt.Sprintf("fb-%d-%v", time.Now().UnixNano(), stream)
				t0 := time.Now()
				r := g.do(t, "POST", "/v1/chat/completions", tokAdmin, "", b, H{"X-Request-Id": reqID})
				elapsed := time.Since(t0)
				w := tc.want
				if w.status == 200 && w.notice {
					// DECISIONS 4: each attempt and its outcome is logged with the request id
					lines := func(attempt bool) int {
						n := 0
						for _, line := range strings.Split(g.stderr.String(), "\n") {
							if strings.Contains(line, reqID) && (!attempt || strings.Contains(line, "attempt")) {
								n++
							}
						}
						return n
					}
					tried := 1 + w.cloudA + w.cloudB
					if !waitFor(time.Second, func() bool { return lines(true) >= tried }) {
						t.Errorf("log has %d attempt lines with request id %s, want %d: one per backend tried (DECISIONS 4: each attempt and its outcome is logged with the request id)", lines(true), reqID, tried)
					}
					if !waitFor(time.Second, func() bool { return lines(false) >= tried+1 }) {
						t.Errorf("log has %d lines with request id %s, want %d: the attempts and the request line (DECISIONS 4, 5)", lines(false), reqID, tried+1)
					}
				}
				if w.status == 200 {
					if !wantStatus(t, r, 200, tc.ref) {
						continue
					}
					if f := served[w.from]; f != nil {
						calls := f.Calls()
						if m := calls[len(calls)-1].Model; m != routerAlias[w.from] {
							t.Errorf("model sent to the backend that answered: %q, want its router_alias %q (DECISIONS 8.5)", m, routerAlias[w.from])
						}
					}
					if !stream {
						m := r.JSON()
						if id := m["id"]; id != w.from {
							t.Errorf("answer id %v, want %s (answered by the expected backend)", id, w.from)
						}
						if m["object"] != "chat.completion" {
							t.Errorf("answer %s is not a chat.completion", truncate(string(r.Body), 300))
						}
						wantJSON(t, r)
						notice := r.Header.Get("GW-Notice")
						if w.notice && !strings.Contains(notice, "backend_fallback") {
							t.Errorf("non-streaming fallback answer: GW-Notice %q, want backend_fallback (DECISIONS 5; spec Events 2)", notice)
						}
						if !w.notice && strings.Contains(notice, "backend_fallback") {
							t.Errorf("GW-Notice %q without a fallback (DECISIONS 5)", notice)
						}
					} else {
						checkStream(t, r, w.from, w.notice)
					}
				} else {
					wantErr(t, r, w.status, w.typ, w.code, anyParam, tc.ref)
					if stream && strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
						t.Errorf("streaming request failed before the first byte answered SSE, want the JSON error envelope (DECISIONS 5)")
					}
					if w.retryAfter != "" && r.Header.Get("Retry-After") != w.retryAfter {
						t.Errorf("Retry-After %q, want %q passed on (DECISIONS 8.13)", r.Header.Get("Retry-After"), w.retryAfter)
					}
					msg := string(r.Body)
					for _, leak := range []string{"sk-clouda-secret-key", "sk-cloudb-secret-key", strings.TrimPrefix(g.Local.URL, "http://"), strings.TrimPrefix(g.CloudA.URL, "http://")} {
						if strings.Contains(msg, leak) {
							t.Errorf("error body leaks %q: %s (issue 3 item 4)", leak, msg)
						}
					}
					if w.reason != "" && !strings.Contains(msg, w.reason) {
						t.Errorf("%s message %s lacks the upstream reason %q (spec Codes)", w.code, msg, w.reason)
					}
					if w.code == "upstream_timeout" && elapsed > 3*time.Second {
						t.Errorf("upstream_timeout answered after %v, want within the configured time-outs", elapsed)
					}
				}
			}
			got := [3]int{chatCalls(g.Local), chatCalls(g.CloudA), chatCalls(g.CloudB)}
			w := tc.want
			if want := [3]int{2 * w.local, 2 * w.cloudA, 2 * w.cloudB}; got != want {
				t.Errorf("chat calls (local, cloudA, cloudB) = %v over two requests, want %v (%s)", got, want, tc.ref)
			}
			if w.cloudA > 0 {
				if up := lastBody(t, g.CloudA, "/chat/completions"); up["model"] != "lm-4-scout-17b-16e-instruct" && tc.model == "lm-4-scout" {
					t.Errorf("cloudA got model %v, want its router_alias (DECISIONS 8.5)", up["model"])
				}
				calls := g.CloudA.Calls()
				if a := calls[len(calls)-1].Header.Get("Authorization"); a != "Bearer sk-clouda-secret-key" {
					t.Errorf("cloudA Authorization %q, want Bearer <GATEWAY_CLOUDA_API_KEY> (issue 3 item 2)", a)
				}
			}
			if strings.Contains(g.stderr.String(), "sk-clouda-secret-key") {
				t.Errorf("the cloudA API key appears in gatewayd's log (issue 3 item 2: never logged)")
			}
		})
	}
}

func TestStreaming(t *testing.T) {
	t.Parallel()
	t.Run("chunks verbatim", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.Local.Reply = upstreamtest.Reply{Content: "one two three four five", Chunks: 5} })
		b := chatBody("lm-4-scout-local", "hi")
		b["stream"] = true
		b["stream_options"] = map[string]any{"include_usage": true}
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", b)
		if !wantStatus(t, r, 200, "spec Events 1") {
			return
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Errorf("Content-Type %q, want text/event-stream (DECISIONS 8.30)", ct)
		}
		if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "no-cache") {
			t.Errorf("Cache-Control %q, want no-cache (DECISIONS 8.30)", cc)
		}
		up := lastBody(t, g.Local, "/chat/completions")
		// what the fake sends for that body, fetched directly
		direct := doURL(t, client, "POST", g.Local.URL+"/chat/completions", "", "", mustJSON(up), nil)
		// byte for byte but for each chunk's model, the alias asked for (issue 16 item 7)
		want := testkit.ParseSSE(t, strings.ReplaceAll(string(direct.Body), `"model":"lm-4-scout:17b-16e-instruct-q4_K_M"`, `"model":"lm-4-scout-local"`))
		got := testkit.ParseSSE(t, string(r.Body))
		if mustJSON(got) != mustJSON(want) {
			t.Errorf("relayed stream differs from the upstream's:\n got %s\nwant %s (issue 3 item 3: chunks keep the OpenAI shape exactly)", mustJSON(got), mustJSON(want))
		}
		if testkit.Content(t, got) != "one two three four five" {
			t.Errorf("accumulated content %q", testkit.Content(t, got))
		}
		if _, ok := up["stream_options"]; !ok {
			t.Errorf("upstream body %s lacks stream_options (DECISIONS 5: unknown fields passed through verbatim)", truncate(mustJSON(up), 300))
		}
	})
	t.Run("cut stream ends with gw.error and no DONE", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) {
			s.Local.Reply = upstreamtest.Reply{Chunks: 4, Drop: true, DropAfter: 2, Interval: 20 * time.Millisecond}
		})
		b := chatBody("lm-4-scout", "hi") // chain: must not fall back after the first byte
		b["stream"] = true
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", b)
		if r.Status != 200 {
			t.Fatalf("%s: want 200 (the stream started)", r)
		}
		evs := testkit.ParseSSE(t, string(r.Body))
		var errEv *testkit.Event
		for i := range evs {
			if evs[i].Data == "[DONE]" {
				t.Errorf("cut stream ends with data: [DONE] (DECISIONS 5: no [DONE] after gw.error)")
			}
			if evs[i].Type == "gw.error" {
				errEv = &evs[i]
			}
		}
		if errEv == nil {
			t.Fatalf("cut stream has no gw.error event (DECISIONS 5; issue 3 item 3): %s", r.Body)
		}
		if evs[len(evs)-1].Type != "gw.error" {
			t.Errorf("gw.error is not the last event")
		}
		var env struct {
			Error  map[string]any `json:"error"`
			GWCode any            `json:"gw_code"`
		}
		if json.Unmarshal([]byte(errEv.Data), &env); env.Error["code"] == nil || env.Error["type"] == nil || env.Error["message"] == nil {
			t.Errorf("gw.error data %s, want the error envelope {\"error\":{type,code,message,param}} (DECISIONS 5)", errEv.Data)
		} else if env.GWCode != env.Error["code"] {
			t.Errorf("gw.error data %s: gw_code %v, want the code %v (docs/decisions.md Relay: the full error envelope, with gw_code)", errEv.Data, env.GWCode, env.Error["code"])
		}
		if chatCalls(g.CloudA)+chatCalls(g.CloudB) != 0 {
			t.Errorf("fell back after the first byte (DECISIONS 4: never)")
		}
	})
	t.Run("pinned alias stream upstream error before first byte", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.CloudA.Reply = upstreamtest.Reply{Status: 500} })
		b := chatBody("lm-4-scout-cloudA", "hi")
		b["stream"] = true
		wantErr(t, g.post(t, "/v1/chat/completions", tokAdmin, "", b), 502, "api_error", "upstream_error", anyParam, "DECISIONS 5: before the first byte, the normal JSON error")
	})
	t.Run("client disconnect cancels upstream", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) { s.Local.Reply = upstreamtest.Reply{Hang: true} })
		b := chatBody("lm-4-scout-local", "hi")
		b["stream"] = true
		req, _ := http.NewRequest("POST", g.Base+"/v1/chat/completions", strings.NewReader(mustJSON(b)))
		req.Header.Set("Authorization", "Bearer "+tokAdmin)
		c := &http.Client{Timeout: 500 * time.Millisecond}
		if res, err := c.Do(req); err == nil {
			res.Body.Close()
		}
		if err := g.Local.AwaitCanceled(ctxTimeout(t, 3*time.Second), 1); err != nil {
			t.Errorf("upstream call not cancelled after the client went away (issue 3 item 3)")
		}
	})
}

func TestUpstreamTimeouts(t *testing.T) {
	t.Parallel()
	t.Run("total timeout 504", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) {
			s.Env["GATEWAY_UPSTREAM_TIMEOUT"] = "1s"
			s.Local.Reply = upstreamtest.Reply{Latency: 4 * time.Second}
		})
		t0 := time.Now()
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", chatBody("lm-4-scout-local", "slow"))
		wantErr(t, r, 504, "timeout_error", "upstream_timeout", anyParam, "spec Codes upstream_timeout; DECISIONS 2 GATEWAY_UPSTREAM_TIMEOUT")
		if d := time.Since(t0); d > 3*time.Second {
			t.Errorf("total time-out 1s answered after %v", d)
		}
	})
	t.Run("stream stalls past total timeout", func(t *testing.T) {
		t.Parallel()
		g := start(t, func(s *setup) {
			s.Env["GATEWAY_UPSTREAM_TIMEOUT"] = "1s"
			s.Local.Reply = upstreamtest.Reply{Chunks: 3, Interval: 3 * time.Second}
		})
		b := chatBody("lm-4-scout-local", "slow")
		b["stream"] = true
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", b)
		evs := testkit.ParseSSE(t, string(r.Body))
		if r.Status != 200 || len(evs) == 0 || evs[len(evs)-1].Type != "gw.error" || !strings.Contains(evs[len(evs)-1].Data, "upstream_timeout") {
			t.Errorf("%s\n  want the started stream to end with gw.error upstream_timeout and no [DONE] (DECISIONS 5; spec Codes upstream_timeout)", r)
		}
	})
	t.Run("keepalive during upstream silence", func(t *testing.T) {
		t.Parallel()
		if testing.Short() {
			t.Skip("waits 16 s")
		}
		g := start(t, func(s *setup) {
			s.Local.Reply = upstreamtest.Reply{Interval: 16 * time.Second, Events: []string{
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"a"},"finish_reason":null}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}`,
			}}
		})
		b := chatBody("lm-4-scout-local", "slow")
		b["stream"] = true
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", b)
		if r.Status != 200 || !bytes.Contains(r.Body, []byte("\n:")) && !bytes.HasPrefix(r.Body, []byte(":")) {
			t.Errorf("a 16 s upstream silence produced no SSE comment keepalive (issue 3 item 3: every 15 s): %s", truncate(string(r.Body), 400))
		}
		if evs := testkit.ParseSSE(t, string(r.Body)); len(evs) == 0 || evs[len(evs)-1].Data != "[DONE]" {
			t.Errorf("slow stream did not complete")
		}
	})
}

// TestBackendAPIKeys: GATEWAY_LOCAL_API_KEY and GATEWAY_ROUTER_API_KEY are sent
// as bearer tokens and scrubbed from upstream error messages (docs/decisions.md,
// gatewayd variables beyond DECISIONS).
func TestBackendAPIKeys(t *testing.T) {
	t.Parallel()
	const ref = "docs/decisions.md: GATEWAY_LOCAL_API_KEY and GATEWAY_ROUTER_API_KEY"
	t.Run("local", func(t *testing.T) {
		t.Parallel()
		const key = "sk-local-secret-key"
		g := start(t, func(s *setup) {
			s.Env["GATEWAY_LOCAL_API_KEY"] = key
			s.Local.Script = []upstreamtest.Reply{{}, {Status: 400, ErrorMessage: "bad key " + key + " given"}}
		})
		wantStatus(t, g.post(t, "/v1/chat/completions", tokAdmin, "", chatBody("lm-4-scout-local", "hi")), 200, ref)
		calls := g.Local.Calls()
		if len(calls) == 0 || calls[len(calls)-1].Header.Get("Authorization") != "Bearer "+key {
			t.Errorf("local backend Authorization %v, want Bearer <GATEWAY_LOCAL_API_KEY> (%s)", calls, ref)
		}
		r := g.post(t, "/v1/chat/completions", tokAdmin, "", chatBody("lm-4-scout-local", "hi"))
		if wantErr(t, r, 400, "invalid_request_error", "upstream_bad_request", anyParam, "DECISIONS 8.13") && strings.Contains(string(r.Body), key) {
			t.Errorf("error body leaks the local API key: %s (%s: scrubbed from upstream error messages)", r.Body, ref)
		}
	})
	t.Run("router", func(t *testing.T) {
		t.Parallel()
		const key = "sk-router-secret-key"
		router := upstreamtest.New(t)
		g := start(t, func(s *setup) {
			s.Env["GATEWAY_ROUTER_URL"] = router.URL
			s.Env["GATEWAY_ROUTER_API_KEY"] = key
		})
		wantStatus(t, g.post(t, "/v1/chat/completions", tokAdmin, "", chatBody("lm-4-scout-local", "hi")), 200, ref)
		var auth string
		for _, c := range router.Calls() {
			if strings.HasSuffix(c.Path, "/chat/completions") {
				auth = c.Header.Get("Authorization")
			}
		}
		if auth != "Bearer "+key {
			t.Errorf("router Authorization %q, want Bearer <GATEWAY_ROUTER_API_KEY> (%s)", auth, ref)
		}
	})
}

// TestFallbackOtherKinds: embeddings and audio follow their alias's chain like
// chat (DECISIONS 4) and say so in GW-Notice (DECISIONS 5: backend_fallback).
func TestFallbackOtherKinds(t *testing.T) {
	t.Parallel()
	g := start(t, func(s *setup) { s.LocalURL = refused(t) })
	const ref = "DECISIONS 4: the next backend of the chain on connection failure; DECISIONS 5: GW-Notice backend_fallback"
	r := g.post(t, "/v1/embeddings", tokMember, "", map[string]any{"model": "lm-embed", "input": "x"})
	if wantStatus(t, r, 200, ref) && (!strings.Contains(r.Header.Get("GW-Notice"), "backend_fallback") || callsOn(g, "/embeddings") != 1 || lastBody(t, g.CloudA, "/embeddings")["model"] != "lm-embed-text-v1.5") {
		t.Errorf("%s\n  GW-Notice %q: want an answer from cloudA (router_alias lm-embed-text-v1.5) with backend_fallback (%s)", r, r.Header.Get("GW-Notice"), ref)
	}
	body, ct := multipartBody(t, map[string]string{"model": "lm-transcribe"})
	r = g.do(t, "POST", "/v1/audio/transcriptions", tokGlobex, "", body, H{"Content-Type": ct})
	if wantStatus(t, r, 200, ref) && !strings.Contains(r.Header.Get("GW-Notice"), "backend_fallback") {
		t.Errorf("%s\n  GW-Notice %q, want backend_fallback (%s)", r, r.Header.Get("GW-Notice"), ref)
	}
}
